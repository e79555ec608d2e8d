// Every registered model: output shapes, equivariance to slate order, cross-config mixing,
// dropout replay, batches that add up, and learning a small synthetic ranking problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/base/error.h"
#include "tests/trainer/models/model_test_util.h"
#include "trainer/losses/registry.h"
#include "trainer/models/batch.h"
#include "trainer/models/blocks.h"

namespace tpuperf {
namespace {

constexpr int64_t kFeat = 4;

class Models : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    torch::manual_seed(0);
  }
};

TEST_F(Models, EveryArchitectureScoresEverySlot) {
  std::mt19937_64 rng(3);
  for (const ModelArch& arch : model_archs()) {
    auto a = random_graph(arch.kind, rng, 7, 5), b = random_graph(arch.kind, rng, 4, 5);
    const auto batch = make_batch(arch.kind, {&a, &b}, {{0, 1, 2, 3}, {4, 0}});
    const auto scores = model_of(arch, kFeat, small_options())->forward(batch);
    EXPECT_EQ(scores.sizes(), (std::vector<int64_t>{2, 4})) << arch.name;
    EXPECT_TRUE(torch::isfinite(scores).all().item<bool>()) << arch.name;
  }
}

TEST_F(Models, RegistryNamesUnknownArchitecturesAndBadOptions) {
  ModelSpec spec = spec_of(default_arch(Kind::Tile), kFeat, small_options());
  spec.arch = "sage";  // a layout model
  try {
    make_model(spec);
    FAIL() << "a layout architecture built a tile model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.tile.arch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("early_join"), std::string::npos) << e.what();
  }
  spec = spec_of(default_arch(Kind::Layout), kFeat, small_options(3));  // 3 does not divide 16
  EXPECT_THROW(make_model(spec), Error);
  EXPECT_EQ(model_arch_names(Kind::Tile), (std::vector<std::string>{"early_join", "late_join", "early_join_shape"}));
  EXPECT_EQ(model_arch_names(Kind::Layout), (std::vector<std::string>{"sage", "sage_shape_context"}));
  // The schema takes exactly the registered names once the trainer registers them.
  register_model_choices();
  EXPECT_NO_THROW(Config::load("", {"model.tile.arch=late_join"}));
  EXPECT_THROW(Config::load("", {"model.tile.arch=sage"}), Error);
}

// A retired name (an old checkpoint's or config's) is an error that names it, says it was
// retired and why, and is not offered as a choice.
TEST_F(Models, RetiredArchitecturesFailWithTheirReason) {
  ASSERT_FALSE(retired_model_archs().empty());
  register_model_choices();
  for (const RetiredArch& r : retired_model_archs()) {
    SCOPED_TRACE(r.name);
    const auto live = model_arch_names(r.kind);
    EXPECT_EQ(std::find(live.begin(), live.end(), r.name), live.end());
    ModelSpec spec = spec_of(default_arch(r.kind), kFeat, small_options());
    spec.arch = r.name;
    try {
      make_model(spec);
      ADD_FAILURE() << "a retired architecture built a model";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'" + r.name + "' was retired: " + r.reason), std::string::npos) << what;
      EXPECT_NE(what.find("model.layout.arch"), std::string::npos) << what;
    }
    try {
      Config::load("", {"model.layout.arch=" + r.name});
      ADD_FAILURE() << "the config took a retired architecture";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'" + r.name + "' was retired: " + r.reason), std::string::npos)
          << e.what();
    }
  }
}

torch::Tensor scores_of(RankingModel& model, Kind kind, const std::vector<ProcessedGraph>& graphs,
                        const std::vector<std::vector<int64_t>>& configs) {
  torch::NoGradGuard no_grad;
  return model.forward(make_batch(kind, {&graphs[0], &graphs[1]}, configs));
}

