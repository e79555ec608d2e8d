// The file dealer of tpuperf-preprocess: every index is dealt exactly once over the
// ranks, each rank's in increasing order, and a rank that is slow gets fewer.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <thread>
#include <vector>

#include "pipeline/preprocess/file_dealer.h"
#include "tests/mpi_test_util.h"

using namespace tpuperf;

namespace {

// Every rank's drawn indices, gathered on every rank.
std::vector<std::vector<int64_t>> all_drawn(const std::vector<int64_t>& mine) {
  const int size = world_size();
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(size), offsets(size, 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < size; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<int64_t> flat(offsets[size - 1] + counts[size - 1]);
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, flat.data(), counts.data(), offsets.data(), MPI_INT64_T,
                 MPI_COMM_WORLD);
  std::vector<std::vector<int64_t>> out(size);
  for (int r = 0; r < size; ++r) out[r].assign(flat.begin() + offsets[r], flat.begin() + offsets[r] + counts[r]);
  return out;
}

std::vector<int64_t> draw_all(int64_t count, std::chrono::milliseconds per_item) {
  FileDealer dealer(count, MPI_COMM_WORLD);
  std::vector<int64_t> mine;
  for (int64_t k = dealer.next(); k >= 0; k = dealer.next()) {
    mine.push_back(k);
    std::this_thread::sleep_for(per_item);
  }
  EXPECT_EQ(dealer.next(), -1);  // stays dealt out
  dealer.close();
  return mine;
}

}  // namespace

TEST(FileDealerMpi, DealsEveryIndexOnceInOrder) {
  const int64_t count = 57;
  const auto drawn = all_drawn(draw_all(count, std::chrono::milliseconds(1)));
  std::vector<int> seen(count, 0);
  for (const auto& mine : drawn)
    for (size_t i = 0; i < mine.size(); ++i) {
      ASSERT_GE(mine[i], 0);
      ASSERT_LT(mine[i], count);
      ++seen[static_cast<size_t>(mine[i])];
      if (i > 0) {
        EXPECT_LT(mine[i - 1], mine[i]);
      }
    }
  for (int64_t k = 0; k < count; ++k) EXPECT_EQ(seen[static_cast<size_t>(k)], 1) << "index " << k;
}

TEST(FileDealerMpi, ASlowRankGetsFewer) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Rank 0 takes 20 ms per item, the others 1 ms: the others take most of the items.
  const auto per_item = std::chrono::milliseconds(world_rank() == 0 ? 20 : 1);
  const auto drawn = all_drawn(draw_all(40, per_item));
  EXPECT_LT(drawn[0].size(), drawn[1].size());
}

TEST(FileDealerMpi, NothingToDeal) {
  FileDealer dealer(0, MPI_COMM_WORLD);
  EXPECT_EQ(dealer.next(), -1);
}

TEST(LargestFirst, OrdersBySizeThenIndex) {
  EXPECT_EQ(largest_first({3, 9, 3, 1, 9}), (std::vector<size_t>{1, 4, 0, 2, 3}));
  EXPECT_TRUE(largest_first({}).empty());
}

int main(int argc, char** argv) { return run_mpi_tests(argc, argv); }
