// The installable ranker library (trainer/rank/include/tpuperf/ranker.h), linked as users
// link it: the shared tpuperf_ranker, plus common/ only to read npz files into the
// library's arrays. Once per binary, a run directory is trained on a tiny generated tree
// by the real tools (tpuperf-synth, tpuperf-preprocess, tpuperf-train: about 10 s, one
// process each, in the build directory); the tests then load it and rank its test graphs:
// load errors name the directory and file, rankings are permutations, deterministic and
// equal to tpuperf-rank's, and malformed or wrong-kind inputs are refused by name; adapted
// to measured configs of a graph (blended or fine-tuned), it ranks that graph only,
// deterministically for a seed, and learns from the measurements what the run as trained
// gets backwards; its suggestions of what to measure next leave out measured configs, are
// deterministic, and with neither exploration nor diversity follow its ranking.
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

#include "common/base/random.h"
#include "common/graph/graph.h"
#include "common/metrics/metrics.h"

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

// A copy of the trained run whose first_pick.json says what its tile rankings put first.
std::string run_with_first_pick(const std::string& name, bool default_first) {
  const std::string dir = TrainedRun::work + "/" + name;
  fs::remove_all(dir);
  fs::copy(TrainedRun::run, dir, fs::copy_options::recursive);
  std::ofstream(dir + "/first_pick.json")
      << "{\"tile:xla\": {\"setting\": \"auto\", \"default_first\": " << (default_first ? "true" : "false")
      << ", \"valid_graphs\": 3, \"valid_top1_model\": 1.5, \"valid_top1_default\": 1.2, \"keep_default\": true}}\n";
  return dir;
}

TEST(Ranker, RunsFirstPickComesFirst) {
  const TileInput in = tile_input(TrainedRun::tile_file);
  const std::string model_dir = run_with_first_pick("run_model_first", false);
  const std::string default_dir = run_with_first_pick("run_default_first", true);
  const tpuperf::Ranking model = tpuperf::Ranker(model_dir, "tile:xla").rank(in.graph, in.configs);
  const tpuperf::Ranking first = tpuperf::Ranker(default_dir, "tile:xla").rank(in.graph, in.configs);
  // Config 0 first, then the model's order without it; the scores are the model's.
  ASSERT_GT(model.order.size(), 2u);
  std::vector<int64_t> expected = {0};
  for (int64_t c : model.order)
    if (c != 0) expected.push_back(c);
  EXPECT_EQ(first.order, expected);
  EXPECT_EQ(first.score, model.score);
  // The command line reads the same file.
  const std::string out = TrainedRun::work + "/rank_first.csv";
  ASSERT_TRUE(run("'" + std::string(TPUPERF_BIN_DIR) + "/tpuperf-rank' --run '" + default_dir + "' --csv '" +
                      TrainedRun::tile_file + "'",
                  out, out + ".err"));
  EXPECT_THAT(read_text(out), HasSubstr("," + std::to_string(expected[0]) + ";" + std::to_string(expected[1]) + ";"));
  // A suggested batch opens with it too, unless it was measured.
  tpuperf::SuggestOptions batch;
  batch.count = 3;
  EXPECT_EQ(tpuperf::Ranker(default_dir, "tile:xla").suggest(in.graph, in.configs, batch).configs.at(0), 0);
  batch.exclude = {0};
  for (int64_t c : tpuperf::Ranker(default_dir, "tile:xla").suggest(in.graph, in.configs, batch).configs) EXPECT_NE(c, 0);
  // Layout rankings ignore it.
  const LayoutInput lin = layout_input(TrainedRun::layout_file);
  EXPECT_EQ(tpuperf::Ranker(default_dir, "layout:nlp:random").rank(lin.graph, lin.configs).order,
            tpuperf::Ranker(model_dir, "layout:nlp:random").rank(lin.graph, lin.configs).order);
}

// ---------------------------------------------------------------- adaptation (issue 48)