void check_equivariance_and_mixing(const ModelArch& arch) {
  SCOPED_TRACE(arch.name);
  const Kind kind = arch.kind;
  std::mt19937_64 rng(4);
  const std::vector<ProcessedGraph> graphs = {random_graph(kind, rng, 8, 6),
                                              random_graph(kind, rng, 5, 6)};
  ModelPtr model = model_of(arch, kFeat, small_options());
  randomize_zero_started_layers(*model);
  model->eval();
  const torch::Tensor base = scores_of(*model, kind, graphs, {{0, 1, 2, 3}, {5, 4, 3}});
  // Reordered slates: each config keeps its score.
  const torch::Tensor perm = scores_of(*model, kind, graphs, {{2, 0, 3, 1}, {3, 5, 4}});
  const std::vector<std::pair<int, int>> g0 = {{0, 1}, {1, 3}, {2, 0}, {3, 2}};  // base, perm
  for (const auto& ij : g0) {
    const int64_t i = ij.first, j = ij.second;
    EXPECT_NEAR(base[0][i].item<float>(), perm[0][j].item<float>(), 1e-5);
  }
  EXPECT_NEAR(base[1][0].item<float>(), perm[1][1].item<float>(), 1e-5);
  EXPECT_NEAR(base[1][2].item<float>(), perm[1][0].item<float>(), 1e-5);

  // Replacing config 3 by 4 in graph 0's slate changes the scores of the other configs.
  const torch::Tensor changed = scores_of(*model, kind, graphs, {{0, 1, 2, 4}, {5, 4, 3}});
  EXPECT_GT((changed[0].slice(0, 0, 3) - base[0].slice(0, 0, 3)).abs().max().item<float>(), 1e-4);
  // ... but not those of the other graph.
  EXPECT_TRUE(torch::allclose(changed[1], base[1], 1e-5, 1e-6));

  // Control: without attention, other slots do not move.
  ModelPtr plain = model_of(arch, kFeat, small_options(0));
  randomize_zero_started_layers(*plain);
  plain->eval();
  const torch::Tensor p0 = scores_of(*plain, kind, graphs, {{0, 1, 2, 3}, {5, 4, 3}});
  const torch::Tensor p1 = scores_of(*plain, kind, graphs, {{0, 1, 2, 4}, {5, 4, 3}});
  EXPECT_TRUE(torch::allclose(p0[0].slice(0, 0, 3), p1[0].slice(0, 0, 3), 1e-5, 1e-6));
  EXPECT_GT((p0[0][3] - p1[0][3]).abs().item<float>(), 1e-5);
}

TEST_F(Models, EquivariantToSlateOrderAndMixingOnlyWithAttention) {
  for (const ModelArch& arch : model_archs()) check_equivariance_and_mixing(arch);
}

// Training-mode dropout draws its masks from torch's generator: the same torch seed replays
// the same scores (what makes --resume replay an epoch), another seed changes them, and
// evaluation mode applies no dropout.
TEST_F(Models, DropoutFollowsTorchSeedAndIsOffInEval) {
  std::mt19937_64 rng(7);
  for (const ModelArch& arch : model_archs()) {
    SCOPED_TRACE(arch.name);
    auto a = random_graph(arch.kind, rng, 9, 5), b = random_graph(arch.kind, rng, 6, 5);
    const auto batch = make_batch(arch.kind, {&a, &b}, {{0, 1, 2, 3}, {4, 0}});
    ModelPtr model = model_of(arch, kFeat, small_options(2, 0.5));
    torch::NoGradGuard no_grad;
    const auto scores = [&](uint64_t seed) {
      torch::manual_seed(seed);
      return model->forward(batch);
    };
    EXPECT_TRUE(torch::equal(scores(1), scores(1)));
    EXPECT_FALSE(torch::allclose(scores(1), scores(2)));
    model->eval();
    EXPECT_TRUE(torch::equal(scores(1), scores(2)));
  }
}

