// WeightAverage: the average follows its recurrence (checked against the same sums in
// double precision, one scalar at a time), the decay ramps up and caps, the scope puts the
// average into the model and gives the training weights back bit for bit (also when the
// scope ends by an exception), decay 0 changes nothing, and a checkpoint's average and
// training weights resume the same sequence.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <vector>

#include "common/base/error.h"
#include "trainer/train/weight_average.h"

namespace tpuperf {
namespace {

struct TwoParams : torch::nn::Module {
  TwoParams() {
    torch::manual_seed(5);
    a = register_parameter("a", torch::randn({3, 4}));
    b = register_parameter("b", torch::randn({2}));
  }
  torch::Tensor a, b;
};

// A training step stand-in: every parameter moves to a new seeded value.
void move(TwoParams& m, int step) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(1000 + step);
  for (auto& p : m.parameters()) p.add_(torch::randn(p.sizes()));
}

std::vector<torch::Tensor> snapshot(torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  return out;
}

bool equal(const std::vector<torch::Tensor>& x, const std::vector<torch::Tensor>& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!torch::equal(x[i], y[i])) return false;
  return true;
}

TEST(WeightAverage, DecayRampsUpThenCaps) {
  TwoParams m;
  WeightAverage avg(m, 0.95);
  EXPECT_DOUBLE_EQ(avg.decay_at(0), 0.1);          // (1 + 0) / (10 + 0)
  EXPECT_DOUBLE_EQ(avg.decay_at(8), 0.5);          // 9 / 18
  EXPECT_DOUBLE_EQ(avg.decay_at(170), 0.95);       // 171 / 180 = 0.95 exactly
  EXPECT_DOUBLE_EQ(avg.decay_at(100000), 0.95);    // capped
  EXPECT_DOUBLE_EQ(avg.decay_at(80), 81.0 / 90.0);  // below the cap
}

TEST(WeightAverage, FollowsTheRecurrenceInDouble) {
  TwoParams m;
  const double decay = 0.6;
  WeightAverage avg(m, decay);
  // Independent reference: each scalar's average in double, from the same weights.
  std::vector<double> ref;
  for (const auto& p : m.parameters())
    for (int64_t k = 0; k < p.numel(); ++k) ref.push_back(p.reshape(-1)[k].item<double>());
  for (int t = 0; t < 25; ++t) {
    move(m, t);
    avg.update(t);
    const double d = std::min(decay, (1.0 + t) / (10.0 + t));
    size_t j = 0;
    for (const auto& p : m.parameters())
      for (int64_t k = 0; k < p.numel(); ++k, ++j) ref[j] = d * ref[j] + (1 - d) * p.reshape(-1)[k].item<double>();
  }
  size_t j = 0;
  for (const auto& a : avg.average())
    for (int64_t k = 0; k < a.numel(); ++k, ++j) EXPECT_NEAR(a.reshape(-1)[k].item<double>(), ref[j], 1e-5) << j;
  EXPECT_EQ(j, ref.size());
}

TEST(WeightAverage, ScopeSwapsInTheAverageAndBackExactly) {
  TwoParams m;
  WeightAverage avg(m, 0.9);
  for (int t = 0; t < 5; ++t) {
    move(m, t);
    avg.update(t);
  }
  const auto training = snapshot(m);
  ASSERT_FALSE(equal(training, avg.average()));
  {
    WeightAverage::Scope scope(avg);
    EXPECT_TRUE(equal(snapshot(m), avg.average()));
    EXPECT_TRUE(equal(scope.training_weights(), training));
  }
  EXPECT_TRUE(equal(snapshot(m), training));
  try {
    WeightAverage::Scope scope(avg);
    throw std::runtime_error("evaluation failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(equal(snapshot(m), training)) << "an exception inside the scope lost the training weights";
}

TEST(WeightAverage, DecayZeroIsOff) {
  TwoParams m;
  WeightAverage avg(m, 0.0);
  EXPECT_FALSE(avg.enabled());
  move(m, 0);
  avg.update(0);
  const auto training = snapshot(m);
  WeightAverage::Scope scope(avg);
  EXPECT_TRUE(equal(snapshot(m), training));
  EXPECT_TRUE(scope.training_weights().empty());
  EXPECT_THROW(avg.set_average(training), Error);
}

TEST(WeightAverage, ResumeContinuesTheSameSequence) {
  TwoParams a, b;
  WeightAverage avg_a(a, 0.8), avg_b(b, 0.8);
  for (int t = 0; t < 4; ++t) {
    move(a, t);
    avg_a.update(t);
  }
  // b continues from a's state as a resumed run does from a checkpoint: the model holds
  // the average, the training weights come beside it.
  {
    torch::NoGradGuard no_grad;
    auto pb = b.parameters();
    for (size_t i = 0; i < pb.size(); ++i) pb[i].copy_(avg_a.average()[i]);
  }
  avg_b.resume(snapshot(a));
  EXPECT_TRUE(equal(avg_b.average(), avg_a.average()));
  EXPECT_TRUE(equal(snapshot(b), snapshot(a)));
  for (int t = 4; t < 8; ++t) {
    move(a, t);
    avg_a.update(t);
    move(b, t);
    avg_b.update(t);
  }
  EXPECT_TRUE(equal(avg_a.average(), avg_b.average()));
  std::vector<torch::Tensor> wrong = {torch::zeros({3, 4})};
  EXPECT_THROW(avg_b.set_average(wrong), Error);
  wrong.push_back(torch::zeros({3}));
  EXPECT_THROW(avg_b.set_average(wrong), Error);
  EXPECT_THROW(avg_b.resume({torch::zeros({3, 4})}), Error);
}

}  // namespace
}  // namespace tpuperf
