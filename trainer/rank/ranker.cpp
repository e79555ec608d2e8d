// The ranker library (include/tpuperf/ranker.h) on tpuperf's own pieces: the run
// directory (run_dir.h), the per-graph preparation preprocessing applies
// (common/graph/graph_prep.h), the feature transform, and the one prediction path
// (graph_scoring.h); adaptation to measured configs in measured_blend.h (the default) and
// adapt.h (fine-tuning), the choice of configs to measure next in suggest.h.
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
#include "trainer/rank/measured_blend.h"
#include "trainer/rank/suggest.h"
#include "trainer/eval/submission.h"
#include "trainer/predict/graph_scoring.h"
#include "trainer/predict/run_dir.h"

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
  std::optional<Blend> blend;  // AdaptMethod::Blend's, applied to the fold models' scores

  // Every fold model's scores of every config of a prepared graph, in config order.
  struct MemberScores {
    std::vector<GraphScores> members;
    int64_t unique = 0;  // distinct configs
    std::vector<std::vector<double>> scores() const;
  };

  // Calls fn(fold, the graph as that fold's model reads it) for every fold in order; the
  // graph's raw features are transformed once per distinct transform.
  void for_each_fold(ProcessedGraph& graph, const std::function<void(const Fold&, const ProcessedGraph&)>& fn) const;
  MemberScores score_members(ProcessedGraph& graph) const;
  // The ensemble's scores of every config (the blend's when adapted so) and, when spread is
  // given, the fold models' disagreement in standardized units.
  std::vector<double> predicted(const MemberScores& m, const ConfigRows& rows, std::vector<double>* spread) const;
  // Where this ranker's rankings put config 0 of a tile graph: the run's rule
  // (first_pick.json) unless measurements of the graph now order it (a blend that uses its
  // fit, or fine-tuned models); a blend that kept the run alone ranks as the run does, so
  // a measurement that does not help changes nothing.
  TileDefault tile_rule() const;
  Ranking rank_prepared(ProcessedGraph& graph, const ConfigRows& rows) const;
  Ranking rank_graph(const TileGraph& g) const;
  Ranking rank_graph(const LayoutGraph& g) const;
  Suggestion suggest_prepared(ProcessedGraph graph, const ConfigRows& rows, const SuggestOptions& options) const;
  void require_kind(Kind kind, const std::string& what) const;
  // Throws Error naming both graphs unless this ranker is not adapted or was adapted to g.
  void require_adapted_graph(const GraphBase& g, const std::vector<int64_t>* node_config_ids) const;
  ProcessedGraph prepare(const TileGraph& g) const;
  ProcessedGraph prepare(const LayoutGraph& g) const;
  // A copy of this ranker adapted to the measured graph (every config of `measured` has a
  // runtime; rows are its configs'); `label` names it in errors and the result.
  std::unique_ptr<Impl> adapted(const GraphBase& measured, const std::vector<int64_t>* node_config_ids,
                                ProcessedGraph prepared, const ConfigRows& rows, const std::vector<double>& runtimes,
                                const AdaptOptions& options, const std::string& label) const;
  // AdaptMethod::FineTune's and Blend's parts of it.
  void fine_tune_folds(Impl& out, Adaptation& a, ProcessedGraph& prepared, const std::vector<double>& runtimes,
                       const AdaptOptions& options) const;
  void fit_blend_of(Impl& out, Adaptation& a, ProcessedGraph& prepared, const ConfigRows& rows,
                    const std::vector<double>& runtimes, uint64_t seed) const;
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

std::vector<std::vector<double>> Ranker::Impl::MemberScores::scores() const {
  std::vector<std::vector<double>> out;
  for (const GraphScores& m : members) out.push_back(m.score);
  return out;
}

Ranker::Impl::MemberScores Ranker::Impl::score_members(ProcessedGraph& graph) const {
  MemberScores out;
  const int64_t chunk = run.chunk(id);
  for_each_fold(graph, [&](const Fold& f, const ProcessedGraph& graph) {
    const ConfigSource source = source_of(graph, collection.kind);
    GraphScores s = score_every_config(*f.model, source, chunk);
    s.collection = id;
    s.split = "test";
    s.name = graph.name;
    s.model = static_cast<int>(out.members.size());
    out.members.push_back(std::move(s));
    if (out.unique == 0) {
      const auto first = first_duplicates(source, 1024);
      for (size_t c = 0; c < first.size(); ++c) out.unique += first[c] == static_cast<int64_t>(c);
    }
  });
  return out;
}

std::vector<double> Ranker::Impl::predicted(const MemberScores& m, const ConfigRows& rows,
                                            std::vector<double>* spread) const {
  const std::vector<std::vector<double>> scores = m.scores();
  if (blend) return blend_scores(*blend, scores, rows, spread);
  return standardized_ensemble(fit_standardizer(scores), scores, spread);
}

