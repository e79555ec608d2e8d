// Batches and models: shapes, decoding, equivariance to slate order, cross-config mixing,
// and learning a small synthetic ranking problem.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "common/error.h"
#include "trainer/train/batch.h"
#include "trainer/models/graph_ops.h"
#include "trainer/losses/losses.h"
#include "trainer/models/models.h"

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

ProcessedGraph random_graph(Kind kind, std::mt19937_64& rng, int64_t n, int64_t c, int64_t nc = 3) {
  ProcessedGraph g;
  g.collection = kind == Kind::Tile ? "tile:xla" : "layout:xla:random";
  g.name = "g" + std::to_string(rng() % 100000);
  g.num_nodes = n;
  g.num_node_feat = kFeat;
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < n * kFeat; ++i) g.node_feat.push_back(normal(rng));
  for (int64_t i = 0; i < n; ++i) g.node_opcode.push_back(static_cast<uint8_t>(rng() % 121));
  for (int64_t u = 1; u < n; ++u) {
    g.edge_index.push_back(static_cast<int32_t>(u));
    g.edge_index.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(u)));
  }
  for (int64_t k = 0; k < c; ++k)
    g.config_runtime.push_back(1000 + static_cast<int64_t>(rng() % 1000));
  if (kind == Kind::Tile) {
    for (int64_t i = 0; i < c * kTileConfigDim; ++i)
      g.config_feat.push_back(static_cast<float>(rng() % 16));
    g.config_runtime_normalizers.assign(static_cast<size_t>(c), 1);
  } else {
    for (int64_t i = 0; i < nc; ++i)
      g.node_config_ids.push_back(static_cast<int32_t>(i * (n / nc)));
    for (int64_t i = 0; i < c * nc; ++i) {
      int8_t v[kLayoutConfigDim];
      for (auto& x : v) x = static_cast<int8_t>(static_cast<int>(rng() % 7) - 1);
      g.node_config_packed.push_back(pack_layout_values(v));
    }
  }
  return g;
}

ModelOptions small_options(int64_t heads = 2) {
  ModelOptions o;
  o.hidden = 16;
  o.layers = 2;
  o.dropout = 0.0;
  o.opcode_dim = 4;
  o.attention_heads = heads;
  return o;
}

TEST_F(Models, TileBatchLayout) {
  std::mt19937_64 rng(1);
  auto a = random_graph(Kind::Tile, rng, 5, 6), b = random_graph(Kind::Tile, rng, 3, 4);
  b.config_runtime[2] = 300;
  b.config_runtime_normalizers[2] = 4;
  const auto batch = make_batch(Kind::Tile, {&a, &b}, {{0, 1, 2}, {2}});
  EXPECT_EQ(batch.num_graphs, 2);
  EXPECT_EQ(batch.slate, 3);
  EXPECT_EQ(batch.num_nodes, 8);
  EXPECT_EQ(batch.node_offsets, (std::vector<int64_t>{0, 5, 8}));
  EXPECT_EQ(batch.node_graph[6].item<int64_t>(), 1);
  // Graph b's first edge [1, x] is shifted by 5 nodes.
  EXPECT_EQ(batch.edges.consumer[4].item<int64_t>(), 6);
  EXPECT_EQ(batch.edges.producer[4].item<int64_t>(), 5 + b.edge_index[1]);
  EXPECT_EQ(batch.config_mask[1][0].item<bool>(), true);
  EXPECT_EQ(batch.config_mask[1][1].item<bool>(), false);
  EXPECT_EQ(batch.config_index[1][2].item<int64_t>(), 2);  // padding repeats slot 0
  EXPECT_DOUBLE_EQ(batch.target[1][0].item<double>(), 75.0);
  EXPECT_DOUBLE_EQ(batch.target[1][1].item<double>(), 0.0);
  EXPECT_EQ(batch.config_feat.sizes(), (std::vector<int64_t>{2, 3, 24}));
  EXPECT_EQ(batch.config_feat[0][1][5].item<float>(), a.config_feat[24 + 5]);
  EXPECT_EQ(batch.node_feat[6][1].item<float>(), b.node_feat[kFeat + 1]);
  EXPECT_THROW(make_batch(Kind::Tile, {&a}, {{6}}), Error);
  EXPECT_THROW(make_batch(Kind::Tile, {&a}, {{}}), Error);
}