// The tile model's first block takes its input as node + per-(slot, graph) parts; it must
// give the scores and gradients of the plain block on the summed states, dropout included.
void check_split_block(int64_t H) {
  SCOPED_TRACE("H = " + std::to_string(H));
  std::mt19937_64 rng(3);
  auto a = random_graph(Kind::Tile, rng, 9, 4), b = random_graph(Kind::Tile, rng, 1, 4),
       c = random_graph(Kind::Tile, rng, 6, 4);
  const auto batch = make_batch(Kind::Tile, {&a, &b, &c}, {{0, 1, 2}, {3, 0, 1}, {2, 3, 0}});
  const BatchGraph graph(batch);
  const int64_t S = 3, G = 3;
  SageBlock block(H, 0.3);
  const auto node0 = torch::randn({batch.num_nodes, H}), slot0 = torch::randn({S, G, H});
  const auto grad_out = torch::randn({S, batch.num_nodes, H});
  const auto run = [&](bool split) {
    block->zero_grad();
    const auto node = node0.clone().requires_grad_(), slot = slot0.clone().requires_grad_();
    torch::manual_seed(5);  // the same dropout mask for both
    const auto out = split ? block->forward_split(node, slot, graph)
                           : block->forward(node.unsqueeze(0) + slot.index_select(1, batch.node_graph), graph);
    out.backward(grad_out);
    return std::vector<torch::Tensor>{out.detach(), node.grad(), slot.grad(),
                                      block->linear->weight.grad().clone(),
                                      block->linear->bias.grad().clone(),
                                      block->norm->weight.grad().clone()};
  };
  const auto split = run(true), plain = run(false);
  for (size_t i = 0; i < split.size(); ++i)
    EXPECT_TRUE(torch::allclose(split[i], plain[i], 1e-4, 1e-5)) << "tensor " << i;
}

// The layout models' first block takes base states and per-slot config terms apart; it
// must give the output and gradients of the block on the summed states, dropout included.
// Random edges give nodes several producers and consumers and adjacent configurable nodes;
// besides: a self-loop and a repeated edge at configurable nodes, a configurable node
// without neighbours (the last) and one listed twice (its two terms add up, as with
// index_add). 70 nodes: several tasks of the kernels' row loops.
void check_configs_block(int64_t H) {
  SCOPED_TRACE("H = " + std::to_string(H));
  std::mt19937_64 rng(7);
  auto a = random_graph(Kind::Layout, rng, 40, 4), b = random_graph(Kind::Layout, rng, 30, 4);
  auto batch = make_batch(Kind::Layout, {&a, &b}, {{0, 1, 2}, {3, 0, 1}});
  const int64_t N = batch.num_nodes, S = 3;
  std::vector<int64_t> consumer{5, 9, 9}, producer{5, 1, 1};  // self-loop at 5, edge 1 -> 9 twice
  for (int64_t e = 0; e < 3 * N; ++e) {
    const int64_t u = static_cast<int64_t>(rng() % (N - 1)), v = static_cast<int64_t>(rng() % (N - 1));
    if (u != v) consumer.push_back(u), producer.push_back(v);
  }
  batch.edges.consumer = torch::tensor(consumer);
  batch.edges.producer = torch::tensor(producer);
  const BatchGraph graph(batch);
  const auto config_node = torch::tensor(std::vector<int64_t>{0, 1, 5, 9, 13, 5, 41, N - 1});
  const int64_t M = config_node.size(0);
  SageBlock block(H, 0.3);
  const auto base0 = torch::randn({N, H}), term0 = torch::randn({S, M, H});
  const auto grad_out = torch::randn({S, N, H});
  const auto run = [&](bool apart, int threads) {
    torch::set_num_threads(threads);
    block->zero_grad();
    const auto base = base0.clone().requires_grad_(), term = term0.clone().requires_grad_();
    torch::manual_seed(5);  // the same dropout mask for both
    const auto out = apart ? block->forward_configs(base, term, config_node, graph)
                           : block->forward(base.unsqueeze(0).expand({S, N, H}).index_add(1, config_node, term), graph);
    out.backward(grad_out);
    return std::vector<torch::Tensor>{out.detach(), base.grad(), term.grad(),
                                      block->linear->weight.grad().clone(),
                                      block->linear->bias.grad().clone(),
                                      block->norm->weight.grad().clone()};
  };
  const auto apart = run(true, 1), summed = run(false, 1), apart2 = run(true, 2);
  torch::set_num_threads(1);
  for (size_t i = 0; i < apart.size(); ++i) {
    EXPECT_TRUE(torch::allclose(apart[i], summed[i], 1e-4, 1e-5))
        << "tensor " << i << ": max abs diff " << (apart[i] - summed[i]).abs().max().item<double>();
    EXPECT_TRUE(torch::equal(apart[i], apart2[i])) << "tensor " << i << " differs with 2 threads";
  }
}

