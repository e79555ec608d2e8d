// tpuperf-synth: the generated tree is in the real format (every file loads and validates
// with the real readers), deterministic per seed, has the release's quirks, and the cost
// model behind it behaves physically (checked against hand-computed values).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "common/graph/graph.h"
#include "common/formats/npz_reader.h"
#include "pipeline/featurize/node_features.h"
#include "pipeline/featurize/opcodes.h"
#include "pipeline/synth/simulator.h"
#include "pipeline/synth/synth.h"

namespace fs = std::filesystem;
using namespace tpuperf;
using namespace tpuperf::synth;

namespace {

std::string make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "tpuperf_synth_XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::vector<std::string> npz_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npz") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Relative paths of every file below root, sorted.
std::vector<std::string> all_files(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The fold-grouping rule, written independently of the generator: letters up to the
// first digit, '.', '_' or '-'.
std::string leading_word(const std::string& name) {
  std::smatch m;
  std::regex_search(name, m, std::regex("^[^0-9._-]*"));
  return m.str();
}

bool is_hex32(const std::string& s) { return std::regex_match(s, std::regex("[0-9a-f]{32}")); }

// Spearman correlation (ties broken by position: the runtimes have measurement noise).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    for (size_t i = 0; i < v.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size(); ++i) r[idx[i]] = static_cast<double>(i);
    return r;
  };
  auto ra = ranks(a), rb = ranks(b);
  double n = static_cast<double>(a.size()), ma = (n - 1) / 2, num = 0, da = 0, db = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (ra[i] - ma) * (rb[i] - ma);
    da += (ra[i] - ma) * (ra[i] - ma);
    db += (rb[i] - ma) * (rb[i] - ma);
  }
  return da > 0 && db > 0 ? num / std::sqrt(da * db) : 0.0;
}

class SynthTree : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SynthOptions o;
    o.scale = "tiny";
    o.seed = 7;
    o.threads = 2;
    o.out_dir = make_temp_dir();
    stats_ = generate_tree(o);
    root_ = o.out_dir;
    // Same seed, another thread count: must be byte-identical.
    o.out_dir = make_temp_dir();
    o.threads = 1;
    generate_tree(o);
    same_ = o.out_dir;
    o.out_dir = make_temp_dir();
    o.seed = 8;
    generate_tree(o);
    other_ = o.out_dir;
  }
  static void TearDownTestSuite() {
    for (const auto& d : {root_, same_, other_}) fs::remove_all(d);
  }

  static std::string dir(const Collection& c, const std::string& split) {
    return c.split_dir(root_ + "/npz", split);
  }

  static std::string root_, same_, other_;
  static SynthStats stats_;
};

std::string SynthTree::root_, SynthTree::same_, SynthTree::other_;
SynthStats SynthTree::stats_;

TEST_F(SynthTree, EveryFileLoadsAndValidatesWithTheExpectedCounts) {
  const ScaleParams sp = scale_params("tiny");
  int64_t files = 0;
  for (const auto& c : Collection::all()) {
    for (size_t s = 0; s < kSplits.size(); ++s) {
      auto list = npz_files(dir(c, kSplits[s]));
      const int64_t want = c.kind == Kind::Tile ? sp.tile_graphs[s] : sp.layout_graphs[s];
      EXPECT_EQ(static_cast<int64_t>(list.size()), want) << c.id() << " " << kSplits[s];
      for (const auto& f : list) {
        if (c.kind == Kind::Tile) {
          TileGraph g = load_tile_graph(f);
          EXPECT_GE(g.num_nodes, 2) << f;
          EXPECT_LE(g.num_nodes, 400) << f;
          EXPECT_GE(g.num_configs(), 8) << f;
        } else {
          LayoutGraph g = load_layout_graph(f);
          EXPECT_GE(g.num_config_nodes(), 20) << f;
          EXPECT_GE(g.num_nodes, 100) << f;
          if (kSplits[s] == "test") {
            EXPECT_EQ(g.num_configs(), sp.test_configs) << f;
          }
        }
        ++files;
      }
    }
  }
  // Plus one truth file per test graph.
  const int64_t truths = sp.tile_graphs[2] + 4 * sp.layout_graphs[2];
  EXPECT_EQ(stats_.files, files + truths);
  EXPECT_GT(stats_.bytes, 0u);
}

