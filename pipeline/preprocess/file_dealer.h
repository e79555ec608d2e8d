// Deals a run's files to the ranks as they become free, largest first. A static split
// balances only what it can predict; a rank's time per file is not that: the first file
// pays for faulting in the rank's memory, and on a shared machine a rank may get less of
// its core than the other. A rank that is free takes the next file; the ranks end within
// about one small file of each other.
//
// The deal is a shared counter in an MPI window on rank 0 (one-sided fetch-and-add, which
// Open MPI runs as an atomic in shared memory when the ranks share a node; across nodes
// it may wait until rank 0 next calls MPI, at its next file). Which rank gets which file
// varies from run to run; what each file becomes does not.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace tpuperf {

// Item indices ordered by size, largest first, ties by index.
std::vector<size_t> largest_first(const std::vector<int64_t>& sizes);

class FileDealer {
 public:
  // Collective over comm: deals the indices 0..count-1 in order.
  FileDealer(int64_t count, MPI_Comm comm);
  // Collective: waits for every rank to have drawn its last, then frees the window.
  void close();
  ~FileDealer();  // close() if not done (an exception unwinding: MPI aborts the run anyway)
  FileDealer(const FileDealer&) = delete;
  FileDealer& operator=(const FileDealer&) = delete;

  // The next undealt index, or -1 once all are dealt.
  int64_t next();

 private:
  int64_t count_;
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace tpuperf
