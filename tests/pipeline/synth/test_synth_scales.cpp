// tpuperf-synth's release and stress scales and the converged-search runtime shape:
// the release plan holds the documented counts and size distributions and a fraction is a
// systematic sample of it; the stress plan holds every odd shape it promises, and the
// builders behind those shapes give the graphs they name; converged-search files have
// issue 20's statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/graph/graph.h"
#include "common/metrics/metrics.h"
#include "pipeline/synth/converged_search.h"
#include "pipeline/synth/layout_gen.h"
#include "pipeline/synth/release_plan.h"
#include "pipeline/synth/stress_plan.h"
#include "pipeline/synth/synth.h"
#include "pipeline/synth/tile_gen.h"
#include "tests/test_util.h"

using namespace tpuperf;
using namespace tpuperf::synth;

namespace {

std::vector<const GraphPlan*> in_split(const CollectionPlan& p, const std::string& split) {
  std::vector<const GraphPlan*> out;
  for (const auto& g : p.graphs)
    if (g.split == split) out.push_back(&g);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool has_ascii_letter(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); });
}

bool has_non_ascii(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

// Strict UTF-8: no stray continuation bytes, no truncated or overlong sequences.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size() || (len == 2 && c < 0xc2)) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += len;
  }
  return true;
}

}  // namespace

// ------------------------------------------------------------------------------ release

TEST(ReleasePlan, HoldsTheReleaseCountsPerSplit) {
  const std::map<std::string, std::vector<size_t>> want = {
      {"tile:xla", {5709, 676, 844}},          {"layout:xla:random", {69, 7, 8}},
      {"layout:xla:default", {61, 7, 8}},      {"layout:nlp:random", {207, 20, 17}},
      {"layout:nlp:default", {198, 20, 17}}};
  for (const auto& c : Collection::all()) {
    const CollectionPlan p = plan_release(c, 0);
    for (size_t s = 0; s < kSplits.size(); ++s)
      EXPECT_EQ(in_split(p, kSplits[s]).size(), want.at(c.id())[s]) << c.id() << " " << kSplits[s];
    std::set<std::string> names;
    for (const auto& g : p.graphs) names.insert(g.name);
    EXPECT_EQ(names.size(), p.graphs.size()) << c.id() << ": names are unique";
  }
}

TEST(ReleasePlan, LayoutSizesFollowTheDocumentedDistributions) {
  struct Want {
    const char* id;
    int64_t lo, median, hi;
  };
  for (const Want& w : {Want{"layout:xla:random", 372, 12000, 43615}, Want{"layout:nlp:random", 876, 3300, 21919}}) {
    const CollectionPlan p = plan_release(Collection::parse(w.id), 0);
    std::vector<double> nodes;
    for (const auto& g : p.graphs) {
      nodes.push_back(static_cast<double>(g.target_nodes));
      EXPECT_GE(g.target_nodes, w.lo) << g.name;
      EXPECT_LE(g.target_nodes, w.hi) << g.name;
      EXPECT_LE(g.max_config_nodes, 3143) << g.name;
      EXPECT_LE(g.configs, 100040) << g.name;
      if (g.split == "test") {
        EXPECT_TRUE(g.configs == 1000 || g.configs == 1001) << g.name;
      }
    }
    // A two-piece log-uniform draw: the sample median within 25% of the documented one.
    EXPECT_NEAR(median(nodes) / static_cast<double>(w.median), 1.0, 0.25) << w.id;
  }
  // Exactly two test files of 1001 configs (the first nlp test graph of each search).
  int with_1001 = 0;
  for (const auto& c : Collection::all())
    for (const auto& g : plan_release(c, 0).graphs) with_1001 += g.split == "test" && g.configs == 1001;
  EXPECT_EQ(with_1001, 2);
}

TEST(ReleasePlan, DefaultSearchGraphsAreTheRandomSearchesFirst) {
  const auto random = plan_release(Collection::parse("layout:xla:random"), 3);
  const auto fallback = plan_release(Collection::parse("layout:xla:default"), 3);
  for (const auto& split : kSplits) {
    const auto r = in_split(random, split), d = in_split(fallback, split);
    ASSERT_LE(d.size(), r.size());
    for (size_t i = 0; i < d.size(); ++i) {
      EXPECT_EQ(d[i]->name, r[i]->name);
      EXPECT_EQ(d[i]->seed, r[i]->seed);  // the same program
    }
  }
}