TEST_F(SynthTree, TestFilesHideTheirRuntimesInTruthFiles) {
  for (const auto& c : Collection::all()) {
    for (const auto& f : npz_files(dir(c, "test"))) {
      const std::string stem = file_stem(f);
      EXPECT_TRUE(is_hex32(stem)) << f;
      const std::string truth = truth_dir(root_, c) + "/" + stem + ".npz";
      ASSERT_TRUE(fs::exists(truth)) << truth;
      NpzReader r(truth);
      auto runtime = r.read("config_runtime");
      EXPECT_EQ(runtime.dtype, DType::I8);
      auto rt = runtime.to_int64();
      for (int64_t x : rt) EXPECT_GT(x, 0) << truth;
      if (c.kind == Kind::Tile) {
        TileGraph g = load_tile_graph(f);
        ASSERT_EQ(static_cast<int64_t>(rt.size()), g.num_configs()) << f;
        for (int64_t x : g.config_runtime) EXPECT_EQ(x, 0) << f;
        for (int64_t x : g.config_runtime_normalizers) EXPECT_EQ(x, 1) << f;
        auto norm = r.read("config_runtime_normalizers");
        EXPECT_EQ(norm.dtype, DType::I8);
        for (int64_t x : norm.to_int64()) EXPECT_GT(x, 0) << truth;
      } else {
        LayoutGraph g = load_layout_graph(f);
        ASSERT_EQ(static_cast<int64_t>(rt.size()), g.num_configs()) << f;
        for (int64_t x : g.config_runtime) EXPECT_EQ(x, 0) << f;
      }
    }
  }
}

TEST_F(SynthTree, TrainNamesCarryAtLeastFourModelFamilies) {
  for (const auto& c : Collection::all()) {
    std::set<std::string> families;
    for (const auto& f : npz_files(dir(c, "train"))) {
      const std::string stem = file_stem(f);
      EXPECT_FALSE(is_hex32(stem)) << f;
      families.insert(leading_word(stem));
      EXPECT_FALSE(leading_word(stem).empty()) << f;
    }
    EXPECT_GE(families.size(), 4u) << c.id();
  }
}

TEST_F(SynthTree, SameSeedGivesByteIdenticalTreesOtherSeedsDiffer) {
  const auto files = all_files(root_);
  ASSERT_EQ(files, all_files(same_));
  for (const auto& f : files)
    EXPECT_EQ(read_bytes(root_ + "/" + f), read_bytes(same_ + "/" + f)) << f;
  // Another seed: other names and other contents.
  const auto others = all_files(other_);
  EXPECT_EQ(others.size(), files.size());
  EXPECT_NE(others, files);
  const std::string tile_train = "npz/tile/xla/train/";
  size_t differing = 0, compared = 0;
  for (size_t i = 0; i < files.size() && i < others.size(); ++i) {
    if (files[i].rfind(tile_train, 0) != 0 || others[i].rfind(tile_train, 0) != 0) continue;
    ++compared;
    differing += read_bytes(root_ + "/" + files[i]) != read_bytes(other_ + "/" + others[i]);
  }
  EXPECT_GT(compared, 0u);
  EXPECT_EQ(differing, compared);
}

TEST_F(SynthTree, ACollectionAloneIsTheSameAsInTheWholeTree) {
  SynthOptions o;
  o.scale = "tiny";
  o.seed = 7;
  o.out_dir = make_temp_dir();
  o.collections = {Collection::parse("layout:nlp:default")};
  generate_tree(o);
  const auto files = all_files(o.out_dir);
  EXPECT_FALSE(files.empty());
  for (const auto& f : files) {
    EXPECT_NE(f.find("layout/nlp/default/"), std::string::npos) << f;
    EXPECT_EQ(read_bytes(o.out_dir + "/" + f), read_bytes(root_ + "/" + f)) << f;
  }
  fs::remove_all(o.out_dir);
}