TEST_F(Models, LayoutFirstBlockTakesBaseAndConfigTermsApart) {
  for (int64_t H : {8, 32, 64}) check_configs_block(H);
}

// Two configurable nodes with the same features and config dims, A consuming node 0 and B
// node 3 (other features): swapping their layouts changes the wide term of
// sage_shape_context, whose weights read each node's neighbourhood after the SAGE blocks;
// the control, the same model without blocks, reads the node alone and cannot tell A and
// B apart. Only the wide term scores: the readout's score layer is zeroed.
const ModelArch* arch_named(const std::string& name) {
  for (const auto& a : model_archs())
    if (a.name == name) return &a;
  ADD_FAILURE() << "no model " << name;
  return nullptr;
}

double wide_term_swap_difference(const std::string& arch_name, int64_t layers) {
  const ModelArch* arch = arch_named(arch_name);
  if (arch == nullptr) return std::nan("");
  ProcessedGraph g;
  g.collection = "layout:xla:random";
  g.name = "twins";
  g.num_nodes = 6;
  g.num_node_feat = static_cast<int>(kFeat);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < g.num_nodes * kFeat; ++i) g.node_feat.push_back(normal(rng));
  for (int64_t f = 0; f < kFeat; ++f) g.node_feat[4 * kFeat + f] = g.node_feat[1 * kFeat + f];  // B = A
  g.node_opcode = {5, 26, 7, 9, 26, 11};
  g.edge_index = {1, 0, 2, 1, 4, 3, 5, 4};  // (consumer, producer) pairs
  g.node_config_ids = {1, 4};
  int8_t x[kLayoutConfigDim], y[kLayoutConfigDim];
  for (int i = 0; i < kLayoutConfigDim; ++i) x[i] = static_cast<int8_t>(i % 3), y[i] = static_cast<int8_t>(2 - i % 3);
  g.node_config_packed = {pack_layout_values(x), pack_layout_values(y), pack_layout_values(y), pack_layout_values(x)};
  g.config_runtime = {1000, 2000};
  g.config_dims.assign(2 * 18, 0);
  for (int node = 0; node < 2; ++node)
    for (int t = 0; t < 3; ++t)
      for (int d = 0; d < 3; ++d) g.config_dims[static_cast<size_t>(node * 18 + t * 6 + d)] = 16 + 100 * d + t;
  g.has_config_dims = true;
  ModelOptions opts = small_options(0);
  opts.layers = layers;
  auto model = model_of(*arch, kFeat, opts);
  model->eval();
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    if (p.key().find("readout.score") == 0) p.value().zero_();
    if (p.key().find("wide.") == 0) p.value().normal_();
  }
  const auto scores = model->forward(make_batch(Kind::Layout, {&g}, {{0, 1}}));
  return std::abs(scores[0][0].item<double>() - scores[0][1].item<double>());
}

TEST_F(Models, ContextWideTermTellsEqualNodesInDifferentPlacesApart) {
  EXPECT_LT(wide_term_swap_difference("sage_shape_context", 0), 1e-5);
  EXPECT_GT(wide_term_swap_difference("sage_shape_context", 2), 1e-3);
}

