// Ranking losses against values computed by hand from their definitions.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "common/base/error.h"
#include "common/config/config.h"
#include "trainer/losses/ranking_losses.h"
#include "trainer/losses/registry.h"

namespace tpuperf {
namespace {

torch::Tensor t2(std::vector<double> v, int64_t g, int64_t s) {
  return torch::tensor(v, torch::kFloat64).view({g, s});
}
torch::Tensor mask2(std::vector<int> v, int64_t g, int64_t s) {
  return torch::tensor(v, torch::kInt32).view({g, s}).to(torch::kBool);
}

class Losses : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

TEST_F(Losses, HingeHandComputed) {
  // One graph, targets 1 < 2 < 3, scores (0.0, 0.5, 0.2), margin 1.
  // Pairs (faster i, slower j): max(0, 1 - (s_j - s_i)):
  //   (0,1): 1 - 0.5 = 0.5; (0,2): 1 - 0.2 = 0.8; (1,2): 1 - (0.2 - 0.5) = 1.3
  // mean = 2.6 / 3.
  const auto loss = pairwise_hinge_loss(t2({0.0, 0.5, 0.2}, 1, 3), t2({1, 2, 3}, 1, 3),
                                        mask2({1, 1, 1}, 1, 3), 1.0);
  EXPECT_NEAR(loss.item<double>(), 2.6 / 3, 1e-12);
}

TEST_F(Losses, HingeSkipsTiesPaddingAndPairlessGraphs) {
  // Graph 0: targets (5, 5, 7), slot 2 padded -> only tied pair (0,1): no pairs, skipped.
  // Graph 1: targets (3, 1, 2), scores (0, 0, 1), margin 0.5:
  //   (1,0): 0.5 - (0 - 0) = 0.5; (1,2): 0.5 - (1 - 0) -> 0; (2,0): 0.5 - (0 - 1) = 1.5
  //   mean = 2 / 3. Batch mean over graphs with pairs = 2 / 3.
  const auto loss = pairwise_hinge_loss(t2({9, 9, 9, 0, 0, 1}, 2, 3), t2({5, 5, 7, 3, 1, 2}, 2, 3),
                                        mask2({1, 1, 0, 1, 1, 1}, 2, 3), 0.5);
  EXPECT_NEAR(loss.item<double>(), 2.0 / 3, 1e-12);
  // No pairs at all: zero, not NaN.
  const auto none = pairwise_hinge_loss(t2({1, 2}, 1, 2), t2({4, 4}, 1, 2), mask2({1, 1}, 1, 2), 1);
  EXPECT_EQ(none.item<double>(), 0.0);
}

// The fused hinge against its LibTorch definition, value and gradient of the scores, in
// float and double: random scores with ties in the targets, padded slots and a graph
// without pairs; and scores whose gaps sit on the margin (relu's gradient 0 there).
TEST_F(Losses, HingeMatchesItsReferenceInValueAndGradient) {
  torch::manual_seed(3);
  const auto check = [](const torch::Tensor& s, const torch::Tensor& t, const torch::Tensor& m, double margin) {
    const auto a = s.detach().clone().set_requires_grad(true), b = s.detach().clone().set_requires_grad(true);
    const auto la = pairwise_hinge_loss(a, t, m, margin), lb = pairwise_hinge_loss_reference(b, t, m, margin);
    (3 * la).backward();
    (3 * lb).backward();
    const double tol = s.scalar_type() == torch::kFloat ? 1e-6 : 1e-12;
    EXPECT_NEAR(la.item<double>(), lb.item<double>(), tol);
    EXPECT_EQ(la.scalar_type(), lb.scalar_type());
    EXPECT_TRUE(torch::allclose(a.grad(), b.grad(), tol, tol)) << (a.grad() - b.grad()).abs().max();
  };
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    const auto scores = torch::randn({5, 12}, dtype);
    auto target = torch::randint(0, 6, {5, 12}, torch::kFloat64);  // ties
    auto mask = torch::rand({5, 12}) > 0.2;
    mask[3].fill_(false);  // no real slot
    mask[3][0] = true;
    target[4].fill_(2.0);  // all tied: no pair
    check(scores, target, mask, 0.5);
    check(scores, target.to(torch::kFloat32), mask, 1.0);
    // Scores ordered like the targets, gaps of 1 and 2: at margin 1 every pair sits on or
    // beyond it (loss and gradient 0), at 1.5 the neighbours count.
    for (double margin : {1.0, 1.5})
      check(t2({0, 1, 2, 2, 1, 0}, 2, 3).to(dtype), t2({1, 2, 3, 3, 2, 1}, 2, 3), mask2({1, 1, 1, 1, 1, 1}, 2, 3),
            margin);
  }
}

TEST_F(Losses, CountsTheGraphsEachLossAveragesOver) {
  // Graph 0: only a tied pair among real slots; graph 1: distinct targets; graph 2: one
  // real slot. Hinge averages over graph 1 alone, ListMLE over all three.
  const auto target = t2({5, 5, 7, 3, 1, 2, 4, 0, 0}, 3, 3);
  const auto mask = mask2({1, 1, 0, 1, 1, 1, 1, 0, 0}, 3, 3);
  LossOptions hinge;
  hinge.name = "hinge";
  EXPECT_EQ(ranking_loss_graphs(hinge, target, mask), 1);
  EXPECT_EQ(ranking_loss_graphs(LossOptions{}, target, mask), 3);
  LossOptions gap;
  gap.name = "pairwise_gap";
  EXPECT_EQ(ranking_loss_graphs(gap, target, mask), 1);
  hinge.name = "nope";
  EXPECT_THROW(ranking_loss_graphs(hinge, target, mask), Error);
}

TEST_F(Losses, ListMLEHandComputed) {
  // Targets (2, 1, 3): true order is slots 1, 0, 2. Utilities u = -s with s = (0.5, 0, 1):
  // u in true order: (0, -0.5, -1).
  // loss = [log(e^0 + e^-0.5 + e^-1) - 0] + [log(e^-0.5 + e^-1) + 0.5] + [(-1) - (-1)]
  const double expected = std::log(1 + std::exp(-0.5) + std::exp(-1.0)) +
                          std::log(std::exp(-0.5) + std::exp(-1.0)) + 0.5;
  const auto loss =
      listmle_loss(t2({0.5, 0, 1}, 1, 3), t2({2, 1, 3}, 1, 3), mask2({1, 1, 1}, 1, 3));
  EXPECT_NEAR(loss.item<double>(), expected, 1e-12);
}

TEST_F(Losses, ListMLEIgnoresPaddingAndAveragesGraphs) {
  // Graph 0: two real slots, targets (1, 2), scores (0, 0): log 2 + 0.
  // Graph 1: real slot 1 only: 0. Padding scores are huge and must not matter.
  const auto loss = listmle_loss(t2({0, 0, 1e3, -1e3, 0, 1e3}, 2, 3), t2({1, 2, 0, 0, 4, 0}, 2, 3),
                                 mask2({1, 1, 0, 0, 1, 0}, 2, 3));
  EXPECT_NEAR(loss.item<double>(), std::log(2.0) / 2, 1e-12);
}

TEST_F(Losses, LowWhenScoresFollowRuntimes) {
  torch::manual_seed(0);
  const auto target = torch::rand({4, 16}, torch::kFloat64) * 100;
  const auto mask = torch::ones({4, 16}, torch::kBool);
  // Scores ordered like the runtimes with gaps above the margin: hinge is exactly 0.
  const auto ranks = target.argsort(/*dim=*/int64_t{1}).argsort(int64_t{1}).to(torch::kFloat64);
  EXPECT_EQ(pairwise_hinge_loss(ranks, target, mask, 0.5).item<double>(), 0.0);
  // ListMLE tends to 0 as the ordered scores spread out, and is large when reversed.
  const double good = listmle_loss(ranks * 20, target, mask).item<double>();
  const double bad = listmle_loss(-ranks * 20, target, mask).item<double>();
  EXPECT_LT(good, 1e-6);
  EXPECT_GT(bad, 100.0);
  EXPECT_GT(pairwise_hinge_loss(-ranks, target, mask, 0.5).item<double>(), 1.0);
}

double softplus(double x) { return std::log1p(std::exp(x)); }

TEST_F(Losses, PairwiseGapHandComputed) {
  // One graph, targets (1, 2, 4), scores (0, 0.5, 0.2); 3 pairs of real slots:
  //   (0 faster than 1): log 2 * softplus(0 - 0.5); (0, 2): log 4 * softplus(0 - 0.2);
  //   (1, 2): log 2 * softplus(0.5 - 0.2); the mean over the 3 pairs.
  const double expected =
      (std::log(2.0) * softplus(-0.5) + std::log(4.0) * softplus(-0.2) + std::log(2.0) * softplus(0.3)) / 3;
  const auto loss = pairwise_gap_loss(t2({0.0, 0.5, 0.2}, 1, 3), t2({1, 2, 4}, 1, 3), mask2({1, 1, 1}, 1, 3));
  EXPECT_NEAR(loss.item<double>(), expected, 1e-12);
}

TEST_F(Losses, PairwiseGapSkipsPaddingTiesAndPairlessGraphs) {
  // Graph 0: real targets (5, 5): a tie, no pair, left out of the mean. Graph 1: targets
  // (3, 0 = padding, 6) with a huge padding score: only the pair (0 faster than 2) counts,
  // over 1 pair of real slots: log 2 * softplus(1 - 0).
  const auto loss = pairwise_gap_loss(t2({0, 0, 9, 1, -1e3, 0}, 2, 3), t2({5, 5, 7, 3, 0, 6}, 2, 3),
                                      mask2({1, 1, 0, 1, 0, 1}, 2, 3));
  EXPECT_NEAR(loss.item<double>(), std::log(2.0) * softplus(1.0), 1e-12);
  const auto none = pairwise_gap_loss(t2({1, 2}, 1, 2), t2({4, 4}, 1, 2), mask2({1, 1}, 1, 2));
  EXPECT_EQ(none.item<double>(), 0.0);
}

TEST_F(Losses, PairwiseGapWeighsNearTiesByTheirGap) {
  // The same wrong order costs 1000x less when the runtimes differ by 0.1% than by 2x
  // (log 1.001 / log 2 ~ 1 / 693); ListMLE charges both alike.
  const auto s = t2({1.0, 0.0}, 1, 2);  // slot 0 (truly faster) scored slower
  const auto m = mask2({1, 1}, 1, 2);
  const double tie = pairwise_gap_loss(s, t2({1000, 1001}, 1, 2), m).item<double>();
  const double far = pairwise_gap_loss(s, t2({1000, 2000}, 1, 2), m).item<double>();
  EXPECT_NEAR(far / tie, std::log(2.0) / std::log(1.001), 1e-6);
  EXPECT_NEAR(listmle_loss(s, t2({1000, 1001}, 1, 2), m).item<double>(),
              listmle_loss(s, t2({1000, 2000}, 1, 2), m).item<double>(), 1e-12);
  // Its gradient pushes the faster slot's score down and the slower one's up.
  auto sg = s.clone().requires_grad_(true);
  pairwise_gap_loss(sg, t2({1000, 2000}, 1, 2), m).backward();
  EXPECT_GT(sg.grad()[0][0].item<double>(), 0.0);
  EXPECT_LT(sg.grad()[0][1].item<double>(), 0.0);
}

TEST_F(Losses, LogMseHandComputed) {
  // One graph, targets (1, 2, 4): log t = (0, 1, 2) log 2, mean log 2, population sd
  // log 2 * sqrt(2 / 3), so z = (-1, 0, 1) * sqrt(3 / 2) whatever the base. Scores (0, 0.5,
  // 0.2) centred: minus 0.7 / 3. The loss is the mean of the three squared differences.
  const double r = std::sqrt(1.5), m = 0.7 / 3;
  const double expected =
      (std::pow(0 - m + r, 2) + std::pow(0.5 - m, 2) + std::pow(0.2 - m - r, 2)) / 3;
  const auto loss = log_mse_loss(t2({0.0, 0.5, 0.2}, 1, 3), t2({1, 2, 4}, 1, 3), mask2({1, 1, 1}, 1, 3));
  EXPECT_NEAR(loss.item<double>(), expected, 1e-12);
}

TEST_F(Losses, LogMseSkipsPaddingAndSingleSlotGraphs) {
  // Graph 0: real targets (5, 5), an exact tie: z = (0, 0), scores (0, 1) centred (-0.5,
  // 0.5): 0.25; its padding slot (score 9) is ignored. Graph 1: one real slot, nothing to
  // compare: left out of the mean. Graph 2: (2, 8), scores (3, 3): z = (-1, 1): 1.
  const auto loss = log_mse_loss(t2({0, 1, 9, -1e3, 7, 0, 3, 3, 0}, 3, 3), t2({5, 5, 0, 3, 0, 0, 2, 8, 0}, 3, 3),
                                 mask2({1, 1, 0, 1, 0, 0, 1, 1, 0}, 3, 3));
  EXPECT_NEAR(loss.item<double>(), (0.25 + 1.0) / 2, 1e-12);
  LossOptions mse;
  mse.name = "log_mse";
  EXPECT_EQ(ranking_loss_graphs(mse, t2({5, 5, 0, 3, 0, 0, 2, 8, 0}, 3, 3), mask2({1, 1, 0, 1, 0, 0, 1, 1, 0}, 3, 3)),
            2);
}

TEST_F(Losses, LogMseIsInvariantToTheRuntimesScaleAndPower) {
  // z is the same for t and 3 t^2 (log: an affine map with a positive slope), and for any
  // shift of all scores: the loss sees neither a graph's units nor the score's offset.
  const auto s = t2({0.3, -1.0, 2.0, 0.1}, 1, 4), t = t2({1.0, 1.01, 1.5, 4.0}, 1, 4);
  const auto m = mask2({1, 1, 1, 1}, 1, 4);
  const double base = log_mse_loss(s, t, m).item<double>();
  EXPECT_NEAR(log_mse_loss(s + 7.0, 3.0 * t * t, m).item<double>(), base, 1e-12);
  // Its gradient pushes the slowest config's score up and the fastest's down when the
  // scores are all equal.
  auto flat = torch::zeros({1, 4}, torch::kFloat64).requires_grad_(true);
  log_mse_loss(flat, t, m).backward();
  EXPECT_GT(flat.grad()[0][0].item<double>(), 0.0);
  EXPECT_LT(flat.grad()[0][3].item<double>(), 0.0);
}

TEST_F(Losses, LogMseStandardizesNearTiesInDouble) {
  // Runtimes 3e-7 apart relative (log runtimes of ~13.8 differing by 3e-7, a third of
  // float's spacing there), float scores: z must still be (-1, 0, 1) * sqrt(3 / 2), so at
  // equal scores the gradient is -(2 / 3) z.
  const auto t = t2({1e6, 1e6 * (1 + 3e-7), 1e6 * (1 + 6e-7)}, 1, 3);
  auto s = torch::zeros({1, 3}, torch::kFloat32).requires_grad_(true);
  log_mse_loss(s, t, mask2({1, 1, 1}, 1, 3)).backward();
  const double g = 2.0 / 3 * std::sqrt(1.5);
  EXPECT_NEAR(s.grad()[0][0].item<double>(), g, 1e-5);
  EXPECT_NEAR(s.grad()[0][1].item<double>(), 0.0, 1e-5);
  EXPECT_NEAR(s.grad()[0][2].item<double>(), -g, 1e-5);
}

TEST_F(Losses, ByName) {
  const auto s = t2({0.0, 0.5, 0.2}, 1, 3), t = t2({1, 2, 3}, 1, 3);
  const auto m = mask2({1, 1, 1}, 1, 3);
  LossOptions hinge;
  hinge.name = "hinge";
  hinge.margin = 1.0;
  EXPECT_NEAR(ranking_loss(hinge, s, t, m).item<double>(), 2.6 / 3, 1e-12);
  // model.fused=false: the plain definition (LibTorch ops, not the one-pass function).
  LossOptions plain_hinge = hinge;
  plain_hinge.fused = false;
  const auto sg = s.clone().set_requires_grad(true);
  const auto fused_loss = ranking_loss(hinge, sg, t, m), plain_loss = ranking_loss(plain_hinge, sg, t, m);
  EXPECT_NEAR(plain_loss.item<double>(), 2.6 / 3, 1e-12);
  EXPECT_EQ(plain_loss.grad_fn()->name(), pairwise_hinge_loss_reference(sg, t, m, 1.0).grad_fn()->name());
  EXPECT_NE(plain_loss.grad_fn()->name(), fused_loss.grad_fn()->name());
  EXPECT_NEAR(ranking_loss(LossOptions{}, s, t, m).item<double>(),
              listmle_loss(s, t, m).item<double>(), 1e-15);
  LossOptions bad;
  bad.name = "mse";
  EXPECT_THROW(ranking_loss(bad, s, t, m), Error);
  EXPECT_THROW(find_loss("ListMLE"), Error);
  EXPECT_NO_THROW(find_loss("hinge"));
  EXPECT_EQ(loss_names(), (std::vector<std::string>{"listmle", "hinge", "pairwise_gap", "log_mse", "softmax_top"}));
  LossOptions gap;
  gap.name = "pairwise_gap";
  EXPECT_NEAR(ranking_loss(gap, s, t, m).item<double>(), pairwise_gap_loss(s, t, m).item<double>(), 1e-15);
}

// The schema's loss keys take exactly the table's names once the trainer registers them.
TEST_F(Losses, ConfigChoicesComeFromTheTable) {
  register_loss_choices();
  EXPECT_NO_THROW(Config::load("", {"train.layout_loss=hinge", "train.tile_loss=pairwise_gap"}));
  try {
    Config::load("", {"train.tile_loss=ListMLE"});
    FAIL() << "an unknown loss was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("listmle, hinge, pairwise_gap, log_mse, softmax_top"), std::string::npos) << e.what();
  }
}

TEST_F(Losses, SoftmaxTopHandComputed) {
  // Graph 0: targets 1, 2, 4 and a padded slot, temperature ln 2: p = softmax(-(0, 1, 2)) =
  // (0.66524, 0.24473, 0.09003); scores (0, 1, 0.5): q = softmax(-s) = (0.50648, 0.18632,
  // 0.30720). KL(p || q) = sum p log(p / q) = 0.137618 (computed in python from these
  // formulas). Graph 1 has one real slot: not counted. Gradient of graph 0: p - q.
  const auto scores = t2({0, 1, 0.5, 7, 2, 0, 0, 0}, 2, 4).set_requires_grad(true);
  const auto loss = softmax_top_loss(scores, t2({1, 2, 4, 0, 3, 0, 0, 0}, 2, 4),
                                     mask2({1, 1, 1, 0, 1, 0, 0, 0}, 2, 4), std::log(2.0));
  EXPECT_NEAR(loss.item<double>(), 0.13761784644178346, 1e-12);
  loss.backward();
  const auto g = scores.grad();
  EXPECT_NEAR(g[0][0].item<double>(), 0.15876056471916777, 1e-12);
  EXPECT_NEAR(g[0][1].item<double>(), 0.058404747828950054, 1e-12);
  EXPECT_NEAR(g[0][2].item<double>(), -0.2171653125481179, 1e-12);
  EXPECT_EQ(g[0][3].item<double>(), 0.0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(g[1][i].item<double>(), 0.0);
  // Equal scores: KL from the uniform q, sum p log p + log 3 = 0.266217; the order of the
  // slots does not matter; scores equal to the target logits up to a constant cost 0.
  const auto uniform = softmax_top_loss(t2({5, 5, 5}, 1, 3), t2({4, 1, 2}, 1, 3), mask2({1, 1, 1}, 1, 3),
                                        std::log(2.0));
  EXPECT_NEAR(uniform.item<double>(), 0.2662167068281706, 1e-12);
  const auto exact = softmax_top_loss(t2({3, 1, 2}, 1, 3), t2({4, 1, 2}, 1, 3), mask2({1, 1, 1}, 1, 3),
                                      std::log(2.0));
  EXPECT_NEAR(exact.item<double>(), 0.0, 1e-12);
  // Through the registry by name, with the configured temperature.
  LossOptions o;
  o.name = "softmax_top";
  o.temperature = std::log(2.0);
  EXPECT_NEAR(ranking_loss(o, t2({5, 5, 5}, 1, 3), t2({4, 1, 2}, 1, 3), mask2({1, 1, 1}, 1, 3)).item<double>(),
              0.2662167068281706, 1e-12);
  EXPECT_EQ(ranking_loss_graphs(o, t2({1, 2, 3, 4}, 2, 2), mask2({1, 1, 1, 0}, 2, 2)), 1);
  // Float scores, a target distribution that underflows in float (runtimes 1 and 1e6 at
  // temperature 0.01) and padding: finite, the same as in double.
  const auto sf = torch::tensor({0.5f, 0.0f, 3.0f}).view({1, 3}).set_requires_grad(true);
  const auto far = softmax_top_loss(sf, t2({1, 1e6, 0}, 1, 3), mask2({1, 1, 0}, 1, 3), 0.01);
  far.backward();
  EXPECT_TRUE(std::isfinite(far.item<double>()));
  // p = (1, 0): KL = -log q_0 = log(1 + e^(s_0 - s_1)) = softplus(0.5).
  EXPECT_NEAR(far.item<double>(), std::log1p(std::exp(0.5)), 1e-6);
  EXPECT_TRUE(torch::isfinite(sf.grad()).all().item<bool>());
}

}  // namespace
}  // namespace tpuperf