// Identical config rows of one file, as groups of row indices (re-measurements).
std::vector<std::vector<size_t>> same_rows(const std::vector<int8_t>& feat, size_t row) {
  std::map<std::vector<int8_t>, std::vector<size_t>> by_row;
  for (size_t i = 0; row > 0 && (i + 1) * row <= feat.size(); ++i) {
    auto begin = feat.begin() + static_cast<std::ptrdiff_t>(i * row);
    by_row[std::vector<int8_t>(begin, begin + static_cast<std::ptrdiff_t>(row))].push_back(i);
  }
  std::vector<std::vector<size_t>> out;
  for (auto& [values, rows] : by_row) out.push_back(rows);
  return out;
}

TEST_F(SynthTree, NoiseFreeRuntimesAreTheFilesWithoutTheirNoise) {
  SynthOptions o;
  o.scale = "tiny";
  o.seed = 7;
  o.threads = 2;
  o.noise_free = true;
  o.out_dir = make_temp_dir();
  generate_tree(o);
  // The release tree and its truth are the same as without the option.
  for (const auto& f : all_files(root_))
    EXPECT_EQ(read_bytes(o.out_dir + "/" + f), read_bytes(root_ + "/" + f)) << f;
  int64_t files = 0, rows = 0, noisy = 0, groups = 0;
  for (const auto& c : Collection::all()) {
    for (const auto& split : kSplits) {
      for (const auto& f : npz_files(dir(c, split))) {
        const std::string stem = file_stem(f);
        const std::string nf_path = noise_free_dir(o.out_dir, c, split) + "/" + stem + ".npz";
        ASSERT_TRUE(fs::exists(nf_path)) << nf_path;
        NpzReader nf(nf_path);
        const auto exact = nf.read("config_runtime").to_int64();
        // Measured runtimes: the file's, or for test files their truth file's.
        const std::string measured_path = split == "test" ? truth_dir(root_, c) + "/" + stem + ".npz" : f;
        const auto measured = NpzReader(measured_path).read("config_runtime").to_int64();
        ASSERT_EQ(exact.size(), measured.size()) << nf_path;
        for (size_t i = 0; i < exact.size(); ++i) {
          ASSERT_GT(exact[i], 0) << nf_path;
          // The noise is clipped to +-0.9%; the rounding adds at most 1 ns.
          const double ratio = static_cast<double>(measured[i]) / static_cast<double>(exact[i]);
          EXPECT_NEAR(ratio, 1.0, 0.009 + 1.0 / static_cast<double>(exact[i])) << nf_path << " row " << i;
          noisy += measured[i] != exact[i];
        }
        rows += static_cast<int64_t>(exact.size());
        std::vector<std::vector<size_t>> same;
        if (c.kind == Kind::Tile) {
          const TileGraph g = load_tile_graph(f);
          const auto norm = nf.read("config_runtime_normalizers").to_int64();
          const auto want = NpzReader(measured_path).read("config_runtime_normalizers").to_int64();
          EXPECT_EQ(norm, want) << nf_path;
          std::vector<int8_t> bytes(g.config_feat.size() * sizeof(float));
          std::memcpy(bytes.data(), g.config_feat.data(), bytes.size());
          same = same_rows(bytes, 24 * sizeof(float));
        } else {
          const LayoutGraph g = load_layout_graph(f);
          same = same_rows(g.node_config_feat, static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim);
        }
        // A re-measured config has one noise-free runtime.
        for (const auto& group : same) {
          for (size_t i : group) EXPECT_EQ(exact[i], exact[group[0]]) << nf_path << " row " << i;
          groups += group.size() > 1;
        }
        ++files;
      }
    }
  }
  EXPECT_EQ(files, static_cast<int64_t>(all_files(o.out_dir + "/noise_free").size()));
  EXPECT_GT(groups, 0);
  // The measurements do carry noise: most differ from the noise-free runtime.
  EXPECT_GT(noisy, rows / 2);
  fs::remove_all(o.out_dir);
}

