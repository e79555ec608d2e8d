// Pruning against a reference that relaxes every edge `hops` times (Bellman-Ford style);
// bridges against an exhaustive enumeration of producer paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/base/error.h"
#include "common/graph/prune.h"

using namespace tpuperf;

namespace {

// A random DAG in the real format: rows [u, v] with u > v, sorted; features encode the
// node index so that gathered rows can be traced back.
LayoutGraph random_dag(std::mt19937_64& rng, int n, int m, int nc, int num_splits) {
  LayoutGraph g;
  g.name = "dag";
  g.num_nodes = n;
  std::uniform_int_distribution<int> node(0, n - 1);
  std::set<std::pair<int64_t, int64_t>> edges;
  for (int i = 0; i < m && n > 1; ++i) {
    int a = node(rng), b = node(rng);
    if (a == b) continue;
    edges.insert({std::max(a, b), std::min(a, b)});
  }
  for (auto [u, v] : edges) {
    g.edge_index.push_back(u);
    g.edge_index.push_back(v);
  }
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < kNodeFeatDim; ++c) g.node_feat.push_back(static_cast<float>(i * 1000 + c));
    g.node_opcode.push_back(static_cast<uint8_t>(i % 121));
  }
  std::vector<int64_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(std::min(nc, n));  // unsorted on purpose: order must be kept
  g.node_config_ids = ids;
  std::uniform_int_distribution<int64_t> split(0, n);
  g.node_splits = {0};
  for (int i = 0; i < num_splits; ++i) g.node_splits.push_back(split(rng));
  g.node_splits.push_back(n);
  std::sort(g.node_splits.begin(), g.node_splits.end());
  return g;
}

std::vector<bool> reference_keep(const LayoutGraph& g, int hops) {
  const int64_t n = g.num_nodes;
  if (hops < 0) return std::vector<bool>(n, true);
  const int kInf = 1 << 20;
  std::vector<int> dist(n, kInf);
  for (int64_t id : g.node_config_ids) dist[id] = 0;
  for (int round = 0; round < hops; ++round) {
    std::vector<int> next = dist;
    for (size_t e = 0; e < g.edge_index.size(); e += 2) {
      int64_t u = g.edge_index[e], v = g.edge_index[e + 1];
      next[u] = std::min(next[u], dist[v] + 1);
      next[v] = std::min(next[v], dist[u] + 1);
    }
    dist = next;
  }
  std::vector<bool> keep(n);
  for (int64_t i = 0; i < n; ++i) keep[i] = dist[i] <= hops;
  return keep;
}

void check_pruned(const LayoutGraph& g, int hops) {
  SCOPED_TRACE("hops " + std::to_string(hops));
  PrunedGraph p = prune_layout(g, {hops});
  std::vector<bool> keep = reference_keep(g, hops);

  std::vector<int64_t> expected_nodes;
  for (int64_t i = 0; i < g.num_nodes; ++i)
    if (keep[i]) expected_nodes.push_back(i);
  ASSERT_EQ(p.kept_nodes, expected_nodes);
  ASSERT_EQ(p.num_nodes, static_cast<int64_t>(expected_nodes.size()));
  EXPECT_EQ(p.nodes_before, g.num_nodes);
  EXPECT_EQ(p.edges_before, g.num_edges());

  // Feature rows and opcodes follow their nodes.
  ASSERT_EQ(p.node_feat.size(), expected_nodes.size() * kNodeFeatDim);
  ASSERT_EQ(p.node_opcode.size(), expected_nodes.size());
  for (size_t i = 0; i < expected_nodes.size(); ++i) {
    EXPECT_EQ(p.node_feat[i * kNodeFeatDim + 7], static_cast<float>(expected_nodes[i] * 1000 + 7));
    EXPECT_EQ(p.node_opcode[i], g.node_opcode[expected_nodes[i]]);
  }

  // Edges: mapped back through kept ids, the set (and order) of source edges among kept nodes.
  std::vector<std::pair<int64_t, int64_t>> expected_edges, got_edges;
  for (size_t e = 0; e < g.edge_index.size(); e += 2)
    if (keep[g.edge_index[e]] && keep[g.edge_index[e + 1]])
      expected_edges.push_back({g.edge_index[e], g.edge_index[e + 1]});
  for (size_t e = 0; e < p.edge_index.size(); e += 2) {
    ASSERT_GE(p.edge_index[e], 0);
    ASSERT_LT(p.edge_index[e], p.num_nodes);
    ASSERT_GE(p.edge_index[e + 1], 0);
    ASSERT_LT(p.edge_index[e + 1], p.num_nodes);
    got_edges.push_back({p.kept_nodes[p.edge_index[e]], p.kept_nodes[p.edge_index[e + 1]]});
  }
  EXPECT_EQ(got_edges, expected_edges);
  std::vector<std::pair<int64_t, int64_t>> new_rows;
  for (size_t e = 0; e < p.edge_index.size(); e += 2) new_rows.push_back({p.edge_index[e], p.edge_index[e + 1]});
  EXPECT_TRUE(std::is_sorted(new_rows.begin(), new_rows.end()));

  // Config ids: same nodes, same order.
  ASSERT_EQ(p.node_config_ids.size(), g.node_config_ids.size());
  for (size_t i = 0; i < g.node_config_ids.size(); ++i)
    EXPECT_EQ(p.kept_nodes[p.node_config_ids[i]], g.node_config_ids[i]);

  // Splits: count of kept nodes before each boundary (independent count).
  ASSERT_EQ(p.node_splits.size(), g.node_splits.size());
  for (size_t i = 0; i < g.node_splits.size(); ++i) {
    int64_t count = 0;
    for (int64_t u : expected_nodes) count += u < g.node_splits[i];
    EXPECT_EQ(p.node_splits[i], count);
  }
  EXPECT_TRUE(std::is_sorted(p.node_splits.begin(), p.node_splits.end()));
}