namespace {

// Candidates grown to n configs: config k >= the file's takes each of its values from a
// config of the file picked by a hash (tile: per column; layout: per configurable node),
// so that there are enough to measure some and score the rest.
TileInput grown(TileInput in, size_t n) {
  std::vector<float>& f = in.configs.config_feat;
  const size_t have = f.size() / 24;
  for (size_t k = have; k < n; ++k)
    for (size_t j = 0; j < 24; ++j) f.push_back(f[(tpuperf::splitmix64(k * 24 + j) % have) * 24 + j]);
  return in;
}

LayoutInput grown(LayoutInput in, size_t n) {
  std::vector<int8_t>& f = in.configs.node_config_feat;
  const size_t nc = in.configs.node_config_ids.size(), have = layout_configs(in);
  for (size_t k = have; k < n; ++k)
    for (size_t m = 0; m < nc; ++m) {
      const size_t from = ((tpuperf::splitmix64(k * nc + m) % have) * nc + m) * 18;
      f.insert(f.end(), f.begin() + from, f.begin() + from + 18);
    }
  return in;
}

// The rows of the given configs (width values each).
template <typename T>
std::vector<T> rows(const std::vector<T>& values, const std::vector<int64_t>& configs, size_t width) {
  std::vector<T> out;
  for (int64_t c : configs) out.insert(out.end(), values.begin() + c * width, values.begin() + (c + 1) * width);
  return out;
}

TileInput measured(const TileInput& in, const std::vector<int64_t>& configs) {
  return {in.graph, {rows(in.configs.config_feat, configs, 24)}};
}

LayoutInput measured(const LayoutInput& in, const std::vector<int64_t>& configs) {
  return {in.graph,
          {in.configs.node_config_ids, rows(in.configs.node_config_feat, configs, in.configs.node_config_ids.size() * 18)}};
}

std::vector<double> pick(const std::vector<double>& values, const std::vector<int64_t>& at) {
  std::vector<double> out;
  for (int64_t i : at) out.push_back(values[static_cast<size_t>(i)]);
  return out;
}

// Runtimes that reverse a ranking: the config ranked best is the slowest, the one ranked
// worst the fastest (100 + its place from the end), so the run as trained gets every pair
// wrong and only what adaptation learns from the measurements can set it right.
std::vector<double> reversed_runtimes(const tpuperf::Ranking& r) {
  std::vector<double> runtime(r.order.size());
  for (size_t p = 0; p < r.order.size(); ++p) runtime[static_cast<size_t>(r.order[p])] = 100.0 + static_cast<double>(r.order.size() - 1 - p);
  return runtime;
}

// Configs 0..n-1 split at random (seeded) into `count` measured ones and the rest.
std::pair<std::vector<int64_t>, std::vector<int64_t>> split_configs(size_t n, size_t count, uint64_t seed) {
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  for (size_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[tpuperf::mix_seed(seed, i) % (i + 1)]);
  return {{perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(count)},
          {perm.begin() + static_cast<std::ptrdiff_t>(count), perm.end()}};
}

// The tile test file with runtimes of the given configs (runtime / normalizer = runtimes[i])
// and 0 (not measured) for the others, written as NAME in the work directory.
std::string write_measured_tile(const std::vector<int64_t>& configs, const std::vector<double>& runtimes,
                                const std::string& name) {
  tpuperf::TileGraph g = tpuperf::load_tile_graph(TrainedRun::tile_file);
  std::fill(g.config_runtime.begin(), g.config_runtime.end(), 0);
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto c = static_cast<size_t>(configs[i]);
    g.config_runtime[c] = static_cast<int64_t>(runtimes[i]) * g.config_runtime_normalizers[c];
  }
  const std::string path = TrainedRun::work + "/" + name;
  tpuperf::save_tile_graph(path, g, false);
  return path;
}

// Distinct integer runtimes of n measured configs.
std::vector<double> first_runtimes(size_t n) {
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = 1000.0 + 10.0 * static_cast<double>(i);
  return r;
}

}  // namespace

