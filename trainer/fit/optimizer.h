// The training optimizer: AdamW with gradient-norm clipping, as one loop over each
// parameter's values instead of LibTorch's ~10 tensor ops per parameter and step (with 46
// small parameter tensors those ops cost more than the arithmetic: 0.55 ms of a ~20 ms
// tile step, repeated on every rank of a group).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace tpuperf {

// torch::optim::AdamW with the same options, per-parameter state (AdamWParamState: step,
// exp_avg, exp_avg_sq) and checkpoint format, whose update of float32 parameters is one
// fused loop (others, and amsgrad, take AdamW's own step). The same arithmetic as AdamW in
// the same order, each operation rounded on its own (optimizer.cpp): measured against
// AdamW, equal bits on most steps, else a last-bit difference in a few values.
class FusedAdamW : public torch::optim::AdamW {
 public:
  FusedAdamW(const std::vector<torch::Tensor>& params, const torch::optim::AdamWOptions& options);

  torch::Tensor step(LossClosure closure = nullptr) override;

  // Scales the gradients so that their total L2 norm is at most max_norm, as
  // torch::nn::utils::clip_grad_norm_ (coefficient max_norm / (norm + 1e-6), at most 1;
  // max_norm 0: no clipping; for float32 the norm is summed in double in one pass, so it
  // agrees with clip_grad_norm_'s to float rounding, not bit for bit), inside the update (the gradient tensors are left as they
  // are), then steps. Returns the norm before clipping (0 when max_norm is 0).
  double clip_and_step(double max_norm);

 private:
  bool fusable() const;
};

}  // namespace tpuperf
