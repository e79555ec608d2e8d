// Data-parallel training over plain MPI (Debian's LibTorch has no MPI process group).
//
// The world is split into fold groups: rank r joins group r % groups, groups = min(R, k),
// and group g trains folds g, g + groups, ... one after the other. Inside a group every
// rank holds the same model; parameters start identical (broadcast from the group's rank 0,
// then verified) and stay identical because every rank applies the same averaged gradient
// (GradientReducer: one flat buffer, one all-reduce per step). The group leaders (group rank 0) share a
// second communicator for gathering predictions.
//
// Every function here is collective over its communicator and a no-op on a group of one.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace torch {
namespace nn {
class Module;
}  // namespace nn
}  // namespace torch

namespace tpuperf {

// Owns its communicators (freed on destruction, unless MPI is finalized already): keep it
// alive while training and destroy it before MPI_Finalize. Move-only.
struct FoldLayout {
  int k = 1;            // folds
  int groups = 1;       // min(world size, k)
  int group = 0;        // this rank's group
  MPI_Comm group_comm = MPI_COMM_NULL;
  int group_rank = 0, group_size = 1;
  // The group leaders, ranked by group; MPI_COMM_NULL on the other ranks.
  MPI_Comm leaders_comm = MPI_COMM_NULL;

  bool is_leader() const { return group_rank == 0; }
  // Folds group g trains, in order: g, g + groups, ... < k.
  std::vector<int> folds_of_group(int g) const;
  std::vector<int> my_folds() const { return folds_of_group(group); }

  FoldLayout() = default;
  ~FoldLayout();
  FoldLayout(FoldLayout&& other) noexcept;
  FoldLayout& operator=(FoldLayout&& other) noexcept;
  FoldLayout(const FoldLayout&) = delete;
  FoldLayout& operator=(const FoldLayout&) = delete;
};

// Collective over world. Throws Error when k < 1.
FoldLayout make_fold_layout(MPI_Comm world, int k);

// Copies group rank 0's parameters and buffers into every rank's module (one broadcast of
// all their bytes). Modules must have the same structure on every rank.
void broadcast_parameters(torch::nn::Module& module, MPI_Comm comm);

// Throws Error on every rank, naming the ranks that differ from rank 0, when the number
// of parameters, their element counts (all and trainable) or their bits (a hash of all
// parameter and buffer bytes) differ across the group. The message also gives each rank's
// float64 sum. Run it before training: GradientReducer relies on the same structure.
void verify_parameters(torch::nn::Module& module, MPI_Comm comm);

// Element-wise sums of a few doubles (loss sums, counts) across the group, in place.
void allreduce_doubles(std::vector<double>& values, MPI_Comm comm);
double allreduce_double(double value, MPI_Comm comm);

}  // namespace tpuperf