TEST(Adapt, AdaptedRankerRanksItsGraphOnly) {
  const tpuperf::Ranker ranker(TrainedRun::run, "tile:xla");
  const TileInput a = tile_input(TrainedRun::tile_file);
  const std::string other_file = npz_files(TrainedRun::work + "/gen/npz/tile/xla/test").at(1);
  const TileInput b = tile_input(other_file);
  const std::vector<int64_t> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  const tpuperf::Ranker tuned = ranker.adapted(a.graph, measured(a, eight).configs, first_runtimes(8));
  expect_permutation(tuned.rank(a.graph, a.configs), a.configs.config_feat.size() / 24);
  std::string msg = error_of([&] { tuned.rank(b.graph, b.configs); });
  EXPECT_THAT(msg, HasSubstr("graph " + b.graph.name + " is not the graph this ranker was adapted to (" +
                             a.graph.name + ")"));
  // One changed node feature is another graph.
  TileInput changed = a;
  changed.graph.node_feat[3] += 1;
  EXPECT_THAT(error_of([&] { tuned.rank(changed.graph, changed.configs); }), HasSubstr("is not the graph"));
  // The file forms name the files.
  const tpuperf::Ranker from_file = ranker.adapted_file(write_measured_tile(eight, first_runtimes(8), "measured_a.npz"));
  msg = error_of([&] { from_file.rank_file(other_file); });
  EXPECT_THAT(msg, HasSubstr(other_file));
  EXPECT_THAT(msg, HasSubstr("(" + TrainedRun::work + "/measured_a.npz)"));
  // An adapted ranker adapts further to its own graph only.
  EXPECT_THAT(error_of([&] { tuned.adapted(b.graph, measured(b, eight).configs, first_runtimes(8)); }),
              HasSubstr("is not the graph this ranker was adapted to"));

  // Layout: the same nodes with other configurable nodes are another graph.
  const tpuperf::Ranker layout(TrainedRun::run, "layout:nlp:random");
  const LayoutInput l = layout_input(TrainedRun::layout_file);
  const tpuperf::Ranker tuned_layout = layout.adapted(l.graph, measured(l, eight).configs, first_runtimes(8));
  expect_permutation(tuned_layout.rank(l.graph, l.configs), layout_configs(l));
  // The last configurable node moved to the first node that is not one.
  LayoutInput moved = l;
  std::vector<int64_t>& ids = moved.configs.node_config_ids;
  int64_t free_node = 0;
  while (std::find(ids.begin(), ids.end(), free_node) != ids.end()) ++free_node;
  ids.back() = free_node;
  EXPECT_THAT(error_of([&] { tuned_layout.rank(moved.graph, moved.configs); }),
              HasSubstr("edges or configurable nodes differ"));
}

TEST(Adapt, MeasurementsTheBlendRejectsKeepTheRunsFirstPick) {
  const std::string dir = run_with_first_pick("run_default_first_adapt", true);
  const tpuperf::Ranker ranker(dir, "tile:xla");
  const TileInput a = tile_input(TrainedRun::tile_file);
  const tpuperf::Ranking before = ranker.rank(a.graph, a.configs);
  ASSERT_EQ(before.order.at(0), 0);
  // Too few measured configs for the ridge to replace the run: the blend is the run alone,
  // so the ranking, config 0 first, does not change.
  const std::vector<int64_t> some = {1, 2, 3};
  const tpuperf::Ranker tuned = ranker.adapted(a.graph, measured(a, some).configs, first_runtimes(3));
  ASSERT_NE(tuned.adaptation(), nullptr);
  ASSERT_EQ(tuned.adaptation()->weight_fit, 0.0) << tuned.adaptation()->blend;
  EXPECT_EQ(tuned.rank(a.graph, a.configs).order, before.order);
}