TEST_F(SynthTree, GraphsAreTopologicalWithConsistentFeatures) {
  // The release featurizer's numbering (xla.PrimitiveType TUPLE = 13).
  const uint8_t kTupleOpcode = featurize::opcode_id("tuple");
  const int kTupleColumn = featurize::element_type_column(13);
  ASSERT_EQ(kTupleColumn, 18);
  for (const auto& c : Collection::all()) {
    for (const auto& split : kSplits) {
      for (const auto& f : npz_files(dir(c, split))) {
        GraphBase g = c.kind == Kind::Tile ? static_cast<GraphBase>(load_tile_graph(f))
                                           : static_cast<GraphBase>(load_layout_graph(f));
        for (int64_t e = 0; e < g.num_edges(); ++e) {
          EXPECT_GT(g.edge_index[2 * e], g.edge_index[2 * e + 1]) << f;
          if (e > 0) {
            std::pair<int64_t, int64_t> prev{g.edge_index[2 * e - 2], g.edge_index[2 * e - 1]};
            std::pair<int64_t, int64_t> cur{g.edge_index[2 * e], g.edge_index[2 * e + 1]};
            EXPECT_LT(prev, cur) << f;
          }
        }
        int roots = 0;
        for (int64_t n = 0; n < g.num_nodes; ++n) {
          const float* row = &g.node_feat[static_cast<size_t>(n * kNodeFeatDim)];
          roots += row[0] == 1.f;
          int hot = 0;
          for (int k = 2; k <= 20; ++k) hot += row[k] == 1.f;
          EXPECT_EQ(hot, 1) << f << " node " << n;
          // A tuple's type is TUPLE where the release's featurizer puts it (the generator
          // once wrote C128's column).
          const bool tuple = g.node_opcode[static_cast<size_t>(n)] == kTupleOpcode;
          EXPECT_EQ(row[kTupleColumn] == 1.f, tuple) << f << " node " << n;
          // Shape product and sum (columns 27, 28) match the dims (21..26).
          double prod = 1, sum = 0;
          for (int k = 21; k <= 26; ++k)
            if (row[k] != 0.f) {
              prod *= row[k];
              sum += row[k];
            }
          EXPECT_FLOAT_EQ(row[27], static_cast<float>(sum)) << f << " node " << n;
          EXPECT_FLOAT_EQ(row[28], static_cast<float>(prod)) << f << " node " << n;
        }
        EXPECT_GE(roots, 1) << f;
      }
    }
  }
}

TEST_F(SynthTree, TileConfigFeaturesAreBoundsWithSumsAndProducts) {
  for (const auto& f : npz_files(dir(Collection::parse("tile:xla"), "train"))) {
    TileGraph g = load_tile_graph(f);
    for (int64_t i = 0; i < g.num_configs(); ++i) {
      const float* row = &g.config_feat[static_cast<size_t>(i * kTileConfigDim)];
      for (int block = 0; block < 3; ++block) {
        const float* b = row + 8 * block;
        double prod = 1, sum = 0;
        int n = 0;
        for (int k = 0; k < 6; ++k)
          if (b[k] != 0.f) {
            prod *= b[k];
            sum += b[k];
            ++n;
          }
        EXPECT_FLOAT_EQ(b[6], static_cast<float>(sum)) << f;
        EXPECT_FLOAT_EQ(b[7], static_cast<float>(n == 0 ? 0.0 : prod)) << f;
      }
      EXPECT_GT(row[15], 0.f) << f;  // the output tile is never empty
    }
  }
}

