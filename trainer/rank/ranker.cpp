// The ranker library (include/tpuperf/ranker.h) on tpuperf's own pieces: the run
// directory (run_dir.h), the per-graph preparation preprocessing applies
// (common/graph/graph_prep.h), the feature transform, and the one prediction path
// (graph_scoring.h); adaptation to measured configs in adapt.h.
#include "tpuperf/ranker.h"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>

#include "trainer/models/config_dims.h"
#include "common/base/error.h"
#include "common/base/log.h"
#include "common/base/random.h"
#include "common/graph/feature_transform.h"
#include "common/graph/graph.h"
#include "common/graph/graph_prep.h"
#include "trainer/models/allocator.h"
#include "trainer/models/checkpoint.h"
#include "trainer/models/thread_pools.h"
#include "trainer/rank/adapt.h"
#include "trainer/rank/graph_scoring.h"
#include "trainer/rank/run_dir.h"

namespace tpuperf {

struct Ranker::Impl {
  RunDir run;
  Collection collection;
  std::string id;
  struct Fold {
    ModelPtr model;
    ModelSpec spec;  // the model's, to copy it
    FeatureTransform transform;
  };
  std::vector<Fold> folds;
  // An adapted ranker's: what it was adapted to, and the graph it alone ranks.
  std::optional<Adaptation> adaptation;
  uint64_t adapted_fingerprint = 0;