TileDefault Ranker::Impl::tile_rule() const {
  const bool measured_order = adaptation && !(blend && blend->weight_fit == 0);
  return measured_order ? TileDefault{run.tile_keep_default, false} : run.tile_default(id);
}

Ranking Ranker::Impl::rank_prepared(ProcessedGraph& graph, const ConfigRows& rows) const {
  const MemberScores m = score_members(graph);
  Ranking r;
  r.collection = id;
  r.name = graph.name;
  GraphScores ensembled;
  if (blend) {
    // The blend's scores through the ranking every other path takes (tile's kept default).
    ensembled = m.members.front();
    ensembled.model = -1;
    ensembled.score = predicted(m, rows, nullptr);
    r.order = ranked_configs(ensembled, tile_rule());
  } else {
    r.order = ensemble_ranking(m.members, run.ensemble, tile_rule(), &ensembled, run.tile_ensemble_spread);
  }
  r.score = std::move(ensembled.score);
  r.unique_configs = m.unique;
  r.folds = static_cast<int>(folds.size());
  return r;
}

Suggestion Ranker::Impl::suggest_prepared(ProcessedGraph graph, const ConfigRows& rows,
                                          const SuggestOptions& options) const {
  check_suggest_options(options, graph.num_configs(), graph.name);
  std::vector<double> spread;
  const std::vector<double> score = predicted(score_members(graph), rows, &spread);
  // The run's first pick opens the batch as it opens the ranking.
  Suggestion s = suggest_configs(score, spread, rows, options, tile_rule().first ? 0 : -1);
  s.collection = id;
  s.name = graph.name;
  s.candidates = graph.num_configs();
  return s;
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
  return rank_prepared(p, tile_rows(g.config_feat));
}

Ranking Ranker::Impl::rank_graph(const LayoutGraph& g) const {
  ProcessedGraph p = prepare(g);
  require_adapted_graph(g, &g.node_config_ids);
  return rank_prepared(p, layout_rows(g.node_config_feat, g.num_config_nodes()));
}

std::unique_ptr<Ranker::Impl> Ranker::Impl::adapted(const GraphBase& measured,
                                                    const std::vector<int64_t>* node_config_ids,
                                                    ProcessedGraph prepared, const ConfigRows& rows,
                                                    const std::vector<double>& runtimes,
                                                    const AdaptOptions& options, const std::string& label) const {
  const auto start = std::chrono::steady_clock::now();
  require_adapted_graph(measured, node_config_ids);  // an adapted ranker adapts further to its own graph only
  check_runtimes(runtimes, prepared.num_configs(), label);
  auto out = std::make_unique<Impl>(Impl{run, collection, id, {}, std::nullopt, 0, std::nullopt});
  Adaptation a;
  a.graph = label;
  a.measured_configs = prepared.num_configs();
  a.seed = options.seed;
  if (options.method == AdaptMethod::FineTune)
    fine_tune_folds(*out, a, prepared, runtimes, options);
  else
    fit_blend_of(*out, a, prepared, rows, runtimes, options.seed);
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.method == AdaptMethod::FineTune)
    spdlog::info("adapted {} fold models of {} to {} ({} measured configs) by fine-tuning: {} steps each of {} "
                 "configs, lr {:g}, seed {}, {} loss {:.4f} -> {:.4f}, in {:.2f} s",
                 out->folds.size(), id, label, a.measured_configs, a.steps, a.slate, a.lr, a.seed, a.loss,
                 a.first_loss, a.last_loss, a.seconds);
  else
    spdlog::info("adapted {} to {} ({} measured configs) by blending: {} (weights run {:.3f}, fit {:.3f}; held-out "
                 "Kendall tau over {} folds: run {:.3f}, chosen {:.3f}), seed {}, in {:.3f} s",
                 id, label, a.measured_configs, a.blend, a.weight_run, a.weight_fit, a.cv_folds, a.cv_tau_run,
                 a.cv_tau, a.seed, a.seconds);
  out->adaptation = std::move(a);
  out->adapted_fingerprint = graph_fingerprint(measured, node_config_ids);
  return out;
}

void Ranker::Impl::fine_tune_folds(Impl& out, Adaptation& a, ProcessedGraph& prepared,
                                   const std::vector<double>& runtimes, const AdaptOptions& options) const {
  const FineTuning tuning = fine_tuning(run, id, options);
  a.method = "finetune";
  a.blend = "run";
  a.steps = tuning.steps;
  a.lr = tuning.lr;
  a.slate = std::min(tuning.slate, prepared.num_configs());
  a.loss = tuning.loss.name;
  for_each_fold(prepared, [&](const Fold& f, const ProcessedGraph& graph) {
    Fold copy{copy_model(*f.model, f.spec), f.spec, f.transform};
    const uint64_t stream = mix_seed(tuning.seed, id + "/fold" + std::to_string(out.folds.size()));
    const StepLosses losses = fine_tune(*copy.model, graph, collection.kind, runtimes, tuning, stream);
    a.first_loss += losses.first / static_cast<double>(folds.size());
    a.last_loss += losses.last / static_cast<double>(folds.size());
    out.folds.push_back(std::move(copy));
  });
}

