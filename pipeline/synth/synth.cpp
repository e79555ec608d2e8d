#include "pipeline/synth/synth.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "common/base/error.h"
#include "common/base/files.h"
#include "common/graph/graph.h"
#include "common/formats/npz_writer.h"
#include "pipeline/synth/converged_search.h"
#include "pipeline/synth/layout_gen.h"
#include "pipeline/synth/models.h"
#include "pipeline/synth/release_plan.h"
#include "pipeline/synth/rng.h"
#include "pipeline/synth/stress_plan.h"
#include "pipeline/synth/tile_gen.h"

namespace tpuperf::synth {

std::string truth_dir(const std::string& out_dir, const Collection& c) {
  return c.split_dir(out_dir + "/truth", "test");
}

std::string noise_free_dir(const std::string& out_dir, const Collection& c, const std::string& split) {
  return c.split_dir(out_dir + "/noise_free", split);
}

namespace {

// Runs fn(0..n-1) on `threads` threads; rethrows the first failure after all stop.
void run_parallel(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  auto worker = [&] {
    for (size_t i = next++; i < n && !failed; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && static_cast<size_t>(t) < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

uint64_t file_bytes(const std::string& path) {
  return static_cast<uint64_t>(std::filesystem::file_size(path));
}

// What one job wrote.
struct Written {
  int64_t files = 0;
  uint64_t bytes = 0;

  void add(const std::string& path) {
    files++;
    bytes += file_bytes(path);
  }
};

// The noise-free runtimes of graph g's file (SynthOptions::noise_free); tile files also
// carry their normalizers, so that tile scores can be computed from this file alone.
void write_noise_free(const std::string& out, const Collection& c, const GraphPlan& g,
                      const std::vector<int64_t>& runtime, const std::vector<int64_t>* normalizers,
                      Written& w) {
  const std::string path = noise_free_dir(out, c, g.split) + "/" + g.name + ".npz";
  NpzWriter nw(path, true);
  const int64_t n = static_cast<int64_t>(runtime.size());
  nw.add("config_runtime", runtime, {n});
  if (normalizers) nw.add("config_runtime_normalizers", *normalizers, {n});
  nw.close();
  w.add(path);
}

TileKernel build_kernel(const GraphPlan& g, Rng& rng) {
  switch (g.shape.tile_body) {
    case TileBody::SingleNode:
      return build_single_node_kernel(g.model, rng);
    case TileBody::LongChain:
      return build_chain_kernel(g.model, static_cast<int>(g.shape.chain_ops), rng);
    case TileBody::Any:
      break;
  }
  return build_tile_kernel(g.model, rng);
}

Written write_tile(const std::string& out, const Collection& c, const GraphPlan& g, bool noise_free) {
  Rng rng(g.seed);
  TileKernel kernel = build_kernel(g, rng);
  std::vector<int64_t> exact;
  std::vector<int64_t>* want = noise_free ? &exact : nullptr;
  TileGraph graph = g.shape.remeasured_only ? make_remeasured_tile_graph(g.name, kernel, g.configs, rng, want)
                                            : make_tile_graph(g.name, kernel, g.configs, rng, want);
  validate(graph);
  Written w;
  if (noise_free) write_noise_free(out, c, g, exact, &graph.config_runtime_normalizers, w);
  if (g.split == "test") {
    const std::string truth = truth_dir(out, c) + "/" + g.name + ".npz";
    NpzWriter tw(truth, true);
    const int64_t n = graph.num_configs();
    tw.add("config_runtime", graph.config_runtime, {n});
    tw.add("config_runtime_normalizers", graph.config_runtime_normalizers, {n});
    tw.close();
    w.add(truth);
    std::fill(graph.config_runtime.begin(), graph.config_runtime.end(), 0);
    std::fill(graph.config_runtime_normalizers.begin(), graph.config_runtime_normalizers.end(), 1);
  }
  const std::string path = c.split_dir(out + "/npz", g.split) + "/" + g.name + ".npz";
  save_tile_graph(path, graph, false);  // stored members, like savez
  w.add(path);
  return w;
}

LayoutGraph make_layout_file(const Collection& c, const GraphPlan& g, std::vector<int64_t>* noise_free) {
  Rng graph_rng(g.seed);
  ProgramShape shape;
  shape.isolated_nodes = g.shape.isolated_nodes;
  shape.one_computation = g.shape.one_computation;
  LayoutProgram program =
      build_layout_program(g.model, g.target_nodes, g.max_config_nodes, graph_rng, shape);
  Rng rng(mix_seed(g.seed, "configs:" + c.search));
  make_layout_options(program.problem, c.search, rng);
  LayoutGraph graph =
      g.shape.remeasured_only ? make_remeasured_layout_graph(g.name, program, c.search, g.configs, rng, noise_free)
      : g.shape.converged && c.search == "random"
          ? make_converged_layout_graph(g.name, program, g.configs, rng, noise_free)
          : make_layout_graph(g.name, program, c.search, g.configs, rng, noise_free);
  if (g.shape.no_config_nodes) {
    // The same measurements of a program in which nothing was configurable: (c, 0, 18).
    graph.node_config_ids.clear();
    graph.node_config_feat.clear();
  }
  return graph;
}

Written write_layout(const std::string& out, const Collection& c, const GraphPlan& g, bool noise_free) {
  std::vector<int64_t> exact;
  LayoutGraph graph = make_layout_file(c, g, noise_free ? &exact : nullptr);
  validate(graph);
  Written w;
  if (noise_free) write_noise_free(out, c, g, exact, nullptr, w);
  if (g.split == "test") {
    const std::string truth = truth_dir(out, c) + "/" + g.name + ".npz";
    NpzWriter tw(truth, true);
    tw.add("config_runtime", graph.config_runtime, {graph.num_configs()});
    tw.close();
    w.add(truth);
    std::fill(graph.config_runtime.begin(), graph.config_runtime.end(), 0);
  }
  const std::string path = c.split_dir(out + "/npz", g.split) + "/" + g.name + ".npz";
  save_layout_graph(path, graph, true);  // deflated members, like savez_compressed
  w.add(path);
  return w;
}

std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// The graphs of one collection at the options' scale.
CollectionPlan plan_collection(const SynthOptions& o, const Collection& c) {
  if (is_classic_scale(o.scale)) return plan_classic(scale_params(o.scale), c, o.seed);
  if (o.scale == "release") return plan_release(c, o.seed);
  if (is_stress_scale(o.scale)) return plan_stress(c, o.seed, o.scale == "stress-small");
  scale_params(o.scale);  // throws, naming the scales
  return {};
}

}  // namespace

SynthStats generate_tree(const SynthOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (o.out_dir.empty()) throw Error("no output directory given (--out DIR)");
  if (o.fraction != 1.0 && o.scale != "release")
    throw Error("--fraction applies to --scale release only (got scale '" + o.scale + "')");
  std::vector<CollectionPlan> plans;
  std::vector<std::vector<size_t>> selected;
  for (const Collection& c : o.collections) {
    plans.push_back(plan_collection(o, c));
    if (o.scale == "release") {
      selected.push_back(select_fraction(plans.back(), o.fraction));
    } else {
      selected.emplace_back(plans.back().graphs.size());
      std::iota(selected.back().begin(), selected.back().end(), size_t{0});
    }
    for (const auto& split : kSplits) make_dirs(c.split_dir(o.out_dir + "/npz", split));
    make_dirs(truth_dir(o.out_dir, c));
    if (o.noise_free)
      for (const auto& split : kSplits) make_dirs(noise_free_dir(o.out_dir, c, split));
  }
  if (o.scale == "release")
    write_file_atomic(o.out_dir + "/release_plan.tsv", release_plan_listing(plans, selected));

  // One job per file, largest first, so that the big files do not end the run alone.
  struct Job {
    size_t collection, graph;
  };
  std::vector<Job> jobs;
  for (size_t c = 0; c < plans.size(); ++c)
    for (size_t i : selected[c]) jobs.push_back({c, i});
  std::stable_sort(jobs.begin(), jobs.end(), [&](const Job& a, const Job& b) {
    return plans[a.collection].graphs[a.graph].est_bytes > plans[b.collection].graphs[b.graph].est_bytes;
  });
  std::vector<Written> written(jobs.size());
  std::vector<double> seconds(jobs.size());
  run_parallel(jobs.size(), std::max(1, o.threads), [&](size_t j) {
    const Collection& c = plans[jobs[j].collection].collection;
    const GraphPlan& g = plans[jobs[j].collection].graphs[jobs[j].graph];
    const auto t0 = Clock::now();
    try {
      written[j] = c.kind == Kind::Tile ? write_tile(o.out_dir, c, g, o.noise_free)
                                        : write_layout(o.out_dir, c, g, o.noise_free);
    } catch (Error& e) {
      e.with_file(c.id() + ":" + g.split + "/" + g.name);
      throw;
    }
    seconds[j] = std::chrono::duration<double>(Clock::now() - t0).count();
  });

  SynthStats stats;
  for (size_t c = 0; c < plans.size(); ++c) {
    Written total;
    int64_t per_split[3] = {0, 0, 0};
    double work = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].collection != c) continue;
      total.files += written[j].files;
      total.bytes += written[j].bytes;
      work += seconds[j];
      for (size_t s = 0; s < kSplits.size(); ++s)
        per_split[s] += plans[c].graphs[jobs[j].graph].split == kSplits[s];
    }
    spdlog::info("{}: {} graphs (train {}, valid {}, test {}), {} files, {}, {:.1f} s of work",
                 plans[c].collection.id(), per_split[0] + per_split[1] + per_split[2], per_split[0],
                 per_split[1], per_split[2], total.files, megabytes(total.bytes), work);
    stats.files += total.files;
    stats.bytes += total.bytes;
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

}  // namespace tpuperf::synth
