// The ranker library (include/tpuperf/ranker.h) on tpuperf's own pieces: the run
// directory (run_dir.h), the per-graph preparation preprocessing applies
// (common/graph/graph_prep.h), the feature transform, and the one prediction path
// (graph_scoring.h).
#include "tpuperf/ranker.h"

#include <torch/torch.h>

#include <filesystem>

#include "trainer/models/config_dims.h"
#include "common/base/error.h"
#include "common/graph/feature_transform.h"
#include "common/graph/graph.h"
#include "common/graph/graph_prep.h"
#include "trainer/models/allocator.h"
#include "trainer/models/checkpoint.h"
#include "trainer/models/thread_pools.h"
#include "trainer/rank/graph_scoring.h"
#include "trainer/rank/run_dir.h"

namespace tpuperf {

struct Ranker::Impl {
  RunDir run;
  Collection collection;
  std::string id;
  struct Fold {
    ModelPtr model;
    FeatureTransform transform;
  };
  std::vector<Fold> folds;

  Ranking rank_prepared(ProcessedGraph& graph) const;
  Ranking rank_graph(const TileGraph& g) const;
  Ranking rank_graph(const LayoutGraph& g) const;
  void require_kind(Kind kind, const std::string& what) const;
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

Ranking Ranker::Impl::rank_prepared(ProcessedGraph& graph) const {
  attach_config_dims(collection.kind, graph);  // from the raw features, before the transform
  const std::vector<float> untransformed = std::move(graph.node_feat);
  std::vector<GraphScores> members;
  const FeatureTransform* applied = nullptr;
  int64_t unique = 0;
  const int64_t chunk = run.chunk(id);
  for (const Fold& f : folds) {
    // Folds share the transform of their collection's train split; apply it once.
    if (!applied || !same_transform(*applied, f.transform)) {
      graph.node_feat = apply_transform(f.transform, untransformed.data(), graph.num_nodes);
      graph.num_node_feat = static_cast<int>(f.transform.kept_columns.size());
      applied = &f.transform;
    }
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
  }
  Ranking r;
  r.collection = id;
  r.name = graph.name;
  GraphScores ensembled;
  r.order = ensemble_ranking(members, run.ensemble, run.tile_keep_default, &ensembled);
  r.score = std::move(ensembled.score);
  r.unique_configs = unique;
  r.folds = static_cast<int>(folds.size());
  return r;
}

Ranking Ranker::Impl::rank_graph(const TileGraph& g) const {
  require_kind(Kind::Tile, "a tile graph's");
  validate(g);
  ProcessedGraph p = to_processed(g, id, "test", kFoldTest, DedupPolicy::First, false);
  return rank_prepared(p);
}

Ranking Ranker::Impl::rank_graph(const LayoutGraph& g) const {
  require_kind(Kind::Layout, "a layout graph's");
  validate(g);
  ProcessedGraph p = to_processed(g, id, "test", kFoldTest, DedupPolicy::First, false, run.prune.of(id));
  return rank_prepared(p);
}

Ranker::Ranker(const std::string& run_dir, const std::string& collection, const RankerOptions& options)
    : impl_(std::make_unique<Impl>(Impl{open_run_dir(run_dir), Collection::parse(collection), "", {}})) {
  impl_->id = impl_->collection.id();
  set_compute_threads(std::max(1, options.threads));
  if (options.keep_freed_memory) keep_freed_memory_for_reuse();
  const ModelSpec configured = impl_->run.configured_model(impl_->id);
  for (const std::string& path : impl_->run.fold_checkpoints(impl_->id)) {
    Impl::Fold f;
    f.model = load_trained_model(path, configured, options.fused, &f.transform);
    impl_->folds.push_back(std::move(f));
  }
}

Ranker::~Ranker() = default;
Ranker::Ranker(Ranker&&) noexcept = default;
Ranker& Ranker::operator=(Ranker&&) noexcept = default;

const std::string& Ranker::collection() const { return impl_->id; }
int Ranker::folds() const { return static_cast<int>(impl_->folds.size()); }

Ranking Ranker::rank(const RankGraph& graph, const TileCandidates& configs) const {
  TileGraph g;
  copy_graph(graph, g);
  g.config_feat = configs.config_feat;
  const size_t c = configs.config_feat.size() / kTileConfigDim;
  if (c * kTileConfigDim != configs.config_feat.size())
    throw Error("holds " + std::to_string(configs.config_feat.size()) + " values, not a multiple of 24", g.name,
                "config_feat");
  g.config_runtime.assign(c, 0);
  g.config_runtime_normalizers.assign(c, 1);
  return impl_->rank_graph(g);
}

Ranking Ranker::rank(const RankGraph& graph, const LayoutCandidates& configs) const {
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
  return impl_->rank_graph(g);
}

Ranking Ranker::rank_file(const std::string& npz_path) const {
  try {
    if (impl_->collection.kind == Kind::Tile) return impl_->rank_graph(load_tile_graph(npz_path));
    return impl_->rank_graph(load_layout_graph(npz_path));
  } catch (Error& e) {
    throw e.with_file(npz_path);
  }
}

std::vector<std::string> trained_collections(const std::string& run_dir) {
  return open_run_dir(run_dir).collections();
}

}  // namespace tpuperf