TEST(Adapt, SameSeedSameModelsAndTheOriginalUntouched) {
  const tpuperf::Ranker ranker(TrainedRun::run, "layout:nlp:random");
  const LayoutInput l = layout_input(TrainedRun::layout_file);
  const tpuperf::Ranking before = ranker.rank(l.graph, l.configs);
  const auto [measured_configs, rest] = split_configs(layout_configs(l), 24, 1);
  const LayoutInput m = measured(l, measured_configs);
  const std::vector<double> runtimes = pick(reversed_runtimes(before), measured_configs);
  tpuperf::AdaptOptions seed1;
  seed1.method = tpuperf::AdaptMethod::FineTune;
  seed1.seed = 1;
  const tpuperf::Ranking a = ranker.adapted(l.graph, m.configs, runtimes, seed1).rank(l.graph, l.configs);
  const tpuperf::Ranking b = ranker.adapted(l.graph, m.configs, runtimes, seed1).rank(l.graph, l.configs);
  EXPECT_EQ(a.score, b.score);
  EXPECT_EQ(a.order, b.order);
  EXPECT_NE(a.score, before.score);
  // Another seed draws other slates (24 measured configs, slates of 8) and dropout masks.
  tpuperf::AdaptOptions seed2 = seed1;
  seed2.seed = 2;
  EXPECT_NE(ranker.adapted(l.graph, m.configs, runtimes, seed2).rank(l.graph, l.configs).score, a.score);
  // The original ranker's models are not the adapted ones.
  EXPECT_EQ(ranker.rank(l.graph, l.configs).score, before.score);
  EXPECT_EQ(ranker.adaptation(), nullptr);

  // The blend: the same seed deals the same folds, the same ranking; the original ranks as
  // before (the fold models are shared, not changed).
  tpuperf::AdaptOptions blend;
  blend.seed = 1;
  const tpuperf::Ranking c = ranker.adapted(l.graph, m.configs, runtimes, blend).rank(l.graph, l.configs);
  EXPECT_EQ(ranker.adapted(l.graph, m.configs, runtimes, blend).rank(l.graph, l.configs).score, c.score);
  expect_permutation(c, layout_configs(l));
  EXPECT_EQ(ranker.rank(l.graph, l.configs).score, before.score);
}