TEST_F(SynthTree, LayoutFilesHoldConfigurableOpsDefaultsAndDuplicates) {
  for (const auto& c : Collection::all()) {
    if (c.kind != Kind::Layout) continue;
    for (const auto& f : npz_files(dir(c, "train"))) {
      LayoutGraph g = load_layout_graph(f);
      for (int64_t id : g.node_config_ids) {
        uint8_t op = g.node_opcode[static_cast<size_t>(id)];
        EXPECT_TRUE(op == 26 || op == 34 || op == 75) << f << " opcode " << int(op);
      }
      ASSERT_GE(g.node_splits.size(), 2u);
      EXPECT_EQ(g.node_splits.front(), 0);
      EXPECT_EQ(g.node_splits.back(), g.num_nodes);
      const size_t width = static_cast<size_t>(g.num_config_nodes() * kLayoutConfigDim);
      std::map<std::vector<int8_t>, std::vector<int64_t>> runtimes;
      for (int64_t i = 0; i < g.num_configs(); ++i) {
        auto begin = g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(i * width);
        runtimes[std::vector<int8_t>(begin, begin + static_cast<std::ptrdiff_t>(width))].push_back(
            g.config_runtime[static_cast<size_t>(i)]);
      }
      const std::vector<int8_t> all_default(width, -1);
      ASSERT_TRUE(runtimes.count(all_default)) << f;
      EXPECT_GE(runtimes[all_default].size(), 2u) << f;
      size_t duplicated = 0;
      for (const auto& [config, rts] : runtimes) {
        if (rts.size() < 2) continue;
        ++duplicated;
        auto [lo, hi] = std::minmax_element(rts.begin(), rts.end());
        EXPECT_LT(static_cast<double>(*hi) / static_cast<double>(*lo), 1.02) << f;
      }
      EXPECT_GE(duplicated, 1u) << f;
    }
  }
}

TEST_F(SynthTree, RandomSearchSpreadsWiderThanDefaultSearch) {
  for (const std::string src : {"xla", "nlp"}) {
    double spread[2] = {0, 0};
    int count[2] = {0, 0};
    const std::string searches[2] = {"random", "default"};
    for (int s = 0; s < 2; ++s) {
      Collection c = Collection::parse("layout:" + src + ":" + searches[s]);
      for (const std::string split : {"train", "valid"})
        for (const auto& f : npz_files(dir(c, split))) {
          LayoutGraph g = load_layout_graph(f);
          auto [lo, hi] = std::minmax_element(g.config_runtime.begin(), g.config_runtime.end());
          spread[s] += static_cast<double>(*hi) / static_cast<double>(*lo);
          ++count[s];
        }
    }
    ASSERT_GT(count[0], 0);
    ASSERT_GT(count[1], 0);
    EXPECT_GT(spread[0] / count[0], spread[1] / count[1]) << src;
  }
}

// The runtimes are a function of what the files hold: simple rules read off the features
// rank configs better than chance.
TEST_F(SynthTree, RuntimesFollowTheFeatures) {
  // Tile: bigger output tiles (fewer grid steps) run faster on the whole.
  double tile_corr = 0;
  int tile_n = 0;
  for (const auto& f : npz_files(dir(Collection::parse("tile:xla"), "train"))) {
    TileGraph g = load_tile_graph(f);
    std::vector<double> tile_size, runtime;
    for (int64_t i = 0; i < g.num_configs(); ++i) {
      tile_size.push_back(-g.config_feat[static_cast<size_t>(i * kTileConfigDim + 15)]);
      runtime.push_back(static_cast<double>(g.config_runtime[static_cast<size_t>(i)]));
    }
    tile_corr += spearman(tile_size, runtime);
    ++tile_n;
  }
  EXPECT_GT(tile_corr / tile_n, 0.2);
  // Layout random search: the more nodes depart from the compiler default, the slower.
  for (const std::string src : {"xla", "nlp"}) {
    double corr = 0;
    int n = 0;
    for (const auto& f : npz_files(dir(Collection::parse("layout:" + src + ":random"), "train"))) {
      LayoutGraph g = load_layout_graph(f);
      const size_t width = static_cast<size_t>(g.num_config_nodes() * kLayoutConfigDim);
      std::vector<double> departures, runtime;
      for (int64_t i = 0; i < g.num_configs(); ++i) {
        double d = 0;
        for (size_t k = 0; k < width; k += kLayoutConfigDim)
          d += g.node_config_feat[static_cast<size_t>(i) * width + k] != -1;
        departures.push_back(d);
        runtime.push_back(static_cast<double>(g.config_runtime[static_cast<size_t>(i)]));
      }
      corr += spearman(departures, runtime);
      ++n;
    }
    EXPECT_GT(corr / n, 0.2) << src;
  }
}

// ----------------------------------------------------------------------- the cost model

TileProblem square_dot(int64_t size) {
  TileProblem p;
  p.kind = TileKind::Dot;
  p.out_dims = {size, size};
  p.out_minor_to_major = {1, 0};
  p.in_bytes = p.out_bytes = 2;
  p.contraction = size;
  p.num_inputs = 0;
  p.vpu_ops = 0;
  return p;
}

