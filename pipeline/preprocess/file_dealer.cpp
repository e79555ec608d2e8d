#include "pipeline/preprocess/file_dealer.h"

#include <algorithm>
#include <numeric>

#include "common/mpi/mpi_env.h"

namespace tpuperf {

std::vector<size_t> largest_first(const std::vector<int64_t>& sizes) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  return order;
}

FileDealer::FileDealer(int64_t count, MPI_Comm comm) : count_(count) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  int64_t* counter = nullptr;
  const MPI_Aint bytes = rank == 0 ? static_cast<MPI_Aint>(sizeof(int64_t)) : 0;
  check_mpi(MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, comm, &counter, &win_),
            "MPI_Win_allocate");
  if (rank == 0) *counter = 0;
  // The counter is set before any rank draws from it.
  check_mpi(MPI_Barrier(comm), "MPI_Barrier");
  check_mpi(MPI_Win_lock_all(0, win_), "MPI_Win_lock_all");
}

void FileDealer::close() {
  if (win_ == MPI_WIN_NULL) return;
  check_mpi(MPI_Win_unlock_all(win_), "MPI_Win_unlock_all");
  check_mpi(MPI_Win_free(&win_), "MPI_Win_free");
}

FileDealer::~FileDealer() {
  if (win_ == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
}

int64_t FileDealer::next() {
  const int64_t one = 1;
  int64_t drawn = 0;
  check_mpi(MPI_Fetch_and_op(&one, &drawn, MPI_INT64_T, 0, 0, MPI_SUM, win_), "MPI_Fetch_and_op");
  check_mpi(MPI_Win_flush(0, win_), "MPI_Win_flush");
  return drawn < count_ ? drawn : -1;
}

}  // namespace tpuperf