// A layout batch whose graphs have no configurable node: nothing tells its configs apart,
// so every slot of a graph scores alike, on both paths.
TEST_F(Models, LayoutModelsScoreGraphsWithoutConfigurableNodes) {
  std::mt19937_64 rng(2);
  const auto a = random_graph(Kind::Layout, rng, 7, 4, 0), b = random_graph(Kind::Layout, rng, 5, 4, 0);
  const auto batch = make_batch(Kind::Layout, {&a, &b}, {{0, 1, 2}, {3, 1}});
  ASSERT_EQ(batch.config_node.size(0), 0);
  for (const std::string& name : model_arch_names(Kind::Layout)) {
    SCOPED_TRACE(name);
    ModelOptions opts = small_options();
    torch::manual_seed(1);
    ModelPtr fused = model_of(*arch_named(name), kFeat, opts);
    opts.fused = false;
    ModelPtr plain = model_of(*arch_named(name), kFeat, opts);
    copy_parameters(*fused, *plain);
    fused->eval();
    plain->eval();
    torch::NoGradGuard no_grad;
    const auto scores = fused->forward(batch);
    EXPECT_TRUE(torch::allclose(scores, plain->forward(batch), 1e-5, 1e-6));
    EXPECT_TRUE(torch::isfinite(scores).all().item<bool>());
    const int64_t configs[2] = {3, 2};
    for (int64_t g = 0; g < 2; ++g) {
      const auto real = scores[g].slice(0, 0, configs[g]);
      EXPECT_TRUE(torch::allclose(real, real[0].expand({configs[g]}))) << scores;
    }
  }
}

// H = 8 takes the kernels' generic paths, H = 32 the vector ones.
TEST_F(Models, SplitSageBlockEqualsPlainBlockOnSummedStates) {
  for (int64_t H : {8, 32}) check_split_block(H);
}

TEST_F(Models, SplitSageBlockRejectsEdgesBetweenGraphs) {
  std::mt19937_64 rng(3);
  auto a = random_graph(Kind::Tile, rng, 5, 2), b = random_graph(Kind::Tile, rng, 4, 2);
  auto batch = make_batch(Kind::Tile, {&a, &b}, {{0, 1}, {1, 0}});
  batch.edges.producer[0] = batch.num_nodes - 1;  // an edge from graph 1 into graph 0
  SageBlock block(8, 0.0);
  EXPECT_THROW(block->forward_split(torch::randn({batch.num_nodes, 8}), torch::randn({2, 2, 8}), BatchGraph(batch)),
               c10::Error);
}

// The trainer runs a step's graphs in batches of similar slate width and backpropagates
// their joint loss batch by batch (backward_joint_loss): padding and the other graphs of
// a batch must not change a graph's loss, so the gradients equal those of one batch of
// them all. Graph 4 has one config, so no pair for hinge, which averages over the graphs
// with a pair: it must count in neither way of batching.
void check_batches_add_up(const ModelArch& arch) {
  SCOPED_TRACE(arch.name);
  const Kind kind = arch.kind;
  std::mt19937_64 rng(11);
  std::vector<ProcessedGraph> graphs;
  for (int64_t n : {7, 4, 9, 5, 6}) graphs.push_back(random_graph(kind, rng, n, 6));
  const std::vector<std::vector<int64_t>> slates = {{0, 1, 2, 3, 4, 5}, {2, 0}, {5, 1, 3, 4}, {1, 3}, {2}};
  ModelPtr model = model_of(arch, kFeat, small_options());
  randomize_zero_started_layers(*model);
  const std::function<torch::Tensor(const Batch&)> forward = [&](const Batch& b) { return model->forward(b); };
  for (const std::string& loss : loss_names()) {  // every registered loss
    LossOptions opts;
    opts.name = loss;
    const auto gradient = [&](const std::vector<std::vector<size_t>>& parts, double* joint) {
      model->zero_grad();
      std::vector<Batch> batches;
      for (const auto& part : parts) {
        std::vector<const ProcessedGraph*> g;
        std::vector<std::vector<int64_t>> c;
        for (size_t i : part) g.push_back(&graphs[i]), c.push_back(slates[i]);
        batches.push_back(make_batch(kind, g, c));
      }
      *joint = backward_joint_loss(opts, batches, forward, 0.5);
      std::vector<torch::Tensor> grads;
      for (const auto& p : model->parameters())
        if (p.grad().defined()) grads.push_back(p.grad().clone());
      return grads;
    };
    double joint_whole = 0, joint_parts = 0, joint_alone = 0;
    const auto whole = gradient({{0, 1, 2, 3, 4}}, &joint_whole);
    const auto parts = gradient({{1, 3}, {4}, {2}, {0}}, &joint_parts);
    gradient({{4}}, &joint_alone);
    EXPECT_NEAR(joint_parts, joint_whole, 1e-5 * std::abs(joint_whole)) << loss;
    // Alone, the one-config graph has no pair (no loss under the pairwise losses); under
    // ListMLE its loss is 0.
    EXPECT_EQ(joint_alone, 0.0) << loss;
    ASSERT_EQ(whole.size(), parts.size());
    double largest = 0;
    for (size_t i = 0; i < whole.size(); ++i) {
      // Relative to the parameter's largest gradient, not per element: an element near zero
      // is a sum of larger terms and carries their rounding (7e-6 of 22 on an AVX-512 CPU
      // for sage_node_cost, a retired layout model, under log_mse). A batching bug (padding or another graph leaking
      // into a loss) moves gradients by a share of their size, far above this bound; the 1e-6
      // floor is for gradients that are zero but for rounding (a bias before a LayerNorm).
      const double scale = whole[i].abs().max().template item<double>();
      const double diff = (whole[i] - parts[i]).abs().max().template item<double>();
      EXPECT_LE(diff, 1e-5 * scale + 1e-6) << loss << " parameter " << i << " (largest gradient " << scale << ")";
      largest = std::max(largest, scale);
    }
    EXPECT_GT(largest, 1e-4) << loss;  // the check compares real gradients
  }
}

