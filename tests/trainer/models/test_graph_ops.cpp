// Message passing and pooling against naive loops, and gradients (of the ops and of a tiny
// model's loss) against central finite differences in double precision.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <random>
#include <vector>

#include "trainer/models/batch.h"
#include "trainer/models/graph_ops.h"
#include "trainer/losses/registry.h"
#include "tests/trainer/models/model_test_util.h"

namespace tpuperf {
namespace {

class GraphOps : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    torch::manual_seed(0);
  }
};

struct RandomGraph {
  int64_t n;
  std::vector<int64_t> consumer, producer;
  GraphEdges edges() const {
    return {torch::tensor(consumer, torch::kInt64), torch::tensor(producer, torch::kInt64)};
  }
};

// DAG in TpuGraphs form (u > v: u consumes v), with repeated edges and isolated nodes.
RandomGraph random_graph(std::mt19937_64& rng, int64_t n, int64_t m) {
  RandomGraph g{n, {}, {}};
  for (int64_t e = 0; e < m; ++e) {
    const int64_t u = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(n - 1));
    g.consumer.push_back(u);
    g.producer.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(u)));
  }
  return g;
}

// out[dst] = sum (or mean) of x[src] over edges, one node and feature at a time.
torch::Tensor naive_aggregate(const torch::Tensor& x, const std::vector<int64_t>& src,
                              const std::vector<int64_t>& dst, bool mean) {
  auto xa = x.accessor<double, 3>();
  auto out = torch::zeros_like(x);
  auto oa = out.accessor<double, 3>();
  for (int64_t s = 0; s < x.size(0); ++s) {
    for (int64_t node = 0; node < x.size(1); ++node) {
      for (int64_t h = 0; h < x.size(2); ++h) {
        double sum = 0;
        int count = 0;
        for (size_t e = 0; e < src.size(); ++e) {
          if (dst[e] != node) continue;
          sum += xa[s][src[e]][h];
          ++count;
        }
        oa[s][node][h] = (mean && count > 0) ? sum / count : sum;
      }
    }
  }
  return out;
}

TEST_F(GraphOps, AggregationsMatchNaiveLoops) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 5; ++trial) {
    const auto g = random_graph(rng, 12 + trial, 20 + 3 * trial);
    const auto x = torch::randn({3, g.n, 4}, torch::kFloat64);
    const auto edges = g.edges();
    for (bool mean : {true, false}) {
      const auto agg = mean ? Aggregation::Mean : Aggregation::Sum;
      EXPECT_TRUE(torch::allclose(aggregate_from_producers(x, edges, agg),
                                  naive_aggregate(x, g.producer, g.consumer, mean)));
      EXPECT_TRUE(torch::allclose(aggregate_from_consumers(x, edges, agg),
                                  naive_aggregate(x, g.consumer, g.producer, mean)));
      // 2-D features (config-independent states) take the same path.
      EXPECT_TRUE(torch::allclose(aggregate_from_producers(x[1], edges, agg),
                                  naive_aggregate(x, g.producer, g.consumer, mean)[1]));
    }
  }
}

TEST_F(GraphOps, AdjacencyListsEachNodesNeighboursInEdgeOrder) {
  std::mt19937_64 rng(4);
  const auto g = random_graph(rng, 10, 25);
  const auto adj = Adjacency::build(g.edges(), g.n);
  ASSERT_EQ(adj.producer_ptr.size(0), g.n + 1);
  ASSERT_EQ(adj.consumer_idx.size(0), static_cast<int64_t>(g.consumer.size()));
  for (int64_t u = 0; u < g.n; ++u) {
    std::vector<int64_t> producers, consumers;
    for (size_t e = 0; e < g.consumer.size(); ++e) {
      if (g.consumer[e] == u) producers.push_back(g.producer[e]);
      if (g.producer[e] == u) consumers.push_back(g.consumer[e]);
    }
    const auto row = [](const torch::Tensor& ptr, const torch::Tensor& idx, int64_t u) {
      const auto r = idx.slice(0, ptr[u].item<int64_t>(), ptr[u + 1].item<int64_t>());
      return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
    };
    EXPECT_EQ(row(adj.producer_ptr, adj.producer_idx, u), producers) << "node " << u;
    EXPECT_EQ(row(adj.consumer_ptr, adj.consumer_idx, u), consumers) << "node " << u;
  }
}

