// The installable ranker library (trainer/rank/include/tpuperf/ranker.h), linked as users
// link it: the shared tpuperf_ranker, plus common/ only to read npz files into the
// library's arrays. Once per binary, a run directory is trained on a tiny generated tree
// by the real tools (tpuperf-synth, tpuperf-preprocess, tpuperf-train: about 10 s, one
// process each, in the build directory); the tests then load it and rank its test graphs:
// load errors name the directory and file, rankings are permutations, deterministic and
// equal to tpuperf-rank's, and malformed or wrong-kind inputs are refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tpuperf/ranker.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/graph/graph.h"

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

// The message of the exception fn throws; what the API promises is std::exception with
// file, key and reason in what(), so that is what a user catches.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception thrown";
  return "no exception thrown";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell command with its stdout in OUT and its stderr in ERR (or OUT too); a
// failure carries the stderr's text.
::testing::AssertionResult run(const std::string& command, const std::string& out, const std::string& err = "") {
  const std::string to_err = err.empty() ? " 2>&1" : " 2> '" + err + "'";
  const int rc = std::system((command + " > '" + out + "'" + to_err).c_str());
  if (rc == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "exit status " << rc << ": " << command << "\n"
                                       << read_text(err.empty() ? out : err);
}

std::vector<std::string> npz_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npz") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A run directory trained once per test binary, with the generated tree's test files.
class TrainedRun : public ::testing::Environment {
 public:
  static std::string work, run, tile_file, layout_file;

  void SetUp() override {
    // Under the build directory (tests write nowhere else); the pid keeps parallel
    // ctest invocations apart.
    work = (fs::path(TPUPERF_BIN_DIR).parent_path() / ("test_ranker_work." + std::to_string(getpid()))).string();
    run = work + "/run";
    fs::remove_all(work);
    fs::create_directories(work);
    const std::string bin = TPUPERF_BIN_DIR;
    ASSERT_TRUE(::run("'" + bin + "/tpuperf-synth' --out '" + work + "/gen' --scale tiny --seed 11", work + "/synth.log"));
    write_config();
    // One process each (an MPI singleton): a tiny tree needs no second rank.
    const std::string config = " --config '" + work + "/cfg.yaml'";
    ASSERT_TRUE(::run("'" + bin + "/tpuperf-preprocess'" + config, work + "/preprocess.log"));
    ASSERT_TRUE(::run("'" + bin + "/tpuperf-train'" + config, work + "/train.log"));
    tile_file = npz_files(work + "/gen/npz/tile/xla/test").at(0);
    layout_file = npz_files(work + "/gen/npz/layout/nlp/random/test").at(0);
  }

  void TearDown() override {
    if (!std::getenv("KEEP")) fs::remove_all(work);
  }

 private:
  // Two collections (one of each kind), two folds (so rankings are ensembles), and the
  // small model and steps of tests/tiny_train.sh, one epoch.
  static void write_config() {
    std::ofstream(work + "/cfg.yaml") << "data:\n"
                                      << "  raw_dir: " << work << "/gen/npz\n"
                                      << "  processed_dir: " << work << "/processed\n"
                                      << "  collections: [tile:xla, layout:nlp:random]\n"
                                      << "preprocess:\n  folds: 2\n"
                                      << "output:\n  dir: " << run << "\n"
                                      << "train:\n  epochs: 1\n  threads_per_rank: 1\n  graphs_per_step: 4\n"
                                      << "  tile_slate: 16\n  layout_slate: 8\n"
                                      << "model:\n  tile: {hidden: 8, layers: 1}\n  layout: {hidden: 8, layers: 1}\n";
  }
};
std::string TrainedRun::work, TrainedRun::run, TrainedRun::tile_file, TrainedRun::layout_file;

const auto* const kTrainedRun = ::testing::AddGlobalTestEnvironment(new TrainedRun);

// The graph arrays of a release file as a caller holds them.
tpuperf::RankGraph rank_graph(const tpuperf::GraphBase& g, std::vector<int64_t> node_splits = {}) {
  return {g.name, g.num_nodes, g.node_feat, g.node_opcode, g.edge_index, std::move(node_splits)};
}

// A release file's graph and candidates.
struct TileInput {
  tpuperf::RankGraph graph;
  tpuperf::TileCandidates configs;
};
TileInput tile_input(const std::string& path) {
  tpuperf::TileGraph g = tpuperf::load_tile_graph(path);
  return {rank_graph(g), {g.config_feat}};
}

struct LayoutInput {
  tpuperf::RankGraph graph;
  tpuperf::LayoutCandidates configs;
};
LayoutInput layout_input(const std::string& path) {
  tpuperf::LayoutGraph g = tpuperf::load_layout_graph(path);
  return {rank_graph(g, g.node_splits), {g.node_config_ids, g.node_config_feat}};
}

size_t layout_configs(const LayoutInput& in) {
  return in.configs.node_config_feat.size() / (in.configs.node_config_ids.size() * 18);
}

void expect_permutation(const tpuperf::Ranking& r, size_t configs) {
  std::vector<int64_t> sorted = r.order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> every(configs);
  std::iota(every.begin(), every.end(), 0);
  EXPECT_EQ(sorted, every) << r.name << ": the order is not a permutation of its " << configs << " configs";
  ASSERT_EQ(r.score.size(), configs);
  for (double s : r.score) EXPECT_TRUE(std::isfinite(s)) << r.name;
}

// The config column of tpuperf-rank's text output for one input, best first.
std::vector<int64_t> cli_order(const std::string& input, const std::string& tag) {
  const std::string out = TrainedRun::work + "/rank_" + tag + ".txt";
  const std::string command = "'" + std::string(TPUPERF_BIN_DIR) + "/tpuperf-rank' --run '" + TrainedRun::run +
                              "' '" + input + "'";
  EXPECT_TRUE(run(command, out, out + ".err"));
  std::ifstream in(out);
  std::string line;
  std::vector<int64_t> order;
  std::getline(in, line);  // "# INPUT: collection, N configs ..."
  EXPECT_THAT(line, StartsWith("# " + input + ": "));
  std::getline(in, line);  // column names
  int64_t rank = 0, config = 0;
  double score = 0;
  while (in >> rank >> config >> score) order.push_back(config);
  return order;
}

std::string copy_run_without(const std::string& name) {
  const std::string dir = TrainedRun::work + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir + "/checkpoints/tile_xla/fold0");
  for (const char* f : {"train_config.yaml", "preprocess_settings.yaml"})
    fs::copy_file(TrainedRun::run + "/" + f, dir + "/" + f);
  return dir;
}

}  // namespace

