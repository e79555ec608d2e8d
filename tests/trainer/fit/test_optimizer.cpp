// FusedAdamW against LibTorch's AdamW (and clip_grad_norm_): the same parameters and
// optimizer state after several steps, with weight decay, a changing learning rate and
// clipping that does and does not bind; and its state loads into a plain AdamW.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <vector>

#include "trainer/fit/optimizer.h"

namespace tpuperf {
namespace {

std::vector<torch::Tensor> make_params() {
  torch::manual_seed(3);
  return {torch::randn({5, 7}).requires_grad_(), torch::randn({7}).requires_grad_(),
          torch::randn({3, 2}).requires_grad_()};
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

void set_grads(std::vector<torch::Tensor>& ps, int step, double scale) {
  torch::manual_seed(100 + step);
  for (auto& p : ps) p.mutable_grad() = scale * torch::randn(p.sizes());
}

void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

void expect_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-7))
        << what << " " << i << ": max abs diff " << (a[i] - b[i]).abs().max().item<double>();
}

std::vector<torch::Tensor> moments(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& ps, bool second) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) {
    auto& st = static_cast<torch::optim::AdamWParamState&>(*opt.state().at(c10::guts::to_string(p.unsafeGetTensorImpl())));
    out.push_back(second ? st.exp_avg_sq() : st.exp_avg());
  }
  return out;
}

// max_norm 0: no clipping; grad_scale sets whether a given max_norm binds.
void run_against_libtorch(double max_norm, double grad_scale) {
  auto ref = make_params();
  auto fused = copies(ref);
  const auto options = torch::optim::AdamWOptions(0.01).weight_decay(0.05);
  torch::optim::AdamW ref_opt(ref, options);
  FusedAdamW fused_opt(fused, options);
  for (int step = 0; step < 6; ++step) {
    set_grads(ref, step, grad_scale);
    set_grads(fused, step, grad_scale);
    const double lr = 0.01 * (1 + step);
    set_lr(ref_opt, lr);
    set_lr(fused_opt, lr);
    double ref_norm = 0;
    if (max_norm > 0) ref_norm = torch::nn::utils::clip_grad_norm_(ref, max_norm);
    ref_opt.step();
    const double norm = fused_opt.clip_and_step(max_norm);
    if (max_norm > 0) {
      EXPECT_NEAR(norm, ref_norm, 1e-5 * ref_norm);
    }
  }
  expect_close(fused, ref, "parameter");
  expect_close(moments(fused_opt, fused, false), moments(ref_opt, ref, false), "exp_avg");
  expect_close(moments(fused_opt, fused, true), moments(ref_opt, ref, true), "exp_avg_sq");
}

TEST(FusedAdamW, MatchesAdamW) { run_against_libtorch(0, 1.0); }

// A parameter without a gradient, a second group with other options, a parameter long
// enough for LibTorch's vector kernels (32 x 96): all as in AdamW.
TEST(FusedAdamW, MatchesAdamWWithGroupsAndParametersWithoutGradients) {
  auto ref = make_params();
  ref.push_back(torch::randn({32, 96}).requires_grad_());
  auto fused = copies(ref);
  auto ref_idle = torch::randn({4}).requires_grad_(), fused_idle = ref_idle.detach().clone().requires_grad_();
  const auto options = torch::optim::AdamWOptions(0.01).weight_decay(0.05);
  const auto other = torch::optim::AdamWOptions(0.03).weight_decay(0.2).betas({0.8, 0.99}).eps(1e-6);
  torch::optim::AdamW ref_opt({ref[0], ref[1], ref[3], ref_idle}, options);
  FusedAdamW fused_opt({fused[0], fused[1], fused[3], fused_idle}, options);
  ref_opt.add_param_group(torch::optim::OptimizerParamGroup({ref[2]}, std::make_unique<torch::optim::AdamWOptions>(other)));
  fused_opt.add_param_group(torch::optim::OptimizerParamGroup({fused[2]}, std::make_unique<torch::optim::AdamWOptions>(other)));
  for (int step = 0; step < 6; ++step) {
    set_grads(ref, step, 1.0);
    set_grads(fused, step, 1.0);
    ref_opt.step();
    fused_opt.step();
  }
  expect_close(fused, ref, "parameter");
  EXPECT_TRUE(torch::equal(fused_idle, ref_idle)) << "a parameter without a gradient moved";
  EXPECT_EQ(fused_opt.state().count(c10::guts::to_string(fused_idle.unsafeGetTensorImpl())), 0u);
}

// Double parameters take AdamW's own step and clip_grad_norm_.
TEST(FusedAdamW, FallsBackToAdamWForDoubleParameters) {
  torch::manual_seed(5);
  auto ref = std::vector<torch::Tensor>{torch::randn({6, 3}, torch::kFloat64).requires_grad_()};
  auto fused = copies(ref);
  torch::optim::AdamW ref_opt(ref, torch::optim::AdamWOptions(0.01));
  FusedAdamW fused_opt(fused, torch::optim::AdamWOptions(0.01));
  for (int step = 0; step < 3; ++step) {
    ref[0].mutable_grad() = 10 * torch::ones({6, 3}, torch::kFloat64) * (step + 1);
    fused[0].mutable_grad() = ref[0].grad().clone();
    const double ref_norm = torch::nn::utils::clip_grad_norm_(ref, 0.5);
    ref_opt.step();
    EXPECT_DOUBLE_EQ(fused_opt.clip_and_step(0.5), ref_norm);
  }
  EXPECT_TRUE(torch::equal(fused[0], ref[0]));
}

TEST(FusedAdamW, ClipsLikeClipGradNormWhenTheNormExceedsTheLimit) { run_against_libtorch(0.5, 10.0); }

TEST(FusedAdamW, LeavesGradientsUnderTheLimitAsTheyAre) { run_against_libtorch(1000.0, 1.0); }

// A checkpoint of FusedAdamW's state continues in a plain AdamW exactly as in FusedAdamW.
TEST(FusedAdamW, StateLoadsIntoAdamW) {
  auto a = make_params();
  FusedAdamW fused_opt(a, torch::optim::AdamWOptions(0.02));
  for (int step = 0; step < 3; ++step) {
    set_grads(a, step, 1.0);
    fused_opt.step();
  }
  std::stringstream saved;
  torch::save(fused_opt, saved);
  auto b = copies(a);
  torch::optim::AdamW plain(b, torch::optim::AdamWOptions(0.02));
  torch::load(plain, saved);
  set_grads(a, 3, 1.0);
  set_grads(b, 3, 1.0);
  fused_opt.step();
  plain.step();
  expect_close(a, b, "parameter after resuming");
}

}  // namespace
}  // namespace tpuperf
