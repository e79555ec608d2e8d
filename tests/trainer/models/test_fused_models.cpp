// model.fused=false, the plain LibTorch definition of every model, against the fused CPU
// kernels: the same scores, loss and parameter gradients up to float rounding, in training
// mode with dropout (both paths draw the same counter-based masks), for every registered
// architecture, in float64 (tight) and float32 at the widths of the kernels' vector paths
// (32, the bench models', and 64, the schema's default).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>
#include <vector>

#include "tests/trainer/models/model_test_util.h"
#include "trainer/losses/registry.h"
#include "trainer/models/batch.h"

namespace tpuperf {
namespace {

constexpr int64_t kFeat = 5;

struct Run {
  torch::Tensor scores, loss;
  std::vector<torch::Tensor> grads;
};

Run run(RankingModel& model, const Batch& batch) {
  model.zero_grad();
  torch::manual_seed(17);  // the same dropout seeds on both paths
  Run r;
  r.scores = model.forward(batch);
  LossOptions lo;
  r.loss = ranking_loss(lo, r.scores, batch.target, batch.config_mask);
  r.loss.backward();
  for (const auto& p : model.parameters()) r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return r;
}

void expect_same(const ModelArch& arch, torch::ScalarType dtype, int64_t hidden, double rtol, double atol) {
  SCOPED_TRACE(arch.name + (dtype == torch::kFloat64 ? " float64" : " float32") + " H=" + std::to_string(hidden));
  std::mt19937_64 rng(21);
  std::vector<ProcessedGraph> graphs;
  for (int64_t n : {9, 1, 14}) graphs.push_back(random_graph(arch.kind, rng, n, 7, 3, kFeat));
  const Batch batch = batch_to_dtype(
      make_batch(arch.kind, {&graphs[0], &graphs[1], &graphs[2]}, {{0, 1, 2, 3, 4}, {5, 6}, {6, 2, 0}}), dtype);

  ModelOptions opts = small_options(4, 0.3);
  opts.hidden = hidden;
  torch::manual_seed(3);
  ModelPtr fused = model_of(arch, kFeat, opts);
  randomize_zero_started_layers(*fused);
  opts.fused = false;
  ModelPtr plain = model_of(arch, kFeat, opts);
  fused->to(dtype);
  plain->to(dtype);
  copy_parameters(*fused, *plain);
  const Run a = run(*fused, batch), b = run(*plain, batch);
  EXPECT_TRUE(torch::allclose(a.scores, b.scores, rtol, atol)) << (a.scores - b.scores).abs().max();
  EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), atol + rtol * std::abs(b.loss.item<double>()));
  ASSERT_EQ(a.grads.size(), b.grads.size());
  double largest = 0;
  const auto names = fused->named_parameters().keys();
  for (size_t i = 0; i < a.grads.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a.grads[i], b.grads[i], rtol, atol))
        << names[i] << ": " << (a.grads[i] - b.grads[i]).abs().max();
    largest = std::max(largest, a.grads[i].abs().max().item<double>());
  }
  EXPECT_GT(largest, 1e-3);  // real gradients were compared
}

TEST(FusedModels, UnfusedPathGivesTheSameLossAndGradientsInFloat64) {
  for (const ModelArch& arch : model_archs()) expect_same(arch, torch::kFloat64, 8, 1e-9, 1e-11);
}

TEST(FusedModels, UnfusedPathGivesTheSameLossAndGradientsInFloat32) {
  torch::set_num_threads(1);
  for (const ModelArch& arch : model_archs())
    for (int64_t hidden : {32, 64}) expect_same(arch, torch::kFloat32, hidden, 1e-4, 2e-5);
}

}  // namespace
}  // namespace tpuperf
