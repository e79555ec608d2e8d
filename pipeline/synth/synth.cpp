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
#include <set>
#include <thread>

#include "common/error.h"
#include "common/files.h"
#include "common/graph.h"
#include "common/npz.h"
#include "pipeline/synth/layout_gen.h"
#include "pipeline/synth/models.h"
#include "pipeline/synth/rng.h"
#include "pipeline/synth/tile_gen.h"

namespace tpuperf::synth {

namespace {

// Sets the per-collection graph counts and config ranges; the rest are set by the caller.
void set_counts(ScaleParams& p, std::vector<int64_t> tile, std::vector<int64_t> layout) {
  for (size_t s = 0; s < 3; ++s) {
    p.tile_graphs[s] = tile[s];
    p.layout_graphs[s] = layout[s];
  }
}

}  // namespace

ScaleParams scale_params(const std::string& scale) {
  ScaleParams p;
  if (scale == "tiny") {  // tests: the whole tree in a second or two
    set_counts(p, {16, 4, 4}, {6, 2, 2});
    p.tile_configs_min = 10, p.tile_configs_max = 30;
    p.xla_nodes_min = 100, p.xla_nodes_max = 300, p.nlp_nodes_min = 150, p.nlp_nodes_max = 350;
    p.random_configs_min = 40, p.random_configs_max = 100;
    p.default_configs_min = 30, p.default_configs_max = 80;
    p.test_configs = 50, p.max_config_nodes = 60, p.max_feat_bytes = 1e7;
  } else if (scale == "small") {  // the demo: under a minute to write, minutes to train
    set_counts(p, {150, 30, 30}, {20, 5, 5});
    p.tile_configs_min = 50, p.tile_configs_max = 300;
    p.xla_nodes_min = 300, p.xla_nodes_max = 1500, p.nlp_nodes_min = 300, p.nlp_nodes_max = 2000;
    p.random_configs_min = 200, p.random_configs_max = 2000;
    p.default_configs_min = 100, p.default_configs_max = 1000;
    p.test_configs = 200, p.max_config_nodes = 300, p.max_feat_bytes = 1e8;
  } else if (scale == "bench") {  // the release's sizes, few graphs: benchmarks
    set_counts(p, {300, 30, 30}, {8, 2, 2});
    p.tile_configs_min = 500, p.tile_configs_max = 7000;
    p.xla_nodes_min = 2000, p.xla_nodes_max = 10000, p.nlp_nodes_min = 1000, p.nlp_nodes_max = 8000;
    p.random_configs_min = 10000, p.random_configs_max = 40000;
    p.default_configs_min = 10000, p.default_configs_max = 20000;
    p.test_configs = 1000, p.max_config_nodes = 500, p.max_feat_bytes = 3e8;
    p.giant_configs = 100040;
  } else {
    throw Error("unknown scale '" + scale + "' (expected tiny, small or bench)");
  }
  return p;
}

std::string truth_dir(const std::string& out_dir, const Collection& c) {
  return c.split_dir(out_dir + "/truth", "test");
}

namespace {

// One graph to generate: everything decided up front, sequentially, so that names are
// unique and the tree does not depend on the order in which threads run the jobs.
struct GraphPlan {
  std::string split, name;
  int64_t index = 0;
  ModelSpec model;
  int64_t target_nodes = 0, max_config_nodes = 0;
  int64_t configs = 0, random_configs = 0, default_configs = 0;
  uint64_t seed = 0;
};

// Train graphs cycle through a few families (several graphs each, at least 4 families,
// which is what fold assignment needs); valid and test draw freely.
std::vector<size_t> assign_families(int64_t n, size_t families, bool train, Rng& rng) {
  std::vector<size_t> order(families);
  for (size_t i = 0; i < families; ++i) order[i] = i;
  rng.shuffle(order);
  const size_t used = std::clamp<size_t>(static_cast<size_t>(n / 2), 4, families);
  std::vector<size_t> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(train ? order[static_cast<size_t>(i) % used]
                        : static_cast<size_t>(rng.randint(0, static_cast<int64_t>(families) - 1)));
  return out;
}

int64_t draw_count(Rng& rng, int64_t lo, int64_t hi) {
  return std::llround(rng.log_uniform(static_cast<double>(lo), static_cast<double>(hi)));
}

std::string graph_label(const std::string& what, const std::string& split, int64_t index) {
  return what + "/" + split + "/" + std::to_string(index);
}

std::vector<GraphPlan> plan_tile(const ScaleParams& sp, uint64_t seed) {
  Rng rng(mix_seed(seed, "plan:tile:xla"));
  const size_t nx = num_families("xla"), nn = num_families("nlp");
  std::set<std::string> used;
  std::vector<GraphPlan> plans;
  for (size_t s = 0; s < kSplits.size(); ++s) {
    const std::string& split = kSplits[s];
    auto fams = assign_families(sp.tile_graphs[s], nx + nn, split == "train", rng);
    for (int64_t i = 0; i < sp.tile_graphs[s]; ++i) {
      GraphPlan g;
      g.split = split;
      g.index = i;
      size_t f = fams[static_cast<size_t>(i)];
      // The model's size only shows in its name (transformer layers).
      const int64_t size = draw_count(rng, 300, 8000);
      g.model =
          f < nx ? make_model("xla", f, size, 500, rng) : make_model("nlp", f - nx, size, 500, rng);
      // A kernel of that model: the model's name plus the kernel's fingerprint.
      g.name = unique_name(
          split == "test" ? hex_digits(rng, 32) : g.model.name + "_" + hex_digits(rng, 16), used,
          rng);
      g.configs = draw_count(rng, sp.tile_configs_min, sp.tile_configs_max);
      g.seed = mix_seed(seed, graph_label("tile:xla", split, i));
      plans.push_back(g);
    }
  }
  return plans;
}

// The layout graphs of one source, shared by its random and default collections (the
// release's two searches also ran over largely the same models).
std::vector<GraphPlan> plan_layout(const ScaleParams& sp, const std::string& source,
                                   uint64_t seed) {
  Rng rng(mix_seed(seed, "plan:layout:" + source));
  std::set<std::string> used;
  std::vector<GraphPlan> plans;
  const bool nlp = source == "nlp";
  for (size_t s = 0; s < kSplits.size(); ++s) {
    const std::string& split = kSplits[s];
    const bool test = split == "test";
    auto fams = assign_families(sp.layout_graphs[s], num_families(source), split == "train", rng);
    for (int64_t i = 0; i < sp.layout_graphs[s]; ++i) {
      GraphPlan g;
      g.split = split;
      g.index = i;
      g.target_nodes = draw_count(rng, nlp ? sp.nlp_nodes_min : sp.xla_nodes_min,
                                  nlp ? sp.nlp_nodes_max : sp.xla_nodes_max);
      g.random_configs = test ? sp.test_configs
                         : (nlp && split == "train" && i == 0 && sp.giant_configs > 0)
                             ? sp.giant_configs
                             : draw_count(rng, sp.random_configs_min, sp.random_configs_max);
      g.default_configs =
          test ? sp.test_configs : draw_count(rng, sp.default_configs_min, sp.default_configs_max);
      const double per_node = static_cast<double>(std::max(g.random_configs, g.default_configs)) *
                              kLayoutConfigDim * 4.0;
      // The giant file may hold ~0.9 GB of node_config_feat, like the release's largest.
      const double budget = g.random_configs == sp.giant_configs ? std::max(sp.max_feat_bytes, 9e8)
                                                                 : sp.max_feat_bytes;
      g.max_config_nodes =
          std::clamp<int64_t>(static_cast<int64_t>(budget / per_node), 30, sp.max_config_nodes);
      g.model =
          make_model(source, fams[static_cast<size_t>(i)], g.target_nodes, g.max_config_nodes, rng);
      g.name = unique_name(test ? hex_digits(rng, 32) : g.model.name, used, rng);
      g.seed = mix_seed(seed, graph_label("layout:" + source, split, i));
      plans.push_back(g);
    }
  }
  return plans;
}

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
};

Written write_tile(const std::string& out, const Collection& c, const GraphPlan& g) {
  Rng rng(g.seed);
  TileKernel kernel = build_tile_kernel(g.model, rng);
  TileGraph graph = make_tile_graph(g.name, kernel, g.configs, rng);
  validate(graph);
  Written w;
  if (g.split == "test") {
    const std::string truth = truth_dir(out, c) + "/" + g.name + ".npz";
    NpzWriter tw(truth, true);
    const int64_t n = graph.num_configs();
    tw.add("config_runtime", graph.config_runtime, {n});
    tw.add("config_runtime_normalizers", graph.config_runtime_normalizers, {n});
    tw.close();
    w.files++;
    w.bytes += file_bytes(truth);
    std::fill(graph.config_runtime.begin(), graph.config_runtime.end(), 0);
    std::fill(graph.config_runtime_normalizers.begin(), graph.config_runtime_normalizers.end(), 1);
  }
  const std::string path = c.split_dir(out + "/npz", g.split) + "/" + g.name + ".npz";
  save_tile_graph(path, graph, false);  // stored members, like savez
  w.files++;
  w.bytes += file_bytes(path);
  return w;
}

Written write_layout(const std::string& out, const Collection& c, const GraphPlan& g) {
  Rng graph_rng(g.seed);
  LayoutProgram program =
      build_layout_program(g.model, g.target_nodes, g.max_config_nodes, graph_rng);
  Rng rng(mix_seed(g.seed, "configs:" + c.search));
  make_layout_options(program.problem, c.search, rng);
  const int64_t configs = c.search == "random" ? g.random_configs : g.default_configs;
  LayoutGraph graph = make_layout_graph(g.name, program, c.search, configs, rng);
  validate(graph);
  Written w;
  if (g.split == "test") {
    const std::string truth = truth_dir(out, c) + "/" + g.name + ".npz";
    NpzWriter tw(truth, true);
    tw.add("config_runtime", graph.config_runtime, {graph.num_configs()});
    tw.close();
    w.files++;
    w.bytes += file_bytes(truth);
    std::fill(graph.config_runtime.begin(), graph.config_runtime.end(), 0);
  }
  const std::string path = c.split_dir(out + "/npz", g.split) + "/" + g.name + ".npz";
  save_layout_graph(path, graph, true);  // deflated members, like savez_compressed
  w.files++;
  w.bytes += file_bytes(path);
  return w;
}

std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

SynthStats generate_tree(const SynthOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const ScaleParams sp = scale_params(o.scale);
  if (o.out_dir.empty()) throw Error("no output directory given (--out DIR)");
  SynthStats stats;
  for (const Collection& c : o.collections) {
    const auto t0 = Clock::now();
    for (const auto& split : kSplits) make_dirs(c.split_dir(o.out_dir + "/npz", split));
    make_dirs(truth_dir(o.out_dir, c));
    const auto plans =
        c.kind == Kind::Tile ? plan_tile(sp, o.seed) : plan_layout(sp, c.source, o.seed);
    std::vector<Written> written(plans.size());
    run_parallel(plans.size(), std::max(1, o.threads), [&](size_t i) {
      try {
        written[i] = c.kind == Kind::Tile ? write_tile(o.out_dir, c, plans[i])
                                          : write_layout(o.out_dir, c, plans[i]);
      } catch (Error& e) {
        e.with_file(c.id() + ":" + plans[i].split + "/" + plans[i].name);
        throw;
      }
    });
    Written total;
    int64_t per_split[3] = {0, 0, 0};
    for (size_t i = 0; i < plans.size(); ++i) {
      total.files += written[i].files;
      total.bytes += written[i].bytes;
      for (size_t s = 0; s < kSplits.size(); ++s) per_split[s] += plans[i].split == kSplits[s];
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    spdlog::info("{}: {} graphs (train {}, valid {}, test {}), {} files, {}, {:.1f} s", c.id(),
                 plans.size(), per_split[0], per_split[1], per_split[2], total.files,
                 megabytes(total.bytes), secs);
    stats.files += total.files;
    stats.bytes += total.bytes;
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

}  // namespace tpuperf::synth