TEST_F(Models, LayoutBatchDecodesValues) {
  std::mt19937_64 rng(2);
  auto a = random_graph(Kind::Layout, rng, 6, 2, 2), b = random_graph(Kind::Layout, rng, 9, 3, 3);
  int8_t v[kLayoutConfigDim];
  for (int j = 0; j < kLayoutConfigDim; ++j) v[j] = static_cast<int8_t>(j % 7 - 1);
  b.node_config_packed[2 * 3 + 1] = pack_layout_values(v);  // config 2, node_config_ids[1]
  const auto batch = make_batch(Kind::Layout, {&a, &b}, {{1, 0}, {2}});
  ASSERT_EQ(batch.config_node.size(0), 5);
  EXPECT_EQ(batch.config_node[3].item<int64_t>(), 6 + b.node_config_ids[1]);
  ASSERT_EQ(batch.config_values.sizes(), (std::vector<int64_t>{2, 5, 18}));
  for (int j = 0; j < kLayoutConfigDim; ++j) {
    EXPECT_EQ(batch.config_values[0][3][j].item<int64_t>(), j * 7 + (j % 7));
    EXPECT_EQ(batch.config_values[1][3][j].item<int64_t>(), j * 7 + (j % 7));  // padding
  }
  EXPECT_DOUBLE_EQ(batch.target[0][0].item<double>(), static_cast<double>(a.config_runtime[1]));
}

TEST_F(Models, OutputShapes) {
  std::mt19937_64 rng(3);
  for (Kind kind : {Kind::Tile, Kind::Layout}) {
    auto a = random_graph(kind, rng, 7, 5), b = random_graph(kind, rng, 4, 5);
    const auto batch = make_batch(kind, {&a, &b}, {{0, 1, 2, 3}, {4, 0}});
    const auto scores = kind == Kind::Tile ? TileModel(kFeat, small_options())->forward(batch)
                                           : LayoutModel(kFeat, small_options())->forward(batch);
    EXPECT_EQ(scores.sizes(), (std::vector<int64_t>{2, 4}));
    EXPECT_TRUE(torch::isfinite(scores).all().item<bool>());
  }
}

template <typename Model>
torch::Tensor scores_of(Model& model, Kind kind, const std::vector<ProcessedGraph>& graphs,
                        const std::vector<std::vector<int64_t>>& configs) {
  torch::NoGradGuard no_grad;
  return model->forward(make_batch(kind, {&graphs[0], &graphs[1]}, configs));
}

template <typename Model>
void check_equivariance_and_mixing(Kind kind) {
  std::mt19937_64 rng(4);
  const std::vector<ProcessedGraph> graphs = {random_graph(kind, rng, 8, 6),
                                              random_graph(kind, rng, 5, 6)};
  Model model(kFeat, small_options());
  model->eval();
  const torch::Tensor base = scores_of(model, kind, graphs, {{0, 1, 2, 3}, {5, 4, 3}});
  // Reordered slates: each config keeps its score.
  const torch::Tensor perm = scores_of(model, kind, graphs, {{2, 0, 3, 1}, {3, 5, 4}});
  const std::vector<std::pair<int, int>> g0 = {{0, 1}, {1, 3}, {2, 0}, {3, 2}};  // base, perm
  for (const auto& ij : g0) {
    const int64_t i = ij.first, j = ij.second;
    EXPECT_NEAR(base[0][i].item<float>(), perm[0][j].item<float>(), 1e-5);
  }
  EXPECT_NEAR(base[1][0].item<float>(), perm[1][1].item<float>(), 1e-5);
  EXPECT_NEAR(base[1][2].item<float>(), perm[1][0].item<float>(), 1e-5);

  // Replacing config 3 by 4 in graph 0's slate changes the scores of the other configs.
  const torch::Tensor changed = scores_of(model, kind, graphs, {{0, 1, 2, 4}, {5, 4, 3}});
  EXPECT_GT((changed[0].slice(0, 0, 3) - base[0].slice(0, 0, 3)).abs().max().item<float>(), 1e-4);
  // ... but not those of the other graph.
  EXPECT_TRUE(torch::allclose(changed[1], base[1], 1e-5, 1e-6));

  // Control: without attention, other slots do not move.
  Model plain(kFeat, small_options(0));
  plain->eval();
  const torch::Tensor p0 = scores_of(plain, kind, graphs, {{0, 1, 2, 3}, {5, 4, 3}});
  const torch::Tensor p1 = scores_of(plain, kind, graphs, {{0, 1, 2, 4}, {5, 4, 3}});
  EXPECT_TRUE(torch::allclose(p0[0].slice(0, 0, 3), p1[0].slice(0, 0, 3), 1e-5, 1e-6));
  EXPECT_GT((p0[0][3] - p1[0][3]).abs().item<float>(), 1e-5);
}

TEST_F(Models, TileEquivariantAndMixing) { check_equivariance_and_mixing<TileModel>(Kind::Tile); }
TEST_F(Models, LayoutEquivariantAndMixing) {
  check_equivariance_and_mixing<LayoutModel>(Kind::Layout);
}