TEST_F(GraphOps, SegmentPoolingMatchesNaiveLoops) {
  // Segment 2 is empty and pools to 0; segments are not contiguous on purpose.
  const std::vector<int64_t> seg = {0, 1, 0, 3, 1, 1, 0, 3};
  const int64_t G = 4;
  const auto x = torch::randn({2, static_cast<int64_t>(seg.size()), 3}, torch::kFloat64);
  const auto segment = torch::tensor(seg, torch::kInt64);
  const auto sum = segment_sum(x, segment, G), mean = segment_mean(x, segment, G),
             max = segment_max(x, segment, G);
  ASSERT_EQ(max.sizes(), (std::vector<int64_t>{2, G, 3}));
  auto xa = x.accessor<double, 3>();
  for (int64_t s = 0; s < 2; ++s) {
    for (int64_t g = 0; g < G; ++g) {
      for (int64_t h = 0; h < 3; ++h) {
        double total = 0, best = -1e300;
        int count = 0;
        for (size_t i = 0; i < seg.size(); ++i) {
          if (seg[i] != g) continue;
          total += xa[s][static_cast<int64_t>(i)][h];
          best = std::max(best, xa[s][static_cast<int64_t>(i)][h]);
          ++count;
        }
        EXPECT_NEAR(sum[s][g][h].item<double>(), total, 1e-12);
        EXPECT_NEAR(mean[s][g][h].item<double>(), count ? total / count : 0.0, 1e-12);
        EXPECT_NEAR(max[s][g][h].item<double>(), count ? best : 0.0, 1e-12);
      }
    }
  }
}

// Checks d(sum(w * f(x)))/dx from autograd against central differences.
void expect_gradient_matches(const std::function<torch::Tensor(const torch::Tensor&)>& f,
                             torch::Tensor x) {
  x = x.clone().set_requires_grad(true);
  const auto w = torch::randn_like(f(x));
  (f(x) * w).sum().backward();
  const auto analytic = x.grad().clone();
  const double eps = 1e-6;
  auto flat = x.detach().view({-1});
  auto numeric = torch::zeros_like(flat);
  for (int64_t i = 0; i < flat.size(0); ++i) {
    const double keep = flat[i].item<double>();
    flat[i] = keep + eps;
    const double up = (f(x.detach()) * w).sum().item<double>();
    flat[i] = keep - eps;
    const double down = (f(x.detach()) * w).sum().item<double>();
    flat[i] = keep;
    numeric[i] = (up - down) / (2 * eps);
  }
  EXPECT_TRUE(torch::allclose(analytic.view({-1}), numeric, 1e-5, 1e-7))
      << "max abs diff " << (analytic.view({-1}) - numeric).abs().max().item<double>();
}

TEST_F(GraphOps, AggregationGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(2);
  const auto g = random_graph(rng, 9, 15);
  const auto edges = g.edges();
  const auto x = torch::randn({2, g.n, 3}, torch::kFloat64);
  for (auto agg : {Aggregation::Mean, Aggregation::Sum}) {
    expect_gradient_matches(
        [&](const torch::Tensor& t) { return aggregate_from_producers(t, edges, agg); }, x);
    expect_gradient_matches(
        [&](const torch::Tensor& t) { return aggregate_from_consumers(t, edges, agg); }, x);
  }
  const auto segment = torch::tensor(std::vector<int64_t>{0, 0, 1, 2, 1, 0, 2, 2, 1});
  expect_gradient_matches([&](const torch::Tensor& t) { return segment_sum(t, segment, 4); }, x);
  expect_gradient_matches([&](const torch::Tensor& t) { return segment_mean(t, segment, 4); }, x);
  expect_gradient_matches([&](const torch::Tensor& t) { return segment_max(t, segment, 4); }, x);
}