TEST(Ranker, MissingRunDirectoryIsNamed) {
  const std::string dir = TrainedRun::work + "/no_such_run";
  const std::string msg = error_of([&] { tpuperf::Ranker(dir, "tile:xla"); });
  EXPECT_THAT(msg, HasSubstr(dir));
  EXPECT_THAT(msg, HasSubstr("is not a directory"));
}

TEST(Ranker, DirectoryWithoutTrainConfigNamesTheFile) {
  const std::string dir = TrainedRun::work + "/empty_run";
  fs::create_directories(dir);
  EXPECT_THAT(error_of([&] { tpuperf::Ranker(dir, "tile:xla"); }), HasSubstr(dir + "/train_config.yaml"));
  EXPECT_THAT(error_of([&] { tpuperf::trained_collections(dir); }), HasSubstr(dir + "/train_config.yaml"));
}

TEST(Ranker, CorruptCheckpointNamesTheFile) {
  const std::string dir = copy_run_without("corrupt_run");
  const std::string best = dir + "/checkpoints/tile_xla/fold0/best.pt";
  // The first half of a real checkpoint, as an interrupted copy leaves it.
  const std::string good = read_text(TrainedRun::run + "/checkpoints/tile_xla/fold0/best.pt");
  std::ofstream(best, std::ios::binary) << good.substr(0, good.size() / 2);
  const std::string msg = error_of([&] { tpuperf::Ranker(dir, "tile:xla"); });
  EXPECT_THAT(msg, HasSubstr(best));
  EXPECT_THAT(msg, HasSubstr("cannot load checkpoint"));
}

