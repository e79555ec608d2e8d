// Whole-graph conversion: packed configs decode to the kept source configs, dedup on/off,
// pruning and provenance.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "common/base/error.h"
#include "common/graph/graph_prep.h"
#include "pipeline/preprocess/features.h"

using namespace tpuperf;

namespace {

// Chain graph 0 <- 1 <- ... <- n-1; every node has shape dims (rank 2) and 0-padded layout.
void fill_nodes(GraphBase& g, int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  g.num_nodes = n;
  g.node_feat.assign(static_cast<size_t>(n) * kNodeFeatDim, 0.0f);
  for (int i = 0; i < n; ++i) {
    float* row = &g.node_feat[static_cast<size_t>(i) * kNodeFeatDim];
    for (int c = 0; c < 21; ++c) row[c] = u(rng);
    row[21] = 4;
    row[22] = 8;
    row[134] = 1;  // minor_to_major {1, 0, pad...}
    row[60] = static_cast<float>(i);
    g.node_opcode.push_back(static_cast<uint8_t>(1 + i % 100));
  }
  for (int i = 1; i < n; ++i) {
    g.edge_index.push_back(i);
    g.edge_index.push_back(i - 1);
  }
}

LayoutGraph make_layout(std::mt19937_64& rng) {
  LayoutGraph g;
  g.name = "bert_layout";
  fill_nodes(g, 30, rng);
  g.node_config_ids = {25, 3, 10};
  g.node_splits = {0, 12, 30};
  std::uniform_int_distribution<int> v(-1, 5), pick(0, 9);
  const size_t block = g.node_config_ids.size() * kLayoutConfigDim;
  std::vector<std::vector<int8_t>> uniq(10, std::vector<int8_t>(block));
  for (auto& b : uniq)
    for (int8_t& x : b) x = static_cast<int8_t>(v(rng));
  for (int c = 0; c < 40; ++c) {
    const auto& b = c < 10 ? uniq[c] : uniq[pick(rng)];  // 30 copies
    g.node_config_feat.insert(g.node_config_feat.end(), b.begin(), b.end());
    g.config_runtime.push_back(1000 + c);
  }
  return g;
}

TileGraph make_tile(std::mt19937_64& rng) {
  TileGraph g;
  g.name = "resnet50.4x4.fp16";
  fill_nodes(g, 7, rng);
  std::uniform_int_distribution<int> v(0, 64);
  for (int c = 0; c < 12; ++c) {
    std::vector<float> row(kTileConfigDim);
    for (float& x : row) x = static_cast<float>(v(rng));
    if (c >= 8) row.assign(g.config_feat.begin() + (c - 8) * kTileConfigDim,
                           g.config_feat.begin() + (c - 7) * kTileConfigDim);  // copies of 0..3
    g.config_feat.insert(g.config_feat.end(), row.begin(), row.end());
    g.config_runtime.push_back(c < 8 ? 500 + c : 100 + c);
    g.config_runtime_normalizers.push_back(c < 8 ? 50 + c : 50 + (c - 8));
  }
  return g;
}

}  // namespace

TEST(TransformGraph, LayoutPackedDecodesToKeptConfigs) {
  std::mt19937_64 rng(1);
  LayoutGraph g = make_layout(rng);
  for (bool dedup : {false, true}) {
    ProcessedGraph p = to_processed(g, "layout:nlp:random", "train", 2, DedupPolicy::Min, dedup, PruneRule{1});
    EXPECT_EQ(p.collection, "layout:nlp:random");
    EXPECT_EQ(p.split, "train");
    EXPECT_EQ(p.name, g.name);
    EXPECT_EQ(p.fold, 2);
    EXPECT_EQ(p.configs_before, 40);
    EXPECT_EQ(p.nodes_before, 30);
    EXPECT_EQ(p.edges_before, 29);
    const size_t nc = g.node_config_ids.size();
    ASSERT_EQ(p.node_config_packed.size(), p.config_runtime.size() * nc);

    // Independent expectation of the kept configs: first occurrences of distinct blocks.
    std::vector<int64_t> kept;
    std::set<std::vector<int8_t>> seen;
    for (int64_t c = 0; c < g.num_configs(); ++c) {
      std::vector<int8_t> b(g.node_config_feat.begin() + c * nc * 18,
                            g.node_config_feat.begin() + (c + 1) * nc * 18);
      if (!dedup || seen.insert(b).second) kept.push_back(c);
    }
    ASSERT_EQ(p.num_configs(), static_cast<int64_t>(kept.size()));
    EXPECT_EQ(dedup ? 10 : 40, p.num_configs());
    for (size_t k = 0; k < kept.size(); ++k) {
      for (size_t j = 0; j < nc; ++j) {
        int8_t vals[18];
        unpack_layout_values(p.node_config_packed[k * nc + j], vals);
        const int8_t* src = &g.node_config_feat[(kept[k] * nc + j) * 18];
        for (int q = 0; q < 18; ++q) ASSERT_EQ(vals[q], src[q]) << k << "," << j << "," << q;
      }
      if (!dedup) {
        EXPECT_EQ(p.config_runtime[k], g.config_runtime[kept[k]]);
      }
    }
    if (dedup) {  // min of the copies: the first occurrences have the smallest runtimes here
      for (size_t k = 0; k < kept.size(); ++k) EXPECT_EQ(p.config_runtime[k], 1000 + kept[k]);
    }

    // Pruning with 1 hop on the chain: configurable 3, 10, 25 and their neighbours.
    std::vector<int64_t> kept_nodes = {2, 3, 4, 9, 10, 11, 24, 25, 26};
    ASSERT_EQ(p.num_nodes, static_cast<int64_t>(kept_nodes.size()));
    EXPECT_EQ(p.node_config_ids, (std::vector<int32_t>{7, 1, 4}));
    EXPECT_EQ(p.node_splits, (std::vector<int64_t>{0, 6, 9}));
    EXPECT_EQ(p.edge_index, (std::vector<int32_t>{1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7}));
    for (size_t i = 0; i < kept_nodes.size(); ++i) EXPECT_EQ(p.node_opcode[i], g.node_opcode[kept_nodes[i]]);
    // Node features: the kept source rows, re-padded and otherwise untransformed (the
    // transform is fitted afterwards and applied when graphs are read).
    ASSERT_EQ(p.num_node_feat, kNodeFeatDim);
    ASSERT_EQ(p.node_feat.size(), kept_nodes.size() * kNodeFeatDim);
    for (size_t i = 0; i < kept_nodes.size(); ++i) {
      std::vector<float> want(g.node_feat.begin() + kept_nodes[i] * kNodeFeatDim,
                              g.node_feat.begin() + (kept_nodes[i] + 1) * kNodeFeatDim);
      repad_minor_to_major(want.data(), 1);
      EXPECT_EQ(std::memcmp(want.data(), &p.node_feat[i * kNodeFeatDim], want.size() * sizeof(float)), 0)
          << "node " << kept_nodes[i];
    }
  }
}