TEST(ReleasePlan, AFractionIsASystematicSampleBySize) {
  const CollectionPlan p = plan_release(Collection::parse("tile:xla"), 0);
  const auto picked = select_fraction(p, 0.1);
  std::map<std::string, size_t> per_split;
  for (size_t i : picked) per_split[p.graphs[i].split]++;
  EXPECT_EQ(per_split["train"], 571u);  // round(5709 x 0.1)
  EXPECT_EQ(per_split["valid"], 68u);
  EXPECT_EQ(per_split["test"], 84u);
  // The sample's size quartiles match the whole split's (train).
  std::vector<double> all, sample;
  for (const auto& g : p.graphs)
    if (g.split == "train") all.push_back(g.est_bytes);
  for (size_t i : picked)
    if (p.graphs[i].split == "train") sample.push_back(p.graphs[i].est_bytes);
  std::sort(all.begin(), all.end());
  std::sort(sample.begin(), sample.end());
  for (double q : {0.25, 0.5, 0.75}) {
    const double a = all[static_cast<size_t>(q * static_cast<double>(all.size()))];
    const double s = sample[static_cast<size_t>(q * static_cast<double>(sample.size()))];
    EXPECT_NEAR(s / a, 1.0, 0.05) << "quantile " << q;
  }
  // Totals scale by the inverse fraction.
  double total_all = 0, total_sample = 0;
  for (double x : all) total_all += x;
  for (double x : sample) total_sample += x;
  EXPECT_NEAR(total_all / total_sample, 10.0, 0.5);
  // Every split keeps a graph however small the fraction; the whole release at 1.
  const auto tiny = select_fraction(plan_release(Collection::parse("layout:xla:random"), 0), 0.001);
  EXPECT_EQ(tiny.size(), 3u);
  EXPECT_EQ(select_fraction(p, 1.0).size(), p.graphs.size());
  EXPECT_THROW(select_fraction(p, 0.0), Error);
  EXPECT_THROW(select_fraction(p, 1.5), Error);
}

TEST(ReleasePlan, TheListingNamesEveryPlannedGraphAndWhatWasWritten) {
  std::vector<CollectionPlan> plans = {plan_release(Collection::parse("layout:nlp:default"), 0)};
  std::vector<std::vector<size_t>> picked = {select_fraction(plans[0], 0.1)};
  const std::string text = release_plan_listing(plans, picked);
  size_t lines = 0, written = 0;
  for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos; ++at) ++lines;
  for (size_t at = 0; (at = text.find("\t1\n", at)) != std::string::npos; ++at) ++written;
  EXPECT_EQ(lines, plans[0].graphs.size() + 1);  // plus the header
  EXPECT_EQ(written, picked[0].size());
  EXPECT_EQ(text.rfind("collection\tsplit\tname\t", 0), 0u);
}

TEST(ReleasePlan, AFractionOfAnotherScaleIsRefused) {
  TempDir dir("synth_fraction");
  SynthOptions o;
  o.out_dir = dir.path();
  o.scale = "tiny";
  o.fraction = 0.5;
  EXPECT_THROW(generate_tree(o), Error);
  o.scale = "huge";
  o.fraction = 1;
  EXPECT_THROW(generate_tree(o), Error);
}

// ------------------------------------------------------------------------------- stress