// Training-mode dropout draws its masks from torch's generator: the same torch seed replays
// the same scores (what makes --resume replay an epoch), another seed changes them, and
// evaluation mode applies no dropout.
TEST_F(Models, DropoutFollowsTorchSeedAndIsOffInEval) {
  std::mt19937_64 rng(7);
  for (Kind kind : {Kind::Tile, Kind::Layout}) {
    auto a = random_graph(kind, rng, 9, 5), b = random_graph(kind, rng, 6, 5);
    const auto batch = make_batch(kind, {&a, &b}, {{0, 1, 2, 3}, {4, 0}});
    auto opts = small_options();
    opts.dropout = 0.5;
    torch::nn::AnyModule model = kind == Kind::Tile ? torch::nn::AnyModule(TileModel(kFeat, opts))
                                                    : torch::nn::AnyModule(LayoutModel(kFeat, opts));
    torch::NoGradGuard no_grad;
    const auto scores = [&](uint64_t seed) {
      torch::manual_seed(seed);
      return model.forward(batch);
    };
    EXPECT_TRUE(torch::equal(scores(1), scores(1)));
    EXPECT_FALSE(torch::allclose(scores(1), scores(2)));
    model.ptr()->eval();
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
  const auto adj = Adjacency::build(batch.edges, batch.num_nodes);
  const int64_t S = 3, G = 3;
  SageBlock block(H, 0.3);
  const auto node0 = torch::randn({batch.num_nodes, H}), slot0 = torch::randn({S, G, H});
  const auto grad_out = torch::randn({S, batch.num_nodes, H});
  const auto run = [&](bool split) {
    block->zero_grad();
    const auto node = node0.clone().requires_grad_(), slot = slot0.clone().requires_grad_();
    torch::manual_seed(5);  // the same dropout mask for both
    const auto out = split ? block->forward_split(node, slot, batch.node_graph, adj)
                           : block(node.unsqueeze(0) + slot.index_select(1, batch.node_graph), adj);
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
  EXPECT_THROW(block->forward_split(torch::randn({batch.num_nodes, 8}), torch::randn({2, 2, 8}),
                                    batch.node_graph, Adjacency::build(batch.edges, batch.num_nodes)),
               c10::Error);
}

// The trainer runs a step's graphs in batches of similar slate width and backpropagates
// their joint loss batch by batch (backward_joint_loss): padding and the other graphs of
// a batch must not change a graph's loss, so the gradients equal those of one batch of
// them all. Graph 4 has one config, so no pair for hinge, which averages over the graphs
// with a pair: it must count in neither way of batching.
template <typename Model>
void check_batches_add_up(Kind kind) {
  std::mt19937_64 rng(11);
  std::vector<ProcessedGraph> graphs;
  for (int64_t n : {7, 4, 9, 5, 6}) graphs.push_back(random_graph(kind, rng, n, 6));
  const std::vector<std::vector<int64_t>> slates = {{0, 1, 2, 3, 4, 5}, {2, 0}, {5, 1, 3, 4}, {1, 3}, {2}};
  Model model(kFeat, small_options());
  const std::function<torch::Tensor(const Batch&)> forward = [&](const Batch& b) { return model->forward(b); };
  for (const char* loss : {"hinge", "listmle"}) {
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
    // Alone, the one-config graph has no hinge pair (no loss); under ListMLE its loss is 0.
    EXPECT_EQ(joint_alone, 0.0) << loss;
    ASSERT_EQ(whole.size(), parts.size());
    double largest = 0;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_TRUE(torch::allclose(whole[i], parts[i], 1e-4, 1e-6)) << loss << " parameter " << i;
      largest = std::max(largest, whole[i].abs().max().template item<double>());
    }
    EXPECT_GT(largest, 1e-4) << loss;  // the check compares real gradients
  }
}

TEST_F(Models, TileBatchesOfAStepAddUpToOneBatch) { check_batches_add_up<TileModel>(Kind::Tile); }
TEST_F(Models, LayoutBatchesOfAStepAddUpToOneBatch) { check_batches_add_up<LayoutModel>(Kind::Layout); }

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
template <typename Model>
double train_and_evaluate(Kind kind, const std::vector<ProcessedGraph>& graphs,
                          const std::string& loss, int steps) {
  std::vector<const ProcessedGraph*> ptrs;
  std::vector<std::vector<int64_t>> eval_slates;
  for (const auto& g : graphs) {
    ptrs.push_back(&g);
    eval_slates.push_back({});
    for (int64_t k = kTrainConfigs; k < g.num_configs(); ++k) eval_slates.back().push_back(k);
  }
  const Batch held_out = make_batch(kind, ptrs, eval_slates);
  Model model(kFeat, small_options());
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

TEST_F(Models, TileModelLearnsSyntheticRanking) {
  std::mt19937_64 rng(5);
  const auto graphs = synthetic_tile(rng, 8);
  const double acc = train_and_evaluate<TileModel>(Kind::Tile, graphs, "hinge", 300);
  EXPECT_GT(acc, 0.8);
}

TEST_F(Models, LayoutModelLearnsSyntheticRanking) {
  std::mt19937_64 rng(6);
  const auto graphs = synthetic_layout(rng, 8);
  const double acc = train_and_evaluate<LayoutModel>(Kind::Layout, graphs, "listmle", 300);
  EXPECT_GT(acc, 0.8);
}

}  // namespace
}  // namespace tpuperf