TEST(Adapt, FileAndArraysAdaptAlikeAndTheResultSaysHow) {
  const tpuperf::Ranker ranker(TrainedRun::run, "tile:xla");
  const TileInput a = tile_input(TrainedRun::tile_file);
  const std::vector<int64_t> some = {3, 0, 7, 12, 5, 9, 1, 10, 14, 2};  // the file keeps them in its order
  std::vector<int64_t> in_file_order = some;
  std::sort(in_file_order.begin(), in_file_order.end());
  std::vector<double> runtimes = first_runtimes(some.size());
  const tpuperf::Ranker from_file = ranker.adapted_file(write_measured_tile(some, runtimes, "measured_some.npz"));
  std::vector<double> sorted_runtimes;
  for (int64_t c : in_file_order) sorted_runtimes.push_back(runtimes[std::find(some.begin(), some.end(), c) - some.begin()]);
  const tpuperf::Ranker from_arrays = ranker.adapted(a.graph, measured(a, in_file_order).configs, sorted_runtimes);
  EXPECT_EQ(from_file.rank(a.graph, a.configs).score, from_arrays.rank(a.graph, a.configs).score);

  // The default is the blend: 10 measured configs are too few to cross-validate, so the
  // run alone.
  const tpuperf::Adaptation* how = from_file.adaptation();
  ASSERT_NE(how, nullptr);
  EXPECT_EQ(how->graph, TrainedRun::work + "/measured_some.npz");
  EXPECT_EQ(how->measured_configs, 10);
  EXPECT_EQ(how->method, "blend");
  EXPECT_EQ(how->blend, "run");
  EXPECT_EQ(how->cv_folds, 0);
  EXPECT_TRUE(std::isnan(how->cv_tau));
  EXPECT_GT(how->seconds, 0);
  // 32 configs of the grown file (at least 16 distinct) fold 4 or 5 ways; the choice is
  // never worse on the folds.
  const TileInput big = grown(a, 64);
  std::vector<int64_t> some32(32);
  std::iota(some32.begin(), some32.end(), 32);
  const tpuperf::Ranker folded = ranker.adapted(big.graph, measured(big, some32).configs, first_runtimes(32));
  how = folded.adaptation();
  ASSERT_NE(how, nullptr);
  EXPECT_GE(how->cv_folds, 4);
  EXPECT_TRUE(std::isfinite(how->cv_tau_run) && std::isfinite(how->cv_tau));
  EXPECT_GE(how->cv_tau, how->cv_tau_run) << how->blend;
  // Fine-tuning at its defaults.
  tpuperf::AdaptOptions fine;
  fine.method = tpuperf::AdaptMethod::FineTune;
  const tpuperf::Ranker fine_tuned = ranker.adapted_file(TrainedRun::work + "/measured_some.npz", fine);
  how = fine_tuned.adaptation();
  ASSERT_NE(how, nullptr);
  EXPECT_EQ(how->method, "finetune");
  EXPECT_EQ(how->steps, tpuperf::kDefaultAdaptSteps);
  EXPECT_DOUBLE_EQ(how->lr, 0.001 * tpuperf::kDefaultAdaptLrFraction);  // the run's train.lr: the default
  EXPECT_EQ(how->slate, 10);  // the run's 16, at most the measured configs
  EXPECT_EQ(how->loss, "hinge");  // the run's train.tile_loss: the default
  EXPECT_GT(how->seconds, 0);
  EXPECT_TRUE(std::isfinite(how->first_loss) && std::isfinite(how->last_loss));
  tpuperf::AdaptOptions own;
  own.method = tpuperf::AdaptMethod::FineTune;
  own.steps = 7;
  own.lr = 0.01;
  own.slate = 4;
  own.seed = 9;
  const tpuperf::Ranker own_tuned = ranker.adapted(a.graph, measured(a, some).configs, runtimes, own);
  const tpuperf::Adaptation* mine = own_tuned.adaptation();
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine->graph, a.graph.name);
  EXPECT_EQ(mine->steps, 7);
  EXPECT_EQ(mine->lr, 0.01);
  EXPECT_EQ(mine->slate, 4);
  EXPECT_EQ(mine->seed, 9u);
}

TEST(Adapt, BadMeasurementsAreNamed) {
  const tpuperf::Ranker ranker(TrainedRun::run, "tile:xla");
  const TileInput a = tile_input(TrainedRun::tile_file);
  const TileInput four = measured(a, {0, 1, 2, 3});
  std::string msg = error_of([&] { ranker.adapted(a.graph, four.configs, {1, 2, 3}); });
  EXPECT_THAT(msg, HasSubstr(a.graph.name));
  EXPECT_THAT(msg, HasSubstr("runtimes"));
  EXPECT_THAT(msg, HasSubstr("3 runtimes for 4 measured configs"));
  EXPECT_THAT(error_of([&] { ranker.adapted(a.graph, four.configs, {1, 2, 0, 3}); }),
              HasSubstr("runtime of config 2 is 0"));
  EXPECT_THAT(error_of([&] { ranker.adapted(a.graph, four.configs, {1, 2, std::nan(""), 3}); }),
              HasSubstr("runtime of config 2"));
  EXPECT_THAT(error_of([&] { ranker.adapted(a.graph, measured(a, {0}).configs, {1}); }),
              HasSubstr("at least two measured configs"));
  tpuperf::AdaptOptions slate1;
  slate1.method = tpuperf::AdaptMethod::FineTune;
  slate1.slate = 1;
  EXPECT_THAT(error_of([&] { ranker.adapted(a.graph, four.configs, {1, 2, 3, 4}, slate1); }), HasSubstr("slate"));
  // A test file has no runtimes: adapting on it names the file and the key.
  msg = error_of([&] { ranker.adapted_file(TrainedRun::tile_file); });
  EXPECT_THAT(msg, HasSubstr(TrainedRun::tile_file));
  EXPECT_THAT(msg, HasSubstr("config_runtime"));
  EXPECT_THAT(msg, HasSubstr("holds no runtimes"));
  // A tile ranker adapts to tile graphs only.
  const LayoutInput l = layout_input(TrainedRun::layout_file);
  EXPECT_THAT(error_of([&] { ranker.adapted(l.graph, measured(l, {0, 1}).configs, {1, 2}); }),
              HasSubstr("ranks tile configs, not a layout graph's"));
}