TEST(Ranker, UntrainedOrUnknownCollectionIsNamed) {
  const std::string msg = error_of([] { tpuperf::Ranker(TrainedRun::run, "layout:xla:default"); });
  EXPECT_THAT(msg, HasSubstr(TrainedRun::run));
  EXPECT_THAT(msg, HasSubstr("holds no trained model of layout:xla:default"));
  EXPECT_THAT(msg, HasSubstr("trained: tile:xla, layout:nlp:random"));
  EXPECT_THAT(error_of([] { tpuperf::Ranker(TrainedRun::run, "tile:tpu"); }), HasSubstr("tile:tpu"));
}

TEST(Ranker, ListsTheTrainedCollections) {
  EXPECT_EQ(tpuperf::trained_collections(TrainedRun::run), (std::vector<std::string>{"tile:xla", "layout:nlp:random"}));
  const tpuperf::Ranker ranker(TrainedRun::run, "layout:nlp:random");
  EXPECT_EQ(ranker.collection(), "layout:nlp:random");
  EXPECT_EQ(ranker.folds(), 2);
}

TEST(Ranker, TileGraphRanksEveryConfigOnce) {
  const tpuperf::Ranker ranker(TrainedRun::run, "tile:xla");
  const TileInput in = tile_input(TrainedRun::tile_file);
  const size_t configs = in.configs.config_feat.size() / 24;
  ASSERT_GT(configs, 1u);
  const tpuperf::Ranking r = ranker.rank(in.graph, in.configs);
  expect_permutation(r, configs);
  EXPECT_EQ(r.collection, "tile:xla");
  EXPECT_EQ(r.name, in.graph.name);
  EXPECT_EQ(r.folds, 2);
  EXPECT_GE(r.unique_configs, 1);
  EXPECT_LE(r.unique_configs, static_cast<int64_t>(configs));
}

TEST(Ranker, LayoutGraphRanksEveryConfigBestFirst) {
  const tpuperf::Ranker ranker(TrainedRun::run, "layout:nlp:random");
  const LayoutInput in = layout_input(TrainedRun::layout_file);
  const tpuperf::Ranking r = ranker.rank(in.graph, in.configs);
  expect_permutation(r, layout_configs(in));
  EXPECT_EQ(r.collection, "layout:nlp:random");
  EXPECT_EQ(r.folds, 2);
  // Lower score = predicted faster, and layout's order is by score alone.
  for (size_t i = 1; i < r.order.size(); ++i) EXPECT_LE(r.score[r.order[i - 1]], r.score[r.order[i]]) << i;
}

TEST(Ranker, SameInputSameRanking) {
  const tpuperf::Ranker ranker(TrainedRun::run, "tile:xla");
  const TileInput in = tile_input(TrainedRun::tile_file);
  const tpuperf::Ranking a = ranker.rank(in.graph, in.configs);
  const tpuperf::Ranking b = ranker.rank(in.graph, in.configs);
  const tpuperf::Ranking c = tpuperf::Ranker(TrainedRun::run, "tile:xla").rank(in.graph, in.configs);
  const tpuperf::Ranking from_file = ranker.rank_file(TrainedRun::tile_file);
  for (const tpuperf::Ranking* other : {&b, &c, &from_file}) {
    EXPECT_EQ(a.order, other->order);
    EXPECT_EQ(a.score, other->score);
  }
  const tpuperf::Ranker layout(TrainedRun::run, "layout:nlp:random");
  const LayoutInput lin = layout_input(TrainedRun::layout_file);
  EXPECT_EQ(layout.rank(lin.graph, lin.configs).order, layout.rank_file(TrainedRun::layout_file).order);
}