TEST(StressPlan, HoldsEveryShapeItPromises) {
  for (bool small : {true, false}) {
    std::map<std::string, CollectionPlan> p;
    for (const auto& c : Collection::all()) p[c.id()] = plan_stress(c, 0, small);
    const auto& tile = p["tile:xla"];
    bool no_letters = false, utf8 = false, dotted_dashed = false, single = false, chain = false, two = false,
         remeasured_test = false, utf8_test = false;
    for (const auto& g : tile.graphs) {
      EXPECT_TRUE(valid_utf8(g.name)) << g.name;
      no_letters |= g.split == "train" && !has_ascii_letter(g.name) && !has_non_ascii(g.name);
      utf8 |= g.split == "train" && has_non_ascii(g.name);
      utf8_test |= g.split == "test" && has_non_ascii(g.name);
      dotted_dashed |= g.name.find('.') != std::string::npos && g.name.find('-') != std::string::npos;
      single |= g.shape.tile_body == TileBody::SingleNode;
      chain |= g.shape.tile_body == TileBody::LongChain && g.shape.chain_ops >= 1000;
      two |= g.configs == 2;
      remeasured_test |= g.split == "test" && g.shape.remeasured_only;
    }
    EXPECT_TRUE(no_letters && utf8 && utf8_test && dotted_dashed && single && chain && two && remeasured_test)
        << "small " << small;
    EXPECT_EQ(in_split(tile, "valid").size(), 1u);
    EXPECT_TRUE(in_split(p["layout:xla:default"], "valid").empty());
    EXPECT_EQ(in_split(p["layout:nlp:random"], "test").size(), 1u);
    std::set<std::string> families;
    for (const auto* g : in_split(p["layout:nlp:random"], "train")) families.insert(family_of(g->name));
    EXPECT_EQ(families.size(), 1u);
    bool big = false, giant = false, empty = false, converged = false, one = false, lonely = false;
    for (const auto& [id, plan] : p) {
      if (id == "tile:xla") continue;
      for (const auto& g : plan.graphs) {
        big |= g.target_nodes >= 40000;
        giant |= g.configs >= 100000;
        empty |= g.shape.no_config_nodes;
        converged |= g.shape.converged && plan.collection.search == "random";
        one |= g.shape.one_computation;
        lonely |= g.shape.isolated_nodes > 0;
      }
    }
    EXPECT_TRUE(big && giant && empty && converged && one && lonely) << "small " << small;
    // Five folds need five usable train graphs everywhere (the empty program is rejected).
    for (const auto& [id, plan] : p) {
      size_t usable = 0;
      for (const auto* g : in_split(plan, "train")) usable += !g->shape.no_config_nodes;
      EXPECT_GE(usable, 5u) << id;
    }
  }
  EXPECT_TRUE(is_stress_scale("stress-small"));
  EXPECT_FALSE(is_stress_scale("bench"));
}

TEST(StressShapes, BuildersGiveTheGraphsTheyName) {
  Rng rng(5);
  const ModelSpec model = make_model("xla", 0, 1000, 100, rng);
  TileKernel one = build_single_node_kernel(model, rng);
  TileGraph g1 = make_tile_graph("one", one, 50, rng);
  EXPECT_EQ(g1.num_nodes, 1);
  EXPECT_EQ(g1.num_edges(), 0);
  EXPECT_GE(g1.num_configs(), 2);
  validate(g1);

  TileKernel chain = build_chain_kernel(model, 2000, rng);
  TileGraph g2 = make_tile_graph("chain", chain, 20, rng);
  EXPECT_GE(g2.num_nodes, 2000);
  validate(g2);

  TileGraph g3 = make_remeasured_tile_graph("again", chain, 30, rng);
  ASSERT_EQ(g3.num_configs(), 30);
  for (int64_t i = 1; i < 30; ++i)
    EXPECT_TRUE(std::equal(g3.config_feat.begin(), g3.config_feat.begin() + kTileConfigDim,
                           g3.config_feat.begin() + i * kTileConfigDim));
  validate(g3);

  ProgramShape shape;
  shape.one_computation = true;
  shape.isolated_nodes = 7;
  LayoutProgram prog = build_layout_program(make_model("nlp", 0, 600, 100, rng), 600, 100, rng, shape);
  make_layout_options(prog.problem, "random", rng);
  LayoutGraph lg = make_remeasured_layout_graph("again", prog, "random", 12, rng);
  EXPECT_EQ(lg.node_splits, (std::vector<int64_t>{0, lg.num_nodes}));
  std::vector<bool> touched(static_cast<size_t>(lg.num_nodes), false);
  for (int64_t x : lg.edge_index) touched[static_cast<size_t>(x)] = true;
  EXPECT_GE(std::count(touched.begin(), touched.end(), false), 7);
  const size_t row = static_cast<size_t>(lg.num_config_nodes()) * kLayoutConfigDim;
  ASSERT_EQ(lg.num_configs(), 12);
  for (int64_t i = 1; i < 12; ++i)
    EXPECT_TRUE(std::equal(lg.node_config_feat.begin(), lg.node_config_feat.begin() + row,
                           lg.node_config_feat.begin() + i * row));
  validate(lg);
}