// Every kept y that kept u reaches along producer edges through 1..max_pruned pruned
// nodes, by trying every path (exponential; fine on test graphs).
void enumerate_paths(const LayoutGraph& g, const std::vector<uint8_t>& keep, int64_t x, int pruned,
                     int max_pruned, std::set<int64_t>& reached) {
  for (size_t e = 0; e < g.edge_index.size(); e += 2) {
    if (g.edge_index[e] != x) continue;
    const int64_t y = g.edge_index[e + 1];
    if (keep[y]) {
      if (pruned > 0) reached.insert(y);
    } else if (pruned < max_pruned) {
      enumerate_paths(g, keep, y, pruned + 1, max_pruned, reached);
    }
  }
}

std::vector<int64_t> reference_bridges(const LayoutGraph& g, const std::vector<uint8_t>& keep, int max_pruned) {
  std::set<std::pair<int64_t, int64_t>> direct;
  for (size_t e = 0; e < g.edge_index.size(); e += 2) direct.insert({g.edge_index[e], g.edge_index[e + 1]});
  std::vector<int64_t> out;
  for (int64_t u = 0; u < g.num_nodes; ++u) {
    if (!keep[u]) continue;
    std::set<int64_t> reached;
    enumerate_paths(g, keep, u, 0, max_pruned, reached);
    for (int64_t y : reached) {
      if (y == u || direct.count({u, y})) continue;
      out.push_back(u);
      out.push_back(y);
    }
  }
  return out;
}

}  // namespace

TEST(Prune, BridgesMatchPathEnumerationOnRandomDags) {
  std::mt19937_64 rng(11);
  int64_t total = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 2 + trial * 5;
    LayoutGraph g = random_dag(rng, n, n + trial * 2, 1 + trial % 3, 1);
    for (int hops : {1, 2}) {
      const std::vector<uint8_t> keep = nodes_within_hops(n, g.edge_index, g.node_config_ids, hops);
      for (int max_pruned : {0, 1, 2, 4}) {
        SCOPED_TRACE("trial " + std::to_string(trial) + " hops " + std::to_string(hops) + " max_pruned " +
                     std::to_string(max_pruned));
        const std::vector<int64_t> want = reference_bridges(g, keep, max_pruned);
        ASSERT_EQ(bridge_edges(n, g.edge_index, keep, max_pruned), want);
        total += static_cast<int64_t>(want.size() / 2);

        // prune_layout: the source's edges among kept nodes, then the bridges, re-indexed.
        const PrunedGraph p = prune_layout(g, {hops, max_pruned});
        const PrunedGraph plain = prune_layout(g, {hops});
        ASSERT_EQ(p.bridges, static_cast<int64_t>(want.size() / 2));
        ASSERT_EQ(p.num_edges(), plain.num_edges() + p.bridges);
        EXPECT_TRUE(std::equal(plain.edge_index.begin(), plain.edge_index.end(), p.edge_index.begin()));
        for (int64_t i = 0; i < 2 * p.bridges; ++i)
          EXPECT_EQ(p.kept_nodes[p.edge_index[plain.edge_index.size() + i]], want[i]);
        // Every producer of a configurable node is kept, so no bridge ends in one.
        for (int64_t i = 0; i < 2 * p.bridges; i += 2)
          for (int64_t id : p.node_config_ids) EXPECT_NE(p.edge_index[plain.edge_index.size() + i], id);
      }
    }
  }
  EXPECT_GT(total, 100);  // the graphs do have chains through pruned nodes
}

