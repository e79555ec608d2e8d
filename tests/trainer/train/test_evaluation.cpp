// metric_of: the competition score and the top-1/5/10 slowdowns of scored graphs, checked
// against values worked out by hand on a tiny processed_dir written here (two tile graphs,
// two layout graphs) and hand-made scores: the submission's order with and without config 0
// kept among tile's top 5, a layout sample whose unscored configs do not count, scores
// given in scrambled config order, and a NaN tau that is skipped while its slowdowns count.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/graph/graph.h"
#include "common/shards/manifest.h"
#include "common/shards/shard_writer.h"
#include "tests/test_util.h"
#include "trainer/train/dataset.h"
#include "trainer/train/evaluation.h"

namespace tpuperf {
namespace {

const char* kTile = "tile:xla";
const char* kLayout = "layout:xla:random";

// One node, no edges: metric_of reads only the runtimes.
ProcessedGraph tiny_graph(const std::string& collection, const std::string& name,
                          const std::vector<int64_t>& runtimes) {
  ProcessedGraph g;
  g.collection = collection;
  g.split = "valid";
  g.name = name;
  g.fold = kFoldValid;
  g.num_nodes = 1;
  g.num_node_feat = kNodeFeatDim;
  g.node_feat.assign(kNodeFeatDim, 0.f);
  g.node_opcode = {0};
  g.nodes_before = 1;
  g.config_runtime = runtimes;
  g.configs_before = g.num_configs();
  return g;
}

ProcessedGraph tile_graph(const std::string& name, const std::vector<int64_t>& runtimes,
                          const std::vector<int64_t>& normalizers) {
  ProcessedGraph g = tiny_graph(kTile, name, runtimes);
  g.config_runtime_normalizers = normalizers;
  g.config_feat.assign(runtimes.size() * kTileConfigDim, 0.f);
  return g;
}

// A processed_dir holding `graphs` of one collection in one valid shard.
void write_collection(const std::string& dir, const std::string& collection,
                      const std::vector<ProcessedGraph>& graphs, Manifest& manifest) {
  const std::string file = collection_dir(collection) + "-valid.h5";
  ShardWriter w(dir + "/" + file, collection, "valid", 0);
  for (const ProcessedGraph& g : graphs) w.add(g);
  w.close();
  for (size_t i = 0; i < graphs.size(); ++i) {
    ManifestGraph m;
    m.collection = collection;
    m.split = "valid";
    m.name = graphs[i].name;
    m.shard = file;
    m.index = static_cast<int64_t>(i);
    m.fold = kFoldValid;
    m.num_nodes = 1;
    m.num_configs = graphs[i].num_configs();
    m.configs_before = m.num_configs;
    m.nodes_before = 1;
    manifest.graphs.push_back(m);
  }
  manifest.collections.push_back(collection);
  FeatureTransform t;
  t.kept_columns = {0};
  t.log1p = {0};
  t.mean = {0.0};
  t.stddev = {1.0};
  manifest.feature_transforms[collection] = t;
}

GraphScores scored(const std::string& collection, const std::string& name,
                   const std::vector<int64_t>& configs, const std::vector<double>& scores) {
  GraphScores gs;
  gs.collection = collection;
  gs.split = "valid";
  gs.name = name;
  gs.model = 0;
  gs.config_index = configs;
  gs.score = scores;
  return gs;
}

class Evaluation : public testing::Test {
 protected:
  void SetUp() override {
    Manifest manifest;
    // Tile "a": y = runtime / normalizer = 8, 4, 6, 2, 5, 9, 3 (config 3 the best, 2; on the
    // runtimes alone its top-1 below would be 18 / 2 = 9, not 4.5).
    // Tile "b": y = 3, 6, 12.
    write_collection(dir.path(), kTile,
                     {tile_graph("a", {16, 12, 12, 2, 10, 18, 6}, {2, 3, 2, 1, 2, 2, 2}),
                      tile_graph("b", {3, 6, 12}, {1, 1, 1})},
                     manifest);
    // Layout "L": 12 configs, config 1 the fastest of all (runtime 1) but not in the
    // evaluation's sample. Layout "M": constant runtimes, so its tau is NaN.
    write_collection(dir.path(), kLayout,
                     {tiny_graph(kLayout, "L", {50, 1, 40, 99, 99, 30, 99, 20, 99, 10, 99, 60}),
                      tiny_graph(kLayout, "M", {7, 7, 7})},
                     manifest);
    write_manifest(dir.path() + "/" + kManifestFileName, manifest);
  }
  GraphSet set(const char* collection) const {
    return GraphSet(dir.path(), collection, [](const ManifestGraph&) { return true; });
  }
  // Tile "a" scored in scrambled config order: by score the order is 5, 1, 2, 4, 6, 3, 0
  // (y 9, 4, 6, 5, 3, 2, 8). Tile "b": order 1, 2, 0 (y 6, 12, 3).
  std::vector<GraphScores> tile_scores() const {
    return {scored(kTile, "a", {3, 1, 0, 2, 6, 5, 4}, {0.6, 0.2, 0.7, 0.3, 0.5, 0.1, 0.4}),
            scored(kTile, "b", {0, 1, 2}, {0.3, 0.1, 0.2})};
  }
  TempDir dir;
};

TEST_F(Evaluation, TileScoreAndSlowdownsOfTheScoreOrder) {
  const ScoreSum m = metric_of(set(kTile), tile_scores(), false);
  // a: best y 2; top-1 9 / 2 = 4.5, top-5 min(9, 4, 6, 5, 3) / 2 = 1.5, top-10 every config:
  // 1; score 2 - 1.5 = 0.5. b (3 configs, all in every top k): top-1 6 / 3 = 2, then 1, 1;
  // score 1.
  EXPECT_EQ(m.count, 2);
  EXPECT_DOUBLE_EQ(m.mean(), (0.5 + 1.0) / 2);
  const auto s = m.slowdowns();
  EXPECT_DOUBLE_EQ(s[0], (4.5 + 2.0) / 2);
  EXPECT_DOUBLE_EQ(s[1], (1.5 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(s[2], 1.0);
  for (double c : m.slowdown_count) EXPECT_EQ(c, 2);
  // Without the rule the model's own top 5 is the top 5.
  EXPECT_DOUBLE_EQ(m.own_slowdown_5(), (1.5 + 1.0) / 2);
  EXPECT_EQ(m.own5_count, 2);
}

TEST_F(Evaluation, TileKeepsTheDefaultInTheTopFiveAsTheSubmissionDoes) {
  const ScoreSum m = metric_of(set(kTile), tile_scores(), true);
  // a: config 0 takes the fifth place from config 6: 5, 1, 2, 4, 0, then 6, 3 (y 9, 4, 6, 5,
  // 8, 3, 2): top-1 4.5, top-5 4 / 2 = 2, top-10 1; score 0. b: config 0 is among them.
  EXPECT_DOUBLE_EQ(m.mean(), (0.0 + 1.0) / 2);
  const auto s = m.slowdowns();
  EXPECT_DOUBLE_EQ(s[0], (4.5 + 2.0) / 2);
  EXPECT_DOUBLE_EQ(s[1], (2.0 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(s[2], 1.0);
  // The kept default takes the 5th place, never the first: the top-1 above (4.5, 2) is the
  // model's own first pick. The model's own top 5 (config 0 not put in) is a's 5, 1, 2, 4, 6
  // (y 9, 4, 6, 5, 3): 3 / 2 = 1.5; b's: 1.
  EXPECT_DOUBLE_EQ(m.own_slowdown_5(), (1.5 + 1.0) / 2);
  // All-reduced as a vector and back.
  const ScoreSum back = ScoreSum::from_vector(m.to_vector());
  EXPECT_DOUBLE_EQ(back.own_slowdown_5(), m.own_slowdown_5());
  EXPECT_EQ(back.slowdowns(), m.slowdowns());
}

TEST_F(Evaluation, LayoutSampleAndNanTau) {
  // L's sample: configs 0, 2, 5, 7, 9, 11 (runtimes 50, 40, 30, 20, 10, 60), ranked in the
  // reverse of that order: runtimes 60, 10, 20, 30, 40, 50; the best scored is 10 (config 1's
  // 1 was not scored). top-1 6, top-5 1, top-10 1. tau: the first five pairs agree (10), the
  // last config disagrees with each (5): (10 - 5) / 15 = 1/3. M: tau NaN (constant
  // runtimes), not counted; its slowdowns are 1 and count.
  const ScoreSum m = metric_of(set(kLayout),
                               {scored(kLayout, "L", {0, 2, 5, 7, 9, 11}, {0.6, 0.5, 0.4, 0.3, 0.2, 0.1}),
                                scored(kLayout, "M", {0, 1, 2}, {0.1, 0.2, 0.3})},
                               true);
  EXPECT_EQ(m.count, 1);
  EXPECT_NEAR(m.mean(), 1.0 / 3, 1e-12);
  const auto s = m.slowdowns();
  EXPECT_DOUBLE_EQ(s[0], (6.0 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(s[1], 1.0);
  EXPECT_DOUBLE_EQ(s[2], 1.0);
  for (double c : m.slowdown_count) EXPECT_EQ(c, 2);
}

TEST(ScoreSumTest, NothingScoredIsNan) {
  const ScoreSum none;
  EXPECT_TRUE(std::isnan(none.mean()));
  for (double v : none.slowdowns()) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(std::isnan(none.own_slowdown_5()));
}

}  // namespace
}  // namespace tpuperf
