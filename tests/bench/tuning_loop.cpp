// The tuning-loop bench's tpuperf side (tests/bench/bench_tuning_loop.sh): for graphs whose
// runtimes are all known, the loop an autotuner runs with the ranker library
// (tpuperf/ranker.h), in process:
//   round 0: suggest BATCH configs with the run as trained;
//   round k: adapted(graph, the measured configs, their runtimes, {Blend, seed}) from the run as
//   trained, then suggest BATCH more excluding the measured ones ("measuring" a config is
//   looking its runtime up in the file), until BUDGET configs are measured or none are left.
//
//   tuning_loop RUN_DIR COLLECTION BUDGET BATCH SEED OUT.jsonl FILE.npz...
//
// One Ranker per call (every FILE is of COLLECTION). Appends one JSON object per line per
// FILE to OUT.jsonl (stdout carries the library's log lines): {"file", "graph", "collection", "configs", "loop": [measured indices in order],
// "rounds": [{"measured", "blend", "weight_run", "weight_fit", "adapt_s", "suggest_s"}],
// "trained_order": [the run's order, best first], "trained_score": [per config the run's
// ensemble score, lower = faster], "load_s", "seconds"}. Deterministic: the same run,
// files and seed give the same lines.
//
// For ablations (the bench uses the defaults): TUNING_LOOP_EXPLORATION and
// TUNING_LOOP_DIVERSITY set SuggestOptions' weights; TUNING_LOOP_ADAPT_FROM = N suggests
// with the run as trained until N configs are measured (default 2, the least adapted takes).
#include <tpuperf/ranker.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/graph/graph.h"
#include "rank_graph.h"

namespace {

using Clock = std::chrono::steady_clock;
double s_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

template <typename T>
std::string array(const std::vector<T>& v) {
  std::string out = "[";
  char buf[64];
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      std::snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "", static_cast<double>(v[i]));
    else
      std::snprintf(buf, sizeof buf, "%s%lld", i ? "," : "", static_cast<long long>(v[i]));
    out += buf;
  }
  return out + "]";
}


// One graph's candidates and their runtimes, and the subset of the measured ones.
struct Graph {
  tpuperf::RankGraph graph;
  tpuperf::TileCandidates tile;
  tpuperf::LayoutCandidates layout;
  std::vector<double> runtime;
  int64_t configs = 0;
  int64_t width = 0;  // floats (tile) or int8s (layout) per config
};

