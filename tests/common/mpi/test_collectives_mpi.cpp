// common/mpi/collectives.h under mpirun -np 2: gathers, allgathers and broadcasts of uneven,
// empty and binary contributions arrive whole and in rank order, also when tiny chunks
// split every transfer into many MPI calls.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "common/mpi/collectives.h"
#include "common/base/error.h"
#include "tests/mpi_test_util.h"

using namespace tpuperf;

namespace {

// Rank r's contribution: n bytes of every value 0..255 (NULs included), seeded by r.
std::string contribution(int r, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + r * 31) & 0xFF);
  return s;
}

// Uneven sizes per rank, including empty ones, for a few layouts of the world.
std::vector<std::vector<size_t>> size_cases(int ranks) {
  std::vector<std::vector<size_t>> cases;
  for (const std::vector<size_t>& base :
       {std::vector<size_t>{0, 0}, {0, 5}, {5, 0}, {1, 1000}, {4099, 17}, {100000, 3}})
    cases.push_back(std::vector<size_t>(base.begin(), base.end()));
  for (auto& c : cases) c.resize(static_cast<size_t>(ranks), 11);
  return cases;
}

void expect_all(const RankBytes& got, const std::vector<size_t>& sizes) {
  ASSERT_EQ(got.ranks(), static_cast<int>(sizes.size()));
  for (int r = 0; r < got.ranks(); ++r)
    EXPECT_EQ(got.of(r), contribution(r, sizes[static_cast<size_t>(r)])) << "rank " << r;
}

}  // namespace

TEST(Collectives, GatherToEachRootWithAnyChunk) {
  const int rank = world_rank(), size = world_size();
  for (const auto& sizes : size_cases(size))
    for (int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{4096}, kMpiChunkBytes})
      for (int root = 0; root < size; ++root) {
        const RankBytes got = gather_bytes(contribution(rank, sizes[rank]), root, MPI_COMM_WORLD, chunk);
        if (rank == root)
          expect_all(got, sizes);
        else
          EXPECT_TRUE(got.bytes.empty() && got.offsets.empty());
      }
}

TEST(Collectives, AllgatherGivesEveryRankEverything) {
  const int rank = world_rank(), size = world_size();
  for (const auto& sizes : size_cases(size))
    for (int64_t chunk : {int64_t{1}, int64_t{5}, kMpiChunkBytes})
      expect_all(allgather_bytes(contribution(rank, sizes[rank]), MPI_COMM_WORLD, chunk), sizes);
}

TEST(Collectives, BroadcastFromEachRoot) {
  const int rank = world_rank(), size = world_size();
  for (size_t n : {size_t{0}, size_t{1}, size_t{777}, size_t{65537}})
    for (int64_t chunk : {int64_t{1}, int64_t{64}, kMpiChunkBytes})
      for (int root = 0; root < size; ++root) {
        std::string bytes = rank == root ? contribution(root, n) : std::string("stale bytes");
        broadcast_bytes(bytes, root, MPI_COMM_WORLD, chunk);
        EXPECT_EQ(bytes, contribution(root, n));
        std::string buffer = rank == root ? contribution(root, n) : std::string(n, 'x');
        broadcast_bytes(buffer.data(), static_cast<int64_t>(n), root, MPI_COMM_WORLD, chunk);
        EXPECT_EQ(buffer, contribution(root, n));
      }
}

TEST(Collectives, ChunksOutsideMpiCountsAreErrors) {
  std::string s = "x";
  EXPECT_THROW(gather_bytes(s, 0, MPI_COMM_WORLD, 0), Error);
  EXPECT_THROW(allgather_bytes(s, MPI_COMM_WORLD, int64_t{1} << 31), Error);
  EXPECT_THROW(broadcast_bytes(s, 0, MPI_COMM_WORLD, -1), Error);
}

int main(int argc, char** argv) { return run_mpi_tests(argc, argv); }
