// Averages a module's gradients across a fold group, once per optimizer step: every
// trainable parameter's gradient packed into one flat buffer per dtype (built once,
// reused every step), one all-reduce (sum) per buffer, divided by the group size, copied
// back. An undefined gradient counts as zeros and is defined afterwards, so every rank
// applies the same step.
//
// Stall detection: a rank that waits longer than the stall timeout for the others names
// the late ranks and stops the job (by default: throws Error, which tpuperf's tools turn
// into a log line with the rank and MPI_Abort of the whole job), instead of waiting
// forever for a rank that hangs. To tell who is late, each rank announces its arrival at
// every reduction to its peers with a small point-to-point message before it starts the
// non-blocking all-reduce; at the timeout, peers whose announcement has not arrived are
// the late ones.
#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tpuperf {

class GradientReducer {
 public:
  // Called once per reduction that exceeds the timeout, with the message naming the late
  // ranks. Return true to keep waiting (without a further timeout), or throw.
  using StallHandler = std::function<bool(const std::string& message)>;

  // The module's parameters must not change while the reducer lives. stall_timeout_s 0:
  // no detection (a plain blocking all-reduce). on_stall empty: throw Error(message).
  GradientReducer(torch::nn::Module& module, MPI_Comm comm, double stall_timeout_s = 0, StallHandler on_stall = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Collective over the group; a no-op on a group of one.
  void allreduce();
  int64_t reductions() const { return reductions_; }

 private:
  struct Bucket {
    std::vector<torch::Tensor> params;
    torch::Tensor flat;
  };
  void wait_watched(std::vector<MPI_Request>& requests);
  std::string late_ranks_message(double waited_s) const;
  int world_rank_of(int group_rank) const;

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  double stall_timeout_s_;
  StallHandler on_stall_;
  std::vector<Bucket> buckets_;  // one per dtype, in parameter order
  int64_t reductions_ = 0;
};

}  // namespace tpuperf
