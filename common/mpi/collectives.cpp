#include "common/mpi/collectives.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <utility>

#include "common/base/error.h"
#include "common/mpi/mpi_env.h"

namespace tpuperf {

namespace {

// Point-to-point messages of gather_bytes use their own tag, apart from any other
// traffic on the communicator.
constexpr int kGatherTag = 0x7470;  // "tp"

void check_chunk(int64_t chunk_bytes, const char* what) {
  if (chunk_bytes < 1 || chunk_bytes > INT_MAX)
    throw Error(std::string(what) + ": chunk of " + std::to_string(chunk_bytes) +
                " bytes is outside [1, INT_MAX]");
}

// Offsets of contributions of the given sizes; throws when their total cannot be held.
std::vector<int64_t> offsets_of(const std::vector<int64_t>& sizes, const char* what) {
  const int64_t limit = static_cast<int64_t>(
      std::min<uint64_t>(std::string().max_size(), std::numeric_limits<int64_t>::max()));
  std::vector<int64_t> offsets{0};
  for (int64_t s : sizes) {
    if (s < 0 || s > limit - offsets.back())
      throw Error(std::string(what) + ": the ranks' contributions total more than the " +
                  std::to_string(limit) + " bytes one process can address");
    offsets.push_back(offsets.back() + s);
  }
  return offsets;
}

int piece(int64_t remaining, int64_t chunk_bytes) {
  return static_cast<int>(std::min(remaining, chunk_bytes));
}

void send_bytes(const char* data, int64_t n, int to, MPI_Comm comm, int64_t chunk_bytes) {
  for (int64_t at = 0; at < n; at += chunk_bytes)
    check_mpi(MPI_Send(data + at, piece(n - at, chunk_bytes), MPI_BYTE, to, kGatherTag, comm), "MPI_Send");
}

void receive_bytes(char* data, int64_t n, int from, MPI_Comm comm, int64_t chunk_bytes) {
  for (int64_t at = 0; at < n; at += chunk_bytes)
    check_mpi(MPI_Recv(data + at, piece(n - at, chunk_bytes), MPI_BYTE, from, kGatherTag, comm,
                       MPI_STATUS_IGNORE),
              "MPI_Recv");
}

}  // namespace

std::string_view RankBytes::of(int rank) const {
  return std::string_view(bytes).substr(static_cast<size_t>(offsets.at(rank)),
                                        static_cast<size_t>(offsets.at(rank + 1) - offsets.at(rank)));
}

// MPI_Gatherv's displacements are int, so a total beyond 2 GiB cannot be gathered with it:
// the root receives each rank's bytes with point-to-point messages of at most one chunk.
RankBytes gather_bytes(std::string_view mine, int root, MPI_Comm comm, int64_t chunk_bytes) {
  check_chunk(chunk_bytes, "gather_bytes");
  const int rank = mpi_rank(comm), size = mpi_size(comm);
  const int64_t n = static_cast<int64_t>(mine.size());
  // Every rank learns the sizes, so that a total the root cannot hold fails on all ranks
  // alike instead of leaving the others waiting in a send.
  std::vector<int64_t> sizes(size);
  check_mpi(MPI_Allgather(&n, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, comm), "MPI_Allgather");
  std::vector<int64_t> offsets = offsets_of(sizes, "gather_bytes");
  RankBytes out;
  if (rank != root) {
    send_bytes(mine.data(), n, root, comm, chunk_bytes);
    return out;
  }
  out.offsets = std::move(offsets);
  out.bytes.resize(static_cast<size_t>(out.offsets.back()));
  for (int r = 0; r < size; ++r) {
    char* at = out.bytes.data() + out.offsets[r];
    if (r == root)
      std::copy(mine.begin(), mine.end(), at);
    else
      receive_bytes(at, sizes[r], r, comm, chunk_bytes);
  }
  return out;
}

// Gathered on rank 0, then broadcast: both steps go in chunks.
RankBytes allgather_bytes(std::string_view mine, MPI_Comm comm, int64_t chunk_bytes) {
  check_chunk(chunk_bytes, "allgather_bytes");
  const int64_t n = static_cast<int64_t>(mine.size());
  std::vector<int64_t> sizes(mpi_size(comm));
  check_mpi(MPI_Allgather(&n, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, comm), "MPI_Allgather");
  const std::vector<int64_t> offsets = offsets_of(sizes, "allgather_bytes");
  RankBytes out = gather_bytes(mine, 0, comm, chunk_bytes);
  out.offsets = offsets;
  out.bytes.resize(static_cast<size_t>(offsets.back()));
  broadcast_bytes(out.bytes.data(), offsets.back(), 0, comm, chunk_bytes);
  return out;
}

void broadcast_bytes(std::string& bytes, int root, MPI_Comm comm, int64_t chunk_bytes) {
  check_chunk(chunk_bytes, "broadcast_bytes");
  int64_t n = static_cast<int64_t>(bytes.size());
  check_mpi(MPI_Bcast(&n, 1, MPI_INT64_T, root, comm), "MPI_Bcast");
  if (mpi_rank(comm) != root) {
    offsets_of({n}, "broadcast_bytes");
    bytes.resize(static_cast<size_t>(n));
  }
  broadcast_bytes(bytes.data(), n, root, comm, chunk_bytes);
}

void broadcast_bytes(char* data, int64_t n, int root, MPI_Comm comm, int64_t chunk_bytes) {
  check_chunk(chunk_bytes, "broadcast_bytes");
  for (int64_t at = 0; at < n; at += chunk_bytes)
    check_mpi(MPI_Bcast(data + at, piece(n - at, chunk_bytes), MPI_BYTE, root, comm), "MPI_Bcast");
}

}  // namespace tpuperf