TEST(Prune, BridgesJoinConvolutionsAcrossAPrunedOp) {
  // conv 0 <- relu 1 <- add 2 <- bias 3 <- conv 4, and 2 <- 5 (a second operand of add, a
  // parameter 2 hops from either conv). 1 hop keeps 0, 1, 3, 4 and prunes 2 and 5.
  LayoutGraph g;
  g.num_nodes = 6;
  g.edge_index = {1, 0, 2, 1, 2, 5, 3, 2, 4, 3};
  g.node_feat.assign(6 * kNodeFeatDim, 0.0f);
  g.node_opcode.assign(6, 1);
  g.node_config_ids = {4, 0};
  g.node_splits = {0, 6};
  const PrunedGraph plain = prune_layout(g, {1});
  EXPECT_EQ(plain.kept_nodes, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(plain.edge_index, (std::vector<int64_t>{1, 0, 3, 2}));  // [1, 0], [4, 3]: the convs apart
  const PrunedGraph bridged = prune_layout(g, {1, 1});
  EXPECT_EQ(bridged.edge_index, (std::vector<int64_t>{1, 0, 3, 2, 2, 1}));  // + [3, 1]: bias consumes relu
  EXPECT_EQ(bridged.bridges, 1);
  EXPECT_EQ(bridged.node_config_ids, (std::vector<int64_t>{3, 0}));
  // 0 hops keeps the convs alone: no bridge, since one would end in a configurable node.
  EXPECT_TRUE(prune_layout(g, {0, 4}).edge_index.empty());
  // Not pruning leaves nothing to bridge.
  EXPECT_EQ(prune_layout(g, {kNoPruning, 4}).edge_index, g.edge_index);
}

TEST(Prune, MatchesRelaxationOnRandomDags) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 1 + trial * 7;
    LayoutGraph g = random_dag(rng, n, n + trial * 3, 1 + trial % 4, trial % 5);
    for (int hops : {-1, 0, 1, 2}) check_pruned(g, hops);
  }
}

TEST(Prune, IdentityAtMinusOne) {
  std::mt19937_64 rng(9);
  LayoutGraph g = random_dag(rng, 50, 80, 3, 3);
  PrunedGraph p = prune_layout(g, {kNoPruning});
  EXPECT_EQ(p.num_nodes, g.num_nodes);
  EXPECT_EQ(p.edge_index, g.edge_index);
  EXPECT_EQ(p.node_config_ids, g.node_config_ids);
  EXPECT_EQ(p.node_splits, g.node_splits);
  EXPECT_EQ(p.node_feat, g.node_feat);
}

TEST(Prune, HandMadeChain) {
  // Chain 0 <- 1 <- 2 <- 3 <- 4 (edges [u, v] = [i+1, i]), configurable node 2.
  LayoutGraph g;
  g.num_nodes = 5;
  g.edge_index = {1, 0, 2, 1, 3, 2, 4, 3};
  g.node_feat.assign(5 * kNodeFeatDim, 0.0f);
  g.node_opcode.assign(5, 1);
  g.node_config_ids = {2};
  g.node_splits = {0, 2, 5};
  PrunedGraph p0 = prune_layout(g, {0});
  EXPECT_EQ(p0.kept_nodes, (std::vector<int64_t>{2}));
  EXPECT_TRUE(p0.edge_index.empty());
  EXPECT_EQ(p0.node_splits, (std::vector<int64_t>{0, 0, 1}));
  PrunedGraph p1 = prune_layout(g, {1});
  EXPECT_EQ(p1.kept_nodes, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(p1.edge_index, (std::vector<int64_t>{1, 0, 2, 1}));
  EXPECT_EQ(p1.node_config_ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(p1.node_splits, (std::vector<int64_t>{0, 1, 3}));
}

TEST(Prune, Errors) {
  LayoutGraph g;
  g.num_nodes = 2;
  g.node_feat.assign(2 * kNodeFeatDim, 0.0f);
  g.node_opcode.assign(2, 1);
  g.edge_index = {1, 0};
  EXPECT_THROW(prune_layout(g, {1}), Error);  // no configurable node
  EXPECT_NO_THROW(prune_layout(g, {-1}));
  g.node_config_ids = {0};
  EXPECT_THROW(prune_layout(g, {-2}), Error);
  EXPECT_THROW(prune_layout(g, {1, -1}), Error);  // negative bridges
  g.edge_index = {2, 0};
  EXPECT_THROW(prune_layout(g, {1}), Error);  // endpoint out of range
}