// ---------------------------------------------------------------- converged search shape

TEST(ConvergedSearch, IncumbentIsALocalOptimum) {
  Rng rng(11);
  LayoutProgram prog = build_layout_program(make_model("xla", 1, 1200, 150, rng), 1200, 150, rng);
  make_layout_options(prog.problem, "random", rng);
  const auto best = local_search_best(prog.problem);
  const LayoutCostModel model(prog.problem);
  const double t = model.runtime_ns(best);
  EXPECT_LE(t, model.runtime_ns(std::vector<int>(best.size(), 0)));
  for (size_t g = 0; g < best.size(); ++g)
    for (int o = 0; o < static_cast<int>(prog.problem.options[g].size()); ++o) {
      auto other = best;
      other[g] = o;
      EXPECT_GE(model.runtime_ns(other), t) << "group " << g << " option " << o;
    }
}

// Issue 20's statistics of a real layout file: 37% re-measurements, median within 0.2%
// of the best, 10th percentile equal to it, a tail of several x, first and second
// measurements at Kendall tau 0.66. Bounds around those, on programs of both sources.
TEST(ConvergedSearch, FilesHaveTheRealRuntimeShape) {
  for (uint64_t seed : {1, 2, 3}) {
    for (const std::string source : {"xla", "nlp"}) {
      Rng rng(seed);
      LayoutProgram prog =
          build_layout_program(make_model(source, seed, 1200, 150, rng), 1200, 150, rng);
      make_layout_options(prog.problem, "random", rng);
      std::vector<int64_t> exact;
      const LayoutGraph g = make_converged_layout_graph("c", prog, 3000, rng, &exact);
      validate(g);
      ASSERT_EQ(g.num_configs(), 3000);
      std::vector<double> rt(g.config_runtime.begin(), g.config_runtime.end());
      // A disturbed run is slower by at most 0.9%, never faster; 40-60% of the runs are not
      // disturbed and measure the noise-free runtime to the nanosecond.
      ASSERT_EQ(exact.size(), rt.size());
      size_t undisturbed = 0;
      for (size_t i = 0; i < rt.size(); ++i) {
        const double e = static_cast<double>(exact[i]);
        EXPECT_GE(rt[i], e);
        EXPECT_LE(rt[i], e * 1.009 + 1);
        undisturbed += rt[i] == e;
      }
      EXPECT_GE(static_cast<double>(undisturbed) / 3000.0, 0.35);
      EXPECT_LE(static_cast<double>(undisturbed) / 3000.0, 0.65);
      std::vector<double> sorted = rt;
      std::sort(sorted.begin(), sorted.end());
      const double best = sorted.front();
      const std::string what = source + " seed " + std::to_string(seed);
      EXPECT_EQ(sorted[sorted.size() / 10], best) << what;
      EXPECT_LE(median(rt) / best, 1.0025) << what;
      EXPECT_GE(sorted.back() / best, 1.3) << what;
      // Re-measurements: rows equal to an earlier row; first and second measurements.
      const size_t row = static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim;
      std::map<std::vector<int8_t>, std::vector<double>> by_config;
      for (size_t i = 0; i < rt.size(); ++i) {
        auto begin = g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(i * row);
        by_config[std::vector<int8_t>(begin, begin + static_cast<std::ptrdiff_t>(row))].push_back(rt[i]);
      }
      const double remeasured = 1.0 - static_cast<double>(by_config.size()) / static_cast<double>(rt.size());
      EXPECT_GE(remeasured, 0.28) << what;
      EXPECT_LE(remeasured, 0.5) << what;
      std::vector<double> first, second;
      for (const auto& [config, values] : by_config)
        if (values.size() >= 2) first.push_back(values[0]), second.push_back(values[1]);
      const double tau = kendall_tau(first, second);  // scipy's tau-b (test_metrics)
      EXPECT_GE(tau, 0.4) << what;
      EXPECT_LE(tau, 0.85) << what;
    }
  }
}
