// Latency of the ranker library (tpuperf/ranker.h), one call at a time, for
// tests/bench/bench_rank.sh:
//   rank_latency RUN_DIR COLLECTION FILE.npz REPEATS THREADS
// prints one tab-separated line:
//   file nodes configurable configs distinct folds load_ms read_ms rank_ms_median rank_ms_min file_ms peak_rss_mb
// load_ms: constructing the Ranker (every fold's checkpoint); read_ms: reading the npz into
// arrays (common/graph/graph.h, what the caller's own arrays replace); rank_ms: Ranker::rank on
// those arrays after one warm-up call (median and minimum of REPEATS); file_ms:
// Ranker::rank_file, reading included, as tpuperf-rank does per input. REPEATS 0 times
// one cold call only (for inputs whose call takes minutes) and prints nan for file_ms.
// peak_rss_mb: the process's peak resident memory (the input's arrays included).
#include <tpuperf/ranker.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/graph/graph.h"
#include "rank_graph.h"
#include "common/base/progress.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }


}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s RUN_DIR COLLECTION FILE.npz REPEATS THREADS\n", argv[0]);
    return 2;
  }
  const std::string run = argv[1], collection = argv[2], file = argv[3];
  const int repeats = std::max(0, std::stoi(argv[4]));
  tpuperf::RankerOptions options;
  options.threads = std::stoi(argv[5]);
  try {
    auto t0 = Clock::now();
    const tpuperf::Ranker ranker(run, collection, options);
    const double load_ms = ms_since(t0);
    const bool tile = collection.rfind("tile:", 0) == 0;
    t0 = Clock::now();
    tpuperf::RankGraph graph;
    tpuperf::TileCandidates tile_configs;
    tpuperf::LayoutCandidates layout_configs;
    int64_t configurable = 0;
    if (tile) {
      tpuperf::TileGraph g = tpuperf::load_tile_graph(file);
      graph = rank_graph(g);
      tile_configs.config_feat = std::move(g.config_feat);
    } else {
      tpuperf::LayoutGraph g = tpuperf::load_layout_graph(file);
      graph = rank_graph(g);
      graph.node_splits = g.node_splits;
      configurable = static_cast<int64_t>(g.node_config_ids.size());
      layout_configs.node_config_ids = std::move(g.node_config_ids);
      layout_configs.node_config_feat = std::move(g.node_config_feat);
    }
    const double read_ms = ms_since(t0);
    auto call = [&] { return tile ? ranker.rank(graph, tile_configs) : ranker.rank(graph, layout_configs); };
    t0 = Clock::now();
    const tpuperf::Ranking first = call();  // with repeats, a warm-up: first-touch allocations, lazy init
    std::vector<double> times{ms_since(t0)};
    if (repeats > 0) times.clear();
    for (int i = 0; i < repeats; ++i) {
      t0 = Clock::now();
      call();
      times.push_back(ms_since(t0));
    }
    std::sort(times.begin(), times.end());
    double file_ms = std::nan("");
    if (repeats > 0) {
      t0 = Clock::now();
      ranker.rank_file(file);
      file_ms = ms_since(t0);
    }
    std::printf("%s\t%lld\t%lld\t%zu\t%lld\t%d\t%.1f\t%.1f\t%.2f\t%.2f\t%.1f\t%.0f\n", file.c_str(),
                static_cast<long long>(graph.num_nodes), static_cast<long long>(configurable), first.order.size(),
                static_cast<long long>(first.unique_configs), first.folds, load_ms, read_ms, times[times.size() / 2],
                times.front(), file_ms, tpuperf::peak_rss_mb());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 2;
  }
  return 0;
}