TEST(TileCostModel, WorkingSetMatchesAHandCount) {
  // 512 x 512 output tile, 512-wide contraction tile, bf16: lhs and rhs tiles 512 KiB
  // each, double-buffered (2 MiB); output tile 512 KiB double-buffered (1 MiB); the split
  // contraction (4096 / 512 = 8 steps) keeps an f32 accumulator (1 MiB).
  TileProblem p = square_dot(4096);
  EXPECT_DOUBLE_EQ(tile_working_set_bytes(p, {{512, 512}, 512}), 4.0 * 1024 * 1024);
  // Unsplit contraction: no accumulator; lhs and rhs 4 MiB each, double-buffered.
  EXPECT_DOUBLE_EQ(tile_working_set_bytes(p, {{512, 512}, 4096}),
                   2.0 * 8 * 1024 * 1024 + 2.0 * 512 * 1024);
}

TEST(TileCostModel, OverflowingVmemIsSlowerThanAFittingTile) {
  TileProblem p = square_dot(4096);
  TileConfig fits{{512, 512}, 512}, overflows{{1024, 1024}, 4096};
  ASSERT_LT(tile_working_set_bytes(p, fits), tpu_core().vmem_bytes);
  ASSERT_GT(tile_working_set_bytes(p, overflows), tpu_core().vmem_bytes);
  // The overflowing tile has 8x fewer steps, yet spills.
  EXPECT_GT(tile_runtime_ns(p, overflows), tile_runtime_ns(p, fits));
}

TEST(TileCostModel, MoreGridStepsAreSlower) {
  TileProblem p;
  p.kind = TileKind::Loop;
  p.out_dims = {1024, 4096};
  p.out_minor_to_major = {1, 0};
  p.num_inputs = 2;
  const std::vector<TileConfig> fewer_steps = {
      {{8, 128}, 1}, {{16, 128}, 1}, {{16, 256}, 1}, {{64, 512}, 1}, {{128, 1024}, 1}};
  for (size_t i = 1; i < fewer_steps.size(); ++i) {
    ASSERT_LT(tile_working_set_bytes(p, fewer_steps[i]), tpu_core().vmem_bytes);
    EXPECT_GT(tile_runtime_ns(p, fewer_steps[i - 1]), tile_runtime_ns(p, fewer_steps[i])) << i;
  }
}

TEST(TileCostModel, PaddingWasteCosts) {
  // 1152 columns: a 1024-wide tile needs 2 steps over 2048 columns; 1152 needs one.
  TileProblem p;
  p.kind = TileKind::Loop;
  p.out_dims = {64, 1152};
  p.out_minor_to_major = {1, 0};
  EXPECT_GT(tile_runtime_ns(p, {{64, 1024}, 1}), tile_runtime_ns(p, {{64, 1152}, 1}));
  // A minor dim of 100 pads to 128 lanes: same cost as 128 real columns.
  TileProblem a = p, b = p;
  a.out_dims = {64, 100};
  b.out_dims = {64, 128};
  EXPECT_DOUBLE_EQ(tile_runtime_ns(a, {{64, 100}, 1}), tile_runtime_ns(b, {{64, 128}, 1}));
}

TEST(TileCostModel, DefaultTilingFitsAndIsNearTheBest) {
  for (int64_t size : {256, 1024, 4096}) {
    TileProblem p = square_dot(size);
    TileConfig def = default_tile_config(p);
    EXPECT_LE(tile_working_set_bytes(p, def), tpu_core().vmem_bytes);
    double best = 1e300;
    for (int64_t a : tile_candidates(p, 0))
      for (int64_t b : tile_candidates(p, 1))
        for (int64_t k : k_tile_candidates(p))
          best = std::min(best, tile_runtime_ns(p, {{a, b}, k}));
    EXPECT_LE(tile_runtime_ns(p, def), 1.5 * best) << size;
  }
}