// A tiny tile and layout batch: two graphs of a few nodes, slates of 3 and 2 configs.
std::vector<ProcessedGraph> tiny_graphs(Kind kind, std::mt19937_64& rng) {
  std::vector<ProcessedGraph> graphs;
  for (int64_t n : {5, 4}) {
    ProcessedGraph g;
    g.name = "g" + std::to_string(n);
    g.num_nodes = n;
    g.num_node_feat = 3;
    std::normal_distribution<float> normal;
    for (int64_t i = 0; i < n * 3; ++i) g.node_feat.push_back(normal(rng));
    for (int64_t i = 0; i < n; ++i) g.node_opcode.push_back(static_cast<uint8_t>(rng() % 121));
    for (int64_t u = 1; u < n; ++u)
      g.edge_index.insert(g.edge_index.end(),
                          {static_cast<int32_t>(u), static_cast<int32_t>(rng() % u)});
    const int64_t c = 4;
    for (int64_t k = 0; k < c; ++k)
      g.config_runtime.push_back(100 + static_cast<int64_t>(rng() % 50));
    if (kind == Kind::Tile) {
      for (int64_t i = 0; i < c * kTileConfigDim; ++i)
        g.config_feat.push_back(static_cast<float>(rng() % 9));
      g.config_runtime_normalizers.assign(c, 2);
    } else {
      g.node_config_ids = {0, 2};
      for (int64_t i = 0; i < c * 2; ++i) {
        int8_t v[kLayoutConfigDim];
        for (auto& x : v) x = static_cast<int8_t>(static_cast<int>(rng() % 7) - 1);
        g.node_config_packed.push_back(pack_layout_values(v));
      }
    }
    attach_random_dims(kind, g);
    graphs.push_back(g);
  }
  return graphs;
}

// With dropout > 0 the model stays in training mode and every evaluation reseeds torch,
// so finite differences see the masks autograd saw.
void check_model_gradients(const ModelArch& arch, double dropout) {
  SCOPED_TRACE(arch.name + " dropout " + std::to_string(dropout));
  const Kind kind = arch.kind;
  std::mt19937_64 rng(3);
  const auto graphs = tiny_graphs(kind, rng);
  const auto batch = batch_to_dtype(make_batch(kind, {&graphs[0], &graphs[1]}, {{0, 1, 2}, {3, 1}}),
                                    torch::kFloat64);
  ModelOptions opts;
  opts.hidden = 4;
  opts.layers = 2;
  opts.dropout = dropout;
  opts.opcode_dim = 2;
  opts.attention_heads = 2;
  ModelPtr model = model_of(arch, 3, opts);
  model->to(torch::kFloat64);
  for (const std::string& loss_name : loss_names()) {  // every registered loss
    LossOptions lo;
    lo.name = loss_name;
    lo.margin = 10.0;  // every pair active: keeps the hinge away from its kink
    const std::function<torch::Tensor()> loss_of = [&]() -> torch::Tensor {
      torch::manual_seed(7);
      return ranking_loss(lo, model->forward(batch), batch.target, batch.config_mask);
    };
    model->zero_grad();
    loss_of().backward();
    torch::NoGradGuard no_grad;
    int checked = 0;
    for (const auto& p : model->named_parameters()) {
      torch::Tensor flat = p.value().view({-1});
      const torch::Tensor grad = p.value().grad().view({-1});
      // A handful of entries per tensor keeps the test fast; rows of the opcode table that
      // no node uses have zero gradients on both sides.
      for (int64_t i = 0; i < std::min<int64_t>(flat.size(0), 6); ++i) {
        const int64_t at = static_cast<int64_t>(rng() % static_cast<uint64_t>(flat.size(0)));
        const double keep = flat[at].item<double>(), eps = 1e-6;
        flat[at] = keep + eps;
        const double up = loss_of().item<double>();
        flat[at] = keep - eps;
        const double down = loss_of().item<double>();
        flat[at] = keep;
        EXPECT_NEAR(grad[at].item<double>(), (up - down) / (2 * eps), 1e-6)
            << loss_name << " " << p.key() << "[" << at << "]";
        ++checked;
      }
    }
    EXPECT_GT(checked, 50);
  }
}

TEST_F(GraphOps, ModelLossGradientsMatchFiniteDifferences) {
  for (const ModelArch& arch : model_archs()) {
    check_model_gradients(arch, 0.0);
    check_model_gradients(arch, 0.3);
  }
}

}  // namespace
}  // namespace tpuperf