TEST_F(Models, BatchesOfAStepAddUpToOneBatch) {
  for (const ModelArch& arch : model_archs()) check_batches_add_up(arch);
}

// Fraction of real pairs with distinct targets that the scores order correctly.
double pairwise_accuracy(const torch::Tensor& scores, const Batch& batch) {
  auto s = scores.to(torch::kFloat64);
  double right = 0, total = 0;
  for (int64_t g = 0; g < batch.num_graphs; ++g) {
    for (int64_t i = 0; i < batch.slate; ++i) {
      for (int64_t j = 0; j < batch.slate; ++j) {
        if (!batch.config_mask[g][i].item<bool>() || !batch.config_mask[g][j].item<bool>())
          continue;
        const double ti = batch.target[g][i].item<double>(), tj = batch.target[g][j].item<double>();
        if (!(ti < tj)) continue;
        ++total;
        if (s[g][i].item<double>() < s[g][j].item<double>()) ++right;
      }
    }
  }
  return right / total;
}

constexpr int64_t kSyntheticConfigs = 64;  // the first 48 train, the last 16 held out
constexpr int64_t kTrainConfigs = 48;

// Synthetic tile task: the runtime is linear in 4 of 8 varying config features, with one
// weight's sign set by the graph's node features, so the model needs graph and config.
std::vector<ProcessedGraph> synthetic_tile(std::mt19937_64& rng, int count) {
  std::vector<ProcessedGraph> graphs;
  for (int i = 0; i < count; ++i) {
    auto g = random_graph(Kind::Tile, rng, 6 + i % 5, kSyntheticConfigs);
    double sign = 0;
    for (int64_t node = 0; node < g.num_nodes; ++node)
      sign += g.node_feat[static_cast<size_t>(node * kFeat)];
    sign = sign >= 0 ? 1.0 : -1.0;
    for (int64_t k = 0; k < g.num_configs(); ++k) {
      float* f = &g.config_feat[static_cast<size_t>(k * kTileConfigDim)];
      std::fill(f + 8, f + kTileConfigDim, 0.f);
      const double y = 2.0 * f[0] + sign * 3.0 * f[1] - f[2] + 0.5 * f[7];
      g.config_runtime[static_cast<size_t>(k)] = static_cast<int64_t>(1000 + 10 * y);
    }
    graphs.push_back(g);
  }
  return graphs;
}