TEST(TileCostModel, ConfigFeaturesHoldTheTiles) {
  TileProblem p = square_dot(4096);
  auto f = tile_config_features(p, {{256, 512}, 1024});
  ASSERT_EQ(f.size(), 24u);
  // kernel_bounds: the rhs tile (contraction x columns).
  EXPECT_EQ(f[0], 1024.f);
  EXPECT_EQ(f[1], 512.f);
  EXPECT_EQ(f[6], 1536.f);
  EXPECT_EQ(f[7], 1024.f * 512.f);
  // output_bounds.
  EXPECT_EQ(f[8], 256.f);
  EXPECT_EQ(f[9], 512.f);
  EXPECT_EQ(f[15], 256.f * 512.f);
  // input_bounds empty: product 0.
  EXPECT_EQ(f[22], 0.f);
  EXPECT_EQ(f[23], 0.f);
}

TEST(LayoutCostModel, PaddingFactorCountsTiles) {
  EXPECT_DOUBLE_EQ(pad_factor({256, 96}, {0, 1}), 1.0);
  EXPECT_DOUBLE_EQ(pad_factor({256, 96}, {1, 0}), 128.0 / 96.0);
  EXPECT_DOUBLE_EQ(pad_factor({20, 256}, {1, 0}), 24.0 / 20.0);
  EXPECT_DOUBLE_EQ(pad_factor({3, 512}, {0, 1}), 32.0);  // 128/3 lanes per element, capped
}

TEST(LayoutCostModel, ReshapeIsFreeOnlyBetweenRowMajorLayouts) {
  LayoutNode n;
  n.is_reshape = true;
  n.tensors[0] = {{64, 1024}, 4, -1};
  n.tensors[1] = {{64, 8, 128}, 4, -1};
  n.has_slot[1] = true;
  LayoutChoice bitcast, copy;
  bitcast.perm[0] = {1, 0};
  bitcast.perm[1] = {2, 1, 0};
  copy.perm[0] = {1, 0};
  copy.perm[1] = {2, 0, 1};  // 128 lanes minor, 64 rows second: no padding
  EXPECT_LT(layout_node_cost_ns(n, bitcast), 100.0);
  // A copy reads and writes 64 x 1024 f32 (256 KiB) at 1.2 TB/s, padding 1x.
  const double bytes = 64.0 * 1024 * 4;
  EXPECT_NEAR(layout_node_cost_ns(n, copy), 500.0 + 2 * bytes / 1200.0, 1e-6);
}

TEST(LayoutCostModel, MismatchedNeighboursPayACopy) {
  // Two dots, the first's output feeding the second's lhs; each group can keep row-major
  // or transpose its layouts.
  LayoutProblem p;
  for (int i = 0; i < 2; ++i) {
    LayoutNode n;
    n.node_id = i;
    n.group = i;
    n.flops = 2.0 * 512 * 512 * 512;
    for (int s = 0; s < 3; ++s) {
      n.tensors[s] = {{512, 512}, 2, 1};
      n.has_slot[s] = true;
    }
    p.nodes.push_back(n);
    LayoutChoice rm, tr;
    for (int s = 0; s < 3; ++s) {
      rm.perm[s] = {1, 0};
      tr.perm[s] = {0, 1};
    }
    rm.is_default = true;
    p.options.push_back({rm, tr});
  }
  LayoutLink l;
  l.producer = 0;
  l.consumer = 1;
  l.slot = 1;
  l.dims = {512, 512};
  l.elements = 512 * 512;
  l.bytes = 2;
  p.links.push_back(l);
  LayoutCostModel model(p);
  const double copy = 400.0 + 6.0 * 512 * 512 * 2 / 1200.0;
  const double agree = model.runtime_ns({0, 0});
  EXPECT_NEAR(model.runtime_ns({0, 1}) - agree,
              copy + model.node_cost_ns(1, 1) - model.node_cost_ns(1, 0), 1e-6);
  EXPECT_NEAR(model.runtime_ns({1, 1}), model.node_cost_ns(0, 1) + model.node_cost_ns(1, 1), 1e-6);
}

TEST(SynthScales, UnknownScaleIsAnError) {
  EXPECT_THROW(scale_params("huge"), Error);
  EXPECT_NO_THROW(scale_params("bench"));
}

}  // namespace