  // Calls fn(fold, the graph as that fold's model reads it) for every fold in order; the
  // graph's raw features are transformed once per distinct transform.
  void for_each_fold(ProcessedGraph& graph, const std::function<void(const Fold&, const ProcessedGraph&)>& fn) const;
  Ranking rank_prepared(ProcessedGraph& graph) const;
  Ranking rank_graph(const TileGraph& g) const;
  Ranking rank_graph(const LayoutGraph& g) const;
  void require_kind(Kind kind, const std::string& what) const;
  // Throws Error naming both graphs unless this ranker is not adapted or was adapted to g.
  void require_adapted_graph(const GraphBase& g, const std::vector<int64_t>* node_config_ids) const;
  ProcessedGraph prepare(const TileGraph& g) const;
  ProcessedGraph prepare(const LayoutGraph& g) const;
  // A copy of this ranker whose fold models are fine-tuned on the measured graph (every
  // config of `measured` has a runtime); `label` names it in errors and the result.
  std::unique_ptr<Impl> adapted(const GraphBase& measured, const std::vector<int64_t>* node_config_ids,
                                ProcessedGraph prepared, const std::vector<double>& runtimes,
                                const AdaptOptions& options, const std::string& label) const;
};

namespace {

bool same_transform(const FeatureTransform& a, const FeatureTransform& b) {
  return a.kept_columns == b.kept_columns && a.log1p == b.log1p && a.mean == b.mean && a.stddev == b.stddev;
}

void copy_graph(const RankGraph& in, GraphBase& out) {
  out.name = in.name.empty() ? "graph" : in.name;
  out.num_nodes = in.num_nodes;
  out.node_feat = in.node_feat;
  out.node_opcode = in.node_opcode;
  out.edge_index = in.edge_index;
}

}  // namespace

void Ranker::Impl::require_kind(Kind kind, const std::string& what) const {
  if (collection.kind != kind)
    throw Error("a " + id + " ranker ranks " + (collection.kind == Kind::Tile ? "tile" : "layout") + " configs, not " +
                what);
}

void Ranker::Impl::require_adapted_graph(const GraphBase& g, const std::vector<int64_t>* node_config_ids) const {
  if (adaptation && graph_fingerprint(g, node_config_ids) != adapted_fingerprint)
    throw Error("graph " + g.name + " is not the graph this ranker was adapted to (" + adaptation->graph +
                "): their node features, opcodes, edges" + (node_config_ids ? " or configurable nodes" : "") +
                " differ; an adapted ranker ranks the measured graph's configs only");
}

void Ranker::Impl::for_each_fold(ProcessedGraph& graph,
                                 const std::function<void(const Fold&, const ProcessedGraph&)>& fn) const {
  attach_config_dims(collection.kind, graph);  // from the raw features, before the transform
  const std::vector<float> untransformed = std::move(graph.node_feat);
  const FeatureTransform* applied = nullptr;
  for (const Fold& f : folds) {
    // Folds share the transform of their collection's train split; apply it once.
    if (!applied || !same_transform(*applied, f.transform)) {
      graph.node_feat = apply_transform(f.transform, untransformed.data(), graph.num_nodes);
      graph.num_node_feat = static_cast<int>(f.transform.kept_columns.size());
      applied = &f.transform;
    }
    fn(f, graph);
  }
}

Ranking Ranker::Impl::rank_prepared(ProcessedGraph& graph) const {
  std::vector<GraphScores> members;
  int64_t unique = 0;
  const int64_t chunk = run.chunk(id);
  for_each_fold(graph, [&](const Fold& f, const ProcessedGraph& graph) {
    const ConfigSource source = source_of(graph, collection.kind);
    GraphScores s = score_every_config(*f.model, source, chunk);
    s.collection = id;
    s.split = "test";
    s.name = graph.name;
    s.model = static_cast<int>(members.size());
    members.push_back(std::move(s));
    if (unique == 0) {
      const auto first = first_duplicates(source, 1024);
      for (size_t c = 0; c < first.size(); ++c) unique += first[c] == static_cast<int64_t>(c);
    }
  });
  Ranking r;
  r.collection = id;
  r.name = graph.name;
  GraphScores ensembled;
  r.order = ensemble_ranking(members, run.ensemble, run.tile_keep_default, &ensembled, run.tile_ensemble_spread);
  r.score = std::move(ensembled.score);
  r.unique_configs = unique;
  r.folds = static_cast<int>(folds.size());
  return r;
}

// Every config kept in source order, as a test graph is.
ProcessedGraph Ranker::Impl::prepare(const TileGraph& g) const {
  require_kind(Kind::Tile, "a tile graph's");
  validate(g);
  return to_processed(g, id, "test", kFoldTest, DedupPolicy::First, false);
}

ProcessedGraph Ranker::Impl::prepare(const LayoutGraph& g) const {
  require_kind(Kind::Layout, "a layout graph's");
  validate(g);
  return to_processed(g, id, "test", kFoldTest, DedupPolicy::First, false, run.prune.of(id));
}

Ranking Ranker::Impl::rank_graph(const TileGraph& g) const {
  ProcessedGraph p = prepare(g);
  require_adapted_graph(g, nullptr);
  return rank_prepared(p);
}

Ranking Ranker::Impl::rank_graph(const LayoutGraph& g) const {
  ProcessedGraph p = prepare(g);
  require_adapted_graph(g, &g.node_config_ids);
  return rank_prepared(p);
}

std::unique_ptr<Ranker::Impl> Ranker::Impl::adapted(const GraphBase& measured,
                                                    const std::vector<int64_t>* node_config_ids,
                                                    ProcessedGraph prepared, const std::vector<double>& runtimes,
                                                    const AdaptOptions& options, const std::string& label) const {
  const auto start = std::chrono::steady_clock::now();
  require_adapted_graph(measured, node_config_ids);  // an adapted ranker adapts further to its own graph only
  check_runtimes(runtimes, prepared.num_configs(), label);
  const FineTuning tuning = fine_tuning(run, id, options);
  auto out = std::make_unique<Impl>(Impl{run, collection, id, {}, std::nullopt, 0});
  Adaptation a;
  a.graph = label;
  a.measured_configs = prepared.num_configs();
  a.steps = tuning.steps;
  a.lr = tuning.lr;
  a.slate = std::min(tuning.slate, prepared.num_configs());
  a.seed = tuning.seed;
  a.loss = tuning.loss.name;
  for_each_fold(prepared, [&](const Fold& f, const ProcessedGraph& graph) {
    Fold copy{copy_model(*f.model, f.spec), f.spec, f.transform};
    const uint64_t stream = mix_seed(tuning.seed, id + "/fold" + std::to_string(out->folds.size()));
    const StepLosses losses = fine_tune(*copy.model, graph, collection.kind, runtimes, tuning, stream);
    a.first_loss += losses.first / static_cast<double>(folds.size());
    a.last_loss += losses.last / static_cast<double>(folds.size());
    out->folds.push_back(std::move(copy));
  });
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("adapted {} fold models of {} to {} ({} measured configs): {} steps each of {} configs, lr {:g}, "
               "seed {}, {} loss {:.4f} -> {:.4f}, in {:.2f} s",
               out->folds.size(), id, label, a.measured_configs, a.steps, a.slate, a.lr, a.seed, a.loss,
               a.first_loss, a.last_loss, a.seconds);
  out->adaptation = std::move(a);
  out->adapted_fingerprint = graph_fingerprint(measured, node_config_ids);
  return out;
}

Ranker::Ranker(const std::string& run_dir, const std::string& collection, const RankerOptions& options)
    : impl_(std::make_unique<Impl>(Impl{open_run_dir(run_dir), Collection::parse(collection), "", {}, std::nullopt, 0})) {
  impl_->id = impl_->collection.id();
  set_compute_threads(std::max(1, options.threads));
  if (options.keep_freed_memory) keep_freed_memory_for_reuse();
  const ModelSpec configured = impl_->run.configured_model(impl_->id);
  for (const std::string& path : impl_->run.fold_checkpoints(impl_->id)) {
    Impl::Fold f;
    CheckpointMeta meta;
    f.model = load_trained_model(path, configured, options.fused, &f.transform, &meta);
    // The spec load_trained_model built: the checkpoint's, or the configured one for a
    // checkpoint that records none.
    f.spec = meta.model.arch.empty() ? configured : meta.model;
    f.spec.num_node_feat = meta.model.num_node_feat;
    f.spec.options.fused = options.fused;
    impl_->folds.push_back(std::move(f));
  }
}

Ranker::Ranker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Ranker::~Ranker() = default;
Ranker::Ranker(Ranker&&) noexcept = default;
Ranker& Ranker::operator=(Ranker&&) noexcept = default;

const std::string& Ranker::collection() const { return impl_->id; }
int Ranker::folds() const { return static_cast<int>(impl_->folds.size()); }

namespace {

// A caller's graph and candidates as a release file's record (runtimes 0: unmeasured).
TileGraph tile_graph(const RankGraph& graph, const TileCandidates& configs) {
  TileGraph g;
  copy_graph(graph, g);
  g.config_feat = configs.config_feat;
  const size_t c = configs.config_feat.size() / kTileConfigDim;
  if (c * kTileConfigDim != configs.config_feat.size())
    throw Error("holds " + std::to_string(configs.config_feat.size()) + " values, not a multiple of 24", g.name,
                "config_feat");
  g.config_runtime.assign(c, 0);
  g.config_runtime_normalizers.assign(c, 1);
  return g;
}

LayoutGraph layout_graph(const RankGraph& graph, const LayoutCandidates& configs) {
  LayoutGraph g;
  copy_graph(graph, g);
  g.node_splits = graph.node_splits.empty() ? std::vector<int64_t>{0, graph.num_nodes} : graph.node_splits;
  g.node_config_ids = configs.node_config_ids;
  g.node_config_feat = configs.node_config_feat;
  const size_t row = configs.node_config_ids.size() * kLayoutConfigDim;
  if (row == 0 || configs.node_config_feat.size() % row != 0)
    throw Error("holds " + std::to_string(configs.node_config_feat.size()) + " values, not configs x " +
                    std::to_string(configs.node_config_ids.size()) + " nodes x 18",
                g.name, "node_config_feat");
  g.config_runtime.assign(configs.node_config_feat.size() / row, 0);
  return g;
}

// The configs of a file with a runtime (> 0), and their runtimes (tile: runtime /
// normalizer): the rest were not measured.
std::vector<int64_t> measured_configs(const std::vector<int64_t>& runtime, const std::string& path) {
  std::vector<int64_t> kept;
  for (size_t c = 0; c < runtime.size(); ++c)
    if (runtime[c] > 0) kept.push_back(static_cast<int64_t>(c));
  if (kept.size() < 2)
    throw Error("holds " + std::string(kept.empty() ? "no runtimes (every config's is 0" : "one runtime (") +
                    "): adapting needs the measured runtimes of at least two configs",
                path, "config_runtime");
  return kept;
}

template <typename T>
std::vector<T> rows_of(const std::vector<T>& values, const std::vector<int64_t>& rows, size_t width) {
  std::vector<T> out;
  out.reserve(rows.size() * width);
  for (int64_t r : rows) out.insert(out.end(), values.begin() + r * width, values.begin() + (r + 1) * width);
  return out;
}

}  // namespace

Ranking Ranker::rank(const RankGraph& graph, const TileCandidates& configs) const {
  return impl_->rank_graph(tile_graph(graph, configs));
}

Ranking Ranker::rank(const RankGraph& graph, const LayoutCandidates& configs) const {
  return impl_->rank_graph(layout_graph(graph, configs));
}

Ranking Ranker::rank_file(const std::string& npz_path) const {
  try {
    if (impl_->collection.kind == Kind::Tile) return impl_->rank_graph(load_tile_graph(npz_path));
    return impl_->rank_graph(load_layout_graph(npz_path));
  } catch (Error& e) {
    throw e.with_file(npz_path);
  }
}

Ranker Ranker::adapted(const RankGraph& graph, const TileCandidates& measured, const std::vector<double>& runtimes,
                       const AdaptOptions& options) const {
  const TileGraph g = tile_graph(graph, measured);
  return Ranker(impl_->adapted(g, nullptr, impl_->prepare(g), runtimes, options, g.name));
}

Ranker Ranker::adapted(const RankGraph& graph, const LayoutCandidates& measured, const std::vector<double>& runtimes,
                       const AdaptOptions& options) const {
  const LayoutGraph g = layout_graph(graph, measured);
  return Ranker(impl_->adapted(g, &g.node_config_ids, impl_->prepare(g), runtimes, options, g.name));
}

Ranker Ranker::adapted_file(const std::string& measured_npz, const AdaptOptions& options) const {
  try {
    std::vector<double> runtimes;
    if (impl_->collection.kind == Kind::Tile) {
      TileGraph g = load_tile_graph(measured_npz);
      const std::vector<int64_t> kept = measured_configs(g.config_runtime, measured_npz);
      for (int64_t c : kept)
        runtimes.push_back(static_cast<double>(g.config_runtime[c]) / static_cast<double>(g.config_runtime_normalizers[c]));
      g.config_feat = rows_of(g.config_feat, kept, kTileConfigDim);
      g.config_runtime = rows_of(g.config_runtime, kept, 1);
      g.config_runtime_normalizers = rows_of(g.config_runtime_normalizers, kept, 1);
      return Ranker(impl_->adapted(g, nullptr, impl_->prepare(g), runtimes, options, measured_npz));
    }
    LayoutGraph g = load_layout_graph(measured_npz);
    const std::vector<int64_t> kept = measured_configs(g.config_runtime, measured_npz);
    for (int64_t c : kept) runtimes.push_back(static_cast<double>(g.config_runtime[c]));
    g.node_config_feat = rows_of(g.node_config_feat, kept, g.node_config_ids.size() * kLayoutConfigDim);
    g.config_runtime = rows_of(g.config_runtime, kept, 1);
    return Ranker(impl_->adapted(g, &g.node_config_ids, impl_->prepare(g), runtimes, options, measured_npz));
  } catch (Error& e) {
    throw e.with_file(measured_npz);
  }
}

const Adaptation* Ranker::adaptation() const { return impl_->adaptation ? &*impl_->adaptation : nullptr; }

std::vector<std::string> trained_collections(const std::string& run_dir) {
  return open_run_dir(run_dir).collections();
}

}  // namespace tpuperf