TEST(Ranker, IdenticalConfigsShareAScore) {
  const tpuperf::Ranker ranker(TrainedRun::run, "tile:xla");
  TileInput in = tile_input(TrainedRun::tile_file);
  ASSERT_GE(in.configs.config_feat.size() / 24, 3u);
  std::copy_n(in.configs.config_feat.begin(), 24, in.configs.config_feat.begin() + 2 * 24);  // config 2 = config 0
  const tpuperf::Ranking r = ranker.rank(in.graph, in.configs);
  EXPECT_EQ(r.score[0], r.score[2]);
}

TEST(Ranker, OrdersAsTheCommandLineDoes) {
  const tpuperf::Ranker tile(TrainedRun::run, "tile:xla");
  const TileInput tin = tile_input(TrainedRun::tile_file);
  EXPECT_EQ(tile.rank(tin.graph, tin.configs).order, cli_order(TrainedRun::tile_file, "tile"));
  const tpuperf::Ranker layout(TrainedRun::run, "layout:nlp:random");
  const LayoutInput lin = layout_input(TrainedRun::layout_file);
  EXPECT_EQ(layout.rank(lin.graph, lin.configs).order, cli_order(TrainedRun::layout_file, "layout"));
}

TEST(Ranker, WrongKindIsRefused) {
  const tpuperf::Ranker tile(TrainedRun::run, "tile:xla");
  const LayoutInput lin = layout_input(TrainedRun::layout_file);
  EXPECT_THAT(error_of([&] { tile.rank(lin.graph, lin.configs); }),
              HasSubstr("a tile:xla ranker ranks tile configs, not a layout graph's"));
  const tpuperf::Ranker layout(TrainedRun::run, "layout:nlp:random");
  const std::string msg = error_of([&] { layout.rank_file(TrainedRun::tile_file); });
  EXPECT_THAT(msg, HasSubstr(TrainedRun::tile_file));
  EXPECT_THAT(msg, HasSubstr("no such member"));  // a layout file's node_config_ids
}

TEST(Ranker, MalformedInputNamesGraphAndKey) {
  const tpuperf::Ranker tile(TrainedRun::run, "tile:xla");
  TileInput in = tile_input(TrainedRun::tile_file);
  TileInput ragged = in;
  ragged.configs.config_feat.pop_back();
  std::string msg = error_of([&] { tile.rank(ragged.graph, ragged.configs); });
  EXPECT_THAT(msg, HasSubstr(in.graph.name));
  EXPECT_THAT(msg, HasSubstr("config_feat"));
  EXPECT_THAT(msg, HasSubstr("not a multiple of 24"));
  TileInput bad_edge = in;
  bad_edge.graph.edge_index.at(1) = bad_edge.graph.num_nodes;
  msg = error_of([&] { tile.rank(bad_edge.graph, bad_edge.configs); });
  EXPECT_THAT(msg, HasSubstr("edge_index"));
  EXPECT_THAT(msg, HasSubstr("outside [0, " + std::to_string(in.graph.num_nodes) + ")"));

  const tpuperf::Ranker layout(TrainedRun::run, "layout:nlp:random");
  LayoutInput lin = layout_input(TrainedRun::layout_file);
  lin.configs.node_config_feat.resize(lin.configs.node_config_feat.size() - 18);
  msg = error_of([&] { layout.rank(lin.graph, lin.configs); });
  EXPECT_THAT(msg, HasSubstr(lin.graph.name));
  EXPECT_THAT(msg, HasSubstr("node_config_feat"));

  const std::string not_npz = TrainedRun::work + "/not_a_zip.npz";
  std::ofstream(not_npz) << "not a zip";
  EXPECT_THAT(error_of([&] { tile.rank_file(not_npz); }), HasSubstr(not_npz));
}