// What the run as trained and the run adapted score on the configs not measured, and
// their runtimes.
struct Unmeasured {
  std::vector<double> trained, adapted, runtime;
};

// The run ranks `all`; their runtimes are set to the reverse of its order; `count` of them
// (drawn with a seed) are measured and the ranker adapted to them with default options.
template <typename Input>
Unmeasured adapted_to_reversed(const tpuperf::Ranker& ranker, const Input& all, size_t count,
                               tpuperf::AdaptMethod method) {
  const tpuperf::Ranking trained = ranker.rank(all.graph, all.configs);
  const std::vector<double> runtime = reversed_runtimes(trained);
  const auto [measured_configs, rest] = split_configs(runtime.size(), count, 3);
  tpuperf::AdaptOptions options;
  options.method = method;
  const tpuperf::Ranker tuned =
      ranker.adapted(all.graph, measured(all, measured_configs).configs, pick(runtime, measured_configs), options);
  return {pick(trained.score, rest), pick(tuned.rank(all.graph, all.configs).score, rest), pick(runtime, rest)};
}

// 64 of 160 configs are measured; on the other 96 the adapted ranker must do clearly better
// than the run as trained, which gets every pair wrong there: blended and fine-tuned.
TEST(Adapt, LearnsFromMeasurementsWhatTheRunRanksBackwards) {
  constexpr size_t kConfigs = 160, kMeasured = 64;
  for (const auto method : {tpuperf::AdaptMethod::Blend, tpuperf::AdaptMethod::FineTune}) {
    SCOPED_TRACE(method == tpuperf::AdaptMethod::Blend ? "blend" : "finetune");
    const Unmeasured tile = adapted_to_reversed(tpuperf::Ranker(TrainedRun::run, "tile:xla"),
                                                grown(tile_input(TrainedRun::tile_file), kConfigs), kMeasured, method);
    const double before = tpuperf::tile_slowdown_score_from_scores(tile.trained, tile.runtime);
    const double after = tpuperf::tile_slowdown_score_from_scores(tile.adapted, tile.runtime);
    EXPECT_LT(before, 0.5);
    EXPECT_GT(after, before + 0.4) << "tile score on the unmeasured configs";
    EXPECT_GT(tpuperf::kendall_tau(tile.adapted, tile.runtime), 0.5)
        << "tile Kendall tau before: " << tpuperf::kendall_tau(tile.trained, tile.runtime);

    const Unmeasured layout =
        adapted_to_reversed(tpuperf::Ranker(TrainedRun::run, "layout:nlp:random"),
                            grown(layout_input(TrainedRun::layout_file), kConfigs), kMeasured, method);
    const double tau_before = tpuperf::kendall_tau(layout.trained, layout.runtime);
    EXPECT_LT(tau_before, -0.9);
    EXPECT_GT(tpuperf::kendall_tau(layout.adapted, layout.runtime), 0.5)
        << "layout Kendall tau on the unmeasured configs, before: " << tau_before;
  }
}