TEST(TransformGraph, LayoutWithoutPruning) {
  std::mt19937_64 rng(2);
  LayoutGraph g = make_layout(rng);
  ProcessedGraph p =
      to_processed(g, "layout:xla:default", "test", kFoldTest, DedupPolicy::Min, false, PruneRule{kNoPruning});
  EXPECT_EQ(p.num_nodes, 30);
  EXPECT_EQ(p.num_edges(), 29);
  EXPECT_EQ(p.node_config_ids, (std::vector<int32_t>{25, 3, 10}));
  EXPECT_EQ(p.node_splits, g.node_splits);
  EXPECT_EQ(p.config_runtime, g.config_runtime);
}

TEST(TransformGraph, TileDedupAndProvenance) {
  std::mt19937_64 rng(3);
  TileGraph g = make_tile(rng);
  ProcessedGraph off = to_processed(g, "tile:xla", "valid", kFoldValid, DedupPolicy::Min, false);
  EXPECT_EQ(off.config_feat, g.config_feat);
  EXPECT_EQ(off.config_runtime, g.config_runtime);
  EXPECT_EQ(off.config_runtime_normalizers, g.config_runtime_normalizers);
  EXPECT_EQ(off.configs_before, 12);
  EXPECT_EQ(off.nodes_before, 7);
  EXPECT_EQ(off.edges_before, 6);
  EXPECT_EQ(off.num_nodes, 7);
  std::vector<float> repadded = g.node_feat;
  repad_minor_to_major(repadded.data(), g.num_nodes);
  EXPECT_EQ(off.num_node_feat, kNodeFeatDim);
  EXPECT_EQ(off.node_feat, repadded);
  EXPECT_TRUE(off.node_config_packed.empty());

  for (DedupPolicy pol : {DedupPolicy::Min, DedupPolicy::Mean, DedupPolicy::First}) {
    ProcessedGraph on = to_processed(g, "tile:xla", "train", 0, pol, true);
    ASSERT_EQ(on.num_configs(), 8);
    EXPECT_EQ(on.configs_before, 12);
    std::vector<float> first8(g.config_feat.begin(), g.config_feat.begin() + 8 * kTileConfigDim);
    EXPECT_EQ(on.config_feat, first8);
    for (int c = 0; c < 8; ++c) {
      EXPECT_EQ(on.config_runtime_normalizers[c], 50 + c);
      int64_t copy = c < 4 ? 100 + c + 8 : -1;  // rows 8..11 copy rows 0..3
      int64_t want = 500 + c;
      if (copy >= 0 && pol == DedupPolicy::Min) want = copy;
      if (copy >= 0 && pol == DedupPolicy::Mean) want = (500 + c + copy + 1) / 2;
      EXPECT_EQ(on.config_runtime[c], want) << c;
    }
  }
  EXPECT_EQ(off.edge_index, (std::vector<int32_t>{1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5}));
}

TEST(TransformGraph, ErrorsNameTheGraph) {
  std::mt19937_64 rng(5);
  LayoutGraph g = make_layout(rng);
  g.node_config_feat.pop_back();
  try {
    to_processed(g, "layout:nlp:random", "train", 0, DedupPolicy::Min, true, PruneRule{1});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "bert_layout");
    EXPECT_EQ(e.key(), "node_config_feat");
  }
}