// Synthetic layout task: two of the 18 values vary per configurable node and the runtime
// weighs one of them by the sign of a node feature, so the per-node injection must carry
// the signal to the right node.
std::vector<ProcessedGraph> synthetic_layout(std::mt19937_64& rng, int count) {
  std::vector<ProcessedGraph> graphs;
  for (int i = 0; i < count; ++i) {
    auto g = random_graph(Kind::Layout, rng, 9 + i % 4, kSyntheticConfigs, 3);
    const size_t nc = g.node_config_ids.size();
    for (int64_t k = 0; k < g.num_configs(); ++k) {
      double y = 0;
      for (size_t m = 0; m < nc; ++m) {
        int8_t v[kLayoutConfigDim];
        uint64_t& packed = g.node_config_packed[static_cast<size_t>(k) * nc + m];
        unpack_layout_values(packed, v);
        for (int j = 0; j < kLayoutConfigDim; ++j)
          if (j != 0 && j != 6) v[j] = -1;
        packed = pack_layout_values(v);
        const double w =
            g.node_feat[static_cast<size_t>(g.node_config_ids[m] * kFeat)] > 0 ? 1.0 : -1.0;
        y += w * v[0] + 0.5 * v[6];
      }
      g.config_runtime[static_cast<size_t>(k)] = static_cast<int64_t>(1000 + 10 * y);
    }
    graphs.push_back(g);
  }
  return graphs;
}

// Trains on slates of 16 configs drawn afresh each step from the first 48 configs of each
// graph (as real training does), then returns the pairwise accuracy on the other 16.
double train_and_evaluate(const ModelArch& arch, const std::vector<ProcessedGraph>& graphs,
                          const std::string& loss, int steps) {
  std::vector<const ProcessedGraph*> ptrs;
  std::vector<std::vector<int64_t>> eval_slates;
  for (const auto& g : graphs) {
    ptrs.push_back(&g);
    eval_slates.push_back({});
    for (int64_t k = kTrainConfigs; k < g.num_configs(); ++k) eval_slates.back().push_back(k);
  }
  const Kind kind = arch.kind;
  const Batch held_out = make_batch(kind, ptrs, eval_slates);
  ModelPtr model = model_of(arch, kFeat, small_options());
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(3e-3));
  LossOptions lo;
  lo.name = loss;
  std::mt19937_64 rng(11);
  std::vector<int64_t> pool(kTrainConfigs);
  std::iota(pool.begin(), pool.end(), int64_t{0});
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<int64_t>> slates;
    for (size_t g = 0; g < graphs.size(); ++g) {
      std::shuffle(pool.begin(), pool.end(), rng);
      slates.emplace_back(pool.begin(), pool.begin() + 16);
    }
    const Batch train = make_batch(kind, ptrs, slates);
    opt.zero_grad();
    torch::Tensor l = ranking_loss(lo, model->forward(train), train.target, train.config_mask);
    l.backward();
    opt.step();
  }
  model->eval();
  torch::NoGradGuard no_grad;
  return pairwise_accuracy(model->forward(held_out), held_out);
}

TEST_F(Models, EveryArchitectureLearnsSyntheticRanking) {
  for (const ModelArch& arch : model_archs()) {
    // Every architecture starts from the same torch seed, so its result does not depend
    // on how many models the registry builds before it.
    torch::manual_seed(3);
    std::mt19937_64 rng(arch.kind == Kind::Tile ? 5 : 6);
    const auto graphs = arch.kind == Kind::Tile ? synthetic_tile(rng, 8) : synthetic_layout(rng, 8);
    const double acc = train_and_evaluate(arch, graphs, arch.kind == Kind::Tile ? "hinge" : "listmle", 300);
    EXPECT_GT(acc, 0.8) << arch.name;
    std::printf("%s: held-out pairwise accuracy %.3f\n", arch.name.c_str(), acc);
  }
}

}  // namespace
}  // namespace tpuperf