Graph load(const std::string& file, bool tile) {
  Graph out;
  if (tile) {
    tpuperf::TileGraph g = tpuperf::load_tile_graph(file);
    out.graph = rank_graph(g);
    out.configs = g.num_configs();
    out.width = tpuperf::kTileConfigDim;
    for (int64_t c = 0; c < out.configs; ++c)
      out.runtime.push_back(static_cast<double>(g.config_runtime[c]) /
                            static_cast<double>(g.config_runtime_normalizers[c]));
    out.tile.config_feat = std::move(g.config_feat);
  } else {
    tpuperf::LayoutGraph g = tpuperf::load_layout_graph(file);
    out.graph = rank_graph(g);
    out.graph.node_splits = g.node_splits;
    out.configs = g.num_configs();
    out.width = g.num_config_nodes() * tpuperf::kLayoutConfigDim;
    for (int64_t c = 0; c < out.configs; ++c) out.runtime.push_back(static_cast<double>(g.config_runtime[c]));
    out.layout.node_config_ids = std::move(g.node_config_ids);
    out.layout.node_config_feat = std::move(g.node_config_feat);
  }
  for (double r : out.runtime)
    if (!(r > 0) || !std::isfinite(r)) throw std::runtime_error(file + ": a config without a runtime (config_runtime 0)");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s RUN_DIR COLLECTION BUDGET BATCH SEED OUT.jsonl FILE.npz...\n", argv[0]);
    return 2;
  }
  const std::string run = argv[1], collection = argv[2];
  const int64_t budget = std::stoll(argv[3]), batch = std::stoll(argv[4]);
  const uint64_t seed = std::stoull(argv[5]);
  const bool tile = collection.rfind("tile:", 0) == 0;
  auto env = [](const char* name, double fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::stod(v) : fallback;
  };
  const tpuperf::SuggestOptions defaults;
  const double exploration = env("TUNING_LOOP_EXPLORATION", defaults.exploration);
  const double diversity = env("TUNING_LOOP_DIVERSITY", defaults.diversity);
  const auto adapt_from = static_cast<size_t>(std::max(2.0, env("TUNING_LOOP_ADAPT_FROM", 2)));
  std::FILE* out = std::fopen(argv[6], "a");
  if (!out) {
    std::fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[6]);
    return 2;
  }
  try {
    auto t0 = Clock::now();
    const tpuperf::Ranker ranker(run, collection);  // one LibTorch thread
    const double load_s = s_since(t0);
    for (int a = 7; a < argc; ++a) {
      const std::string file = argv[a];
      const auto start = Clock::now();
      const Graph g = load(file, tile);
      const tpuperf::Ranking trained =
          tile ? ranker.rank(g.graph, g.tile) : ranker.rank(g.graph, g.layout);
      std::vector<int64_t> measured;
      std::vector<double> runtimes;
      tpuperf::TileCandidates mt;
      tpuperf::LayoutCandidates ml;
      ml.node_config_ids = g.layout.node_config_ids;
      std::string rounds = "[";
      const int64_t goal = std::min(budget, g.configs);
      while (static_cast<int64_t>(measured.size()) < goal) {
        auto t1 = Clock::now();
        tpuperf::SuggestOptions o;
        o.count = std::min(batch, goal - static_cast<int64_t>(measured.size()));
        o.exclude = measured;
        o.exploration = exploration;
        o.diversity = diversity;
        std::string blend = "trained";
        double weight_run = 1, weight_fit = 0, adapt_s = 0;
        tpuperf::Suggestion s;
        if (measured.size() < adapt_from) {  // adapted needs two measured configs: round 0 is the run as trained
          s = tile ? ranker.suggest(g.graph, g.tile, o) : ranker.suggest(g.graph, g.layout, o);
        } else {
          tpuperf::AdaptOptions ao;
          ao.seed = seed;
          const tpuperf::Ranker tuned =
              tile ? ranker.adapted(g.graph, mt, runtimes, ao) : ranker.adapted(g.graph, ml, runtimes, ao);
          adapt_s = s_since(t1);
          const tpuperf::Adaptation* ad = tuned.adaptation();
          blend = ad->blend;
          weight_run = ad->weight_run;
          weight_fit = ad->weight_fit;
          t1 = Clock::now();
          s = tile ? tuned.suggest(g.graph, g.tile, o) : tuned.suggest(g.graph, g.layout, o);
        }
        const double suggest_s = s_since(t1);
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "%s{\"measured\":%zu,\"blend\":%s,\"weight_run\":%.4g,\"weight_fit\":%.4g,\"adapt_s\":%.4f,"
                      "\"suggest_s\":%.4f}",
                      rounds.size() > 1 ? "," : "", measured.size(), quoted(blend).c_str(), weight_run, weight_fit,
                      adapt_s, suggest_s);
        rounds += buf;
        if (s.configs.empty()) break;  // every distinct config measured
        for (int64_t c : s.configs) {
          measured.push_back(c);
          runtimes.push_back(g.runtime[c]);
          if (tile) {
            mt.config_feat.insert(mt.config_feat.end(), g.tile.config_feat.begin() + c * g.width,
                                  g.tile.config_feat.begin() + (c + 1) * g.width);
          } else {
            ml.node_config_feat.insert(ml.node_config_feat.end(), g.layout.node_config_feat.begin() + c * g.width,
                                       g.layout.node_config_feat.begin() + (c + 1) * g.width);
          }
        }
      }
      rounds += "]";
      std::fprintf(out, "{\"file\":%s,\"graph\":%s,\"collection\":%s,\"configs\":%lld,\"loop\":%s,\"rounds\":%s,"
                  "\"trained_order\":%s,\"trained_score\":%s,\"load_s\":%.3f,\"seconds\":%.3f}\n",
                  quoted(file).c_str(), quoted(g.graph.name).c_str(), quoted(collection).c_str(),
                  static_cast<long long>(g.configs), array(measured).c_str(), rounds.c_str(),
                  array(trained.order).c_str(), array(trained.score).c_str(), load_s, s_since(start));
      std::fflush(out);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    std::fclose(out);
    return 2;
  }
  std::fclose(out);
  return 0;
}