TEST(Adapt, MeasurementsTheRankerUsesOrderTheFirstPlace) {
  // The run puts config 0 first; measurements that reverse its order are learnt (the
  // blend uses its ridge, or the models are fine-tuned), and then the scores order the
  // first place too.
  const std::string dir = run_with_first_pick("run_default_first_learnt", true);
  const TileInput all = grown(tile_input(TrainedRun::tile_file), 160);
  const tpuperf::Ranker ranker(dir, "tile:xla");
  const tpuperf::Ranking trained = ranker.rank(all.graph, all.configs);
  ASSERT_EQ(trained.order.at(0), 0);
  const std::vector<double> runtime = reversed_runtimes(trained);
  const auto [measured_configs, rest] = split_configs(runtime.size(), 64, 3);
  for (const auto method : {tpuperf::AdaptMethod::Blend, tpuperf::AdaptMethod::FineTune}) {
    tpuperf::AdaptOptions options;
    options.method = method;
    const tpuperf::Ranker tuned =
        ranker.adapted(all.graph, measured(all, measured_configs).configs, pick(runtime, measured_configs), options);
    if (method == tpuperf::AdaptMethod::Blend) {
      ASSERT_GT(tuned.adaptation()->weight_fit, 0.0) << tuned.adaptation()->blend;
    }
    const tpuperf::Ranking r = tuned.rank(all.graph, all.configs);
    const auto best = std::min_element(r.score.begin(), r.score.end()) - r.score.begin();
    EXPECT_EQ(r.score[r.order.at(0)], r.score[best]) << "the adapted scores' best is not first";
  }
}

TEST(Suggest, LeavesOutMeasuredConfigsAndIsDeterministic) {
  const tpuperf::Ranker ranker(TrainedRun::run, "layout:nlp:random");
  const LayoutInput l = layout_input(TrainedRun::layout_file);
  const tpuperf::Ranking r = ranker.rank(l.graph, l.configs);
  tpuperf::SuggestOptions o;
  o.count = 5;
  o.exclude = {r.order[0], r.order[1]};
  const tpuperf::Suggestion s = ranker.suggest(l.graph, l.configs, o);
  ASSERT_EQ(s.configs.size(), 5u);
  EXPECT_EQ(s.candidates, static_cast<int64_t>(layout_configs(l)));
  EXPECT_EQ(s.score.size(), 5u);
  EXPECT_EQ(s.uncertainty.size(), 5u);
  for (int64_t c : s.configs) EXPECT_TRUE(c != r.order[0] && c != r.order[1]) << c << " was measured";
  EXPECT_EQ(ranker.suggest(l.graph, l.configs, o).configs, s.configs);
  EXPECT_EQ(ranker.suggest_file(TrainedRun::layout_file, o).configs, s.configs);
  for (double u : s.uncertainty) EXPECT_GE(u, 0);
  // Neither exploration nor diversity: the ranking's order (the same standardized ensemble),
  // the measured ones left out.
  o.exploration = o.diversity = 0;
  o.count = 6;
  const tpuperf::Suggestion plain = ranker.suggest(l.graph, l.configs, o);
  EXPECT_EQ(plain.configs, std::vector<int64_t>(r.order.begin() + 2, r.order.begin() + 8));
  // An adapted ranker suggests from its adaptation, for its graph only.
  const auto [measured_configs, rest] = split_configs(layout_configs(l), 24, 1);
  const tpuperf::Ranker tuned =
      ranker.adapted(l.graph, measured(l, measured_configs).configs, pick(reversed_runtimes(r), measured_configs));
  o.exclude = measured_configs;
  for (int64_t c : tuned.suggest(l.graph, l.configs, o).configs)
    EXPECT_EQ(std::count(measured_configs.begin(), measured_configs.end(), c), 0) << c << " was measured";
  // Bad options name the option.
  o.count = 0;
  EXPECT_THAT(error_of([&] { ranker.suggest(l.graph, l.configs, o); }), HasSubstr("count"));
  o.count = 1;
  o.exclude = {static_cast<int64_t>(layout_configs(l))};
  EXPECT_THAT(error_of([&] { ranker.suggest(l.graph, l.configs, o); }), HasSubstr("exclude"));
  // A tile ranker suggests tile configs.
  const tpuperf::Ranker tile(TrainedRun::run, "tile:xla");
  const TileInput t = tile_input(TrainedRun::tile_file);
  EXPECT_EQ(tile.suggest(t.graph, t.configs).configs.size(),
            std::min<size_t>(8, t.configs.config_feat.size() / 24));
}