void Ranker::Impl::fit_blend_of(Impl& out, Adaptation& a, ProcessedGraph& prepared, const ConfigRows& rows,
                                const std::vector<double>& runtimes, uint64_t seed) const {
  // The fold models are shared, not copied: a blend only reads their scores.
  out.folds = folds;
  Blend b = fit_blend(score_members(prepared).scores(), rows, runtimes, seed);
  a.method = "blend";
  a.blend = b.label;
  a.weight_run = b.weight_run;
  a.weight_fit = b.weight_fit;
  a.cv_folds = b.cv_folds;
  a.cv_tau_run = b.cv_tau_run;
  a.cv_tau = b.cv_tau;
  out.blend = std::move(b);
}

Ranker::Ranker(const std::string& run_dir, const std::string& collection, const RankerOptions& options)
    : impl_(std::make_unique<Impl>(Impl{open_run_dir(run_dir), Collection::parse(collection), "", {}, std::nullopt, 0, std::nullopt})) {
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
  return Ranker(impl_->adapted(g, nullptr, impl_->prepare(g), tile_rows(g.config_feat), runtimes, options, g.name));
}

Ranker Ranker::adapted(const RankGraph& graph, const LayoutCandidates& measured, const std::vector<double>& runtimes,
                       const AdaptOptions& options) const {
  const LayoutGraph g = layout_graph(graph, measured);
  return Ranker(impl_->adapted(g, &g.node_config_ids, impl_->prepare(g),
                               layout_rows(g.node_config_feat, g.num_config_nodes()), runtimes, options, g.name));
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
      return Ranker(
          impl_->adapted(g, nullptr, impl_->prepare(g), tile_rows(g.config_feat), runtimes, options, measured_npz));
    }
    LayoutGraph g = load_layout_graph(measured_npz);
    const std::vector<int64_t> kept = measured_configs(g.config_runtime, measured_npz);
    for (int64_t c : kept) runtimes.push_back(static_cast<double>(g.config_runtime[c]));
    g.node_config_feat = rows_of(g.node_config_feat, kept, g.node_config_ids.size() * kLayoutConfigDim);
    g.config_runtime = rows_of(g.config_runtime, kept, 1);
    return Ranker(impl_->adapted(g, &g.node_config_ids, impl_->prepare(g),
                                 layout_rows(g.node_config_feat, g.num_config_nodes()), runtimes, options, measured_npz));
  } catch (Error& e) {
    throw e.with_file(measured_npz);
  }
}

const Adaptation* Ranker::adaptation() const { return impl_->adaptation ? &*impl_->adaptation : nullptr; }

Suggestion Ranker::suggest(const RankGraph& graph, const TileCandidates& configs, const SuggestOptions& options) const {
  const TileGraph g = tile_graph(graph, configs);
  ProcessedGraph p = impl_->prepare(g);
  impl_->require_adapted_graph(g, nullptr);
  return impl_->suggest_prepared(std::move(p), tile_rows(g.config_feat), options);
}

Suggestion Ranker::suggest_file(const std::string& npz_path, const SuggestOptions& options) const {
  try {
    if (impl_->collection.kind == Kind::Tile) {
      const TileGraph g = load_tile_graph(npz_path);
      impl_->require_adapted_graph(g, nullptr);
      return impl_->suggest_prepared(impl_->prepare(g), tile_rows(g.config_feat), options);
    }
    const LayoutGraph g = load_layout_graph(npz_path);
    impl_->require_adapted_graph(g, &g.node_config_ids);
    return impl_->suggest_prepared(impl_->prepare(g), layout_rows(g.node_config_feat, g.num_config_nodes()),
                                   options);
  } catch (Error& e) {
    throw e.with_file(npz_path);
  }
}

Suggestion Ranker::suggest(const RankGraph& graph, const LayoutCandidates& configs,
                           const SuggestOptions& options) const {
  const LayoutGraph g = layout_graph(graph, configs);
  ProcessedGraph p = impl_->prepare(g);
  impl_->require_adapted_graph(g, &g.node_config_ids);
  return impl_->suggest_prepared(std::move(p), layout_rows(g.node_config_feat, g.num_config_nodes()), options);
}

std::vector<std::string> trained_collections(const std::string& run_dir) {
  return open_run_dir(run_dir).collections();
}

}  // namespace tpuperf
