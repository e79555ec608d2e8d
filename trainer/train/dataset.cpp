#include "trainer/train/dataset.h"

#include <chrono>
#include <numeric>
#include <set>

#include "trainer/models/config_dims.h"
#include "common/base/error.h"
#include "common/graph/feature_transform.h"
#include "common/graph/graph.h"
#include "common/base/log.h"
#include "common/shards/shard_reader.h"

namespace tpuperf {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

template <class T>
int64_t bytes_of(const std::vector<T>& v) {
  return static_cast<int64_t>(v.size() * sizeof(T));
}

int64_t graph_bytes(const ProcessedGraph& g) {
  return bytes_of(g.node_feat) + bytes_of(g.node_opcode) + bytes_of(g.edge_index) + bytes_of(g.config_dims) +
         bytes_of(g.config_runtime) + bytes_of(g.config_feat) +
         bytes_of(g.config_runtime_normalizers) + bytes_of(g.node_config_ids) +
         bytes_of(g.node_config_packed) + bytes_of(g.node_splits);
}

std::string graph_label(const ManifestGraph& m) {
  return "graph '" + m.name + "' (index " + std::to_string(m.index) + ")";
}

// The shard must hold the graph the manifest says it holds, or we would train on
// another graph's rows under this graph's fold.
void check_entry(const ShardReader& r, const ManifestGraph& m) {
  auto fail = [&](const std::string& why) {
    throw Error(graph_label(m) + ": " + why + " (manifest and shard disagree)", r.path());
  };
  if (r.collection() != m.collection) fail("shard collection is '" + r.collection() + "'");
  if (r.split() != m.split) fail("shard split is '" + r.split() + "'");
  if (m.index < 0 || m.index >= r.num_graphs())
    fail("index outside the shard's " + std::to_string(r.num_graphs()) + " graphs");
  const ShardGraphInfo& f = r.info(m.index);
  if (f.name != m.name) fail("the shard has '" + f.name + "' at that index");
  if (f.fold != m.fold) fail("shard fold " + std::to_string(f.fold));
  if (f.num_nodes != m.num_nodes || f.num_edges != m.num_edges ||
      f.num_configs != m.num_configs)
    fail("node, edge or config counts differ");
  if (r.num_node_feat() != kNodeFeatDim)
    fail("shard has " + std::to_string(r.num_node_feat()) + " node feature columns, expected " +
         std::to_string(kNodeFeatDim) + " untransformed ones");
}

template <class T>
std::vector<T> gather_rows(const std::vector<T>& src, const std::vector<int64_t>& rows,
                           size_t width) {
  std::vector<T> out;
  out.reserve(rows.size() * width);
  for (int64_t r : rows) {
    const auto first = src.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * width);
    out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(width));
  }
  return out;
}

}  // namespace

GraphSet::GraphSet(const std::string& processed_dir, const Manifest& manifest,
                   const std::string& collection, const Filter& keep, const std::string& label,
                   const FeatureTransform* transform)
    : dir_(processed_dir), collection_(collection) {
  kind_ = Collection::parse(collection).kind;
  const FeatureTransform* t = transform ? transform : manifest.find_transform(collection);
  if (t == nullptr)
    throw Error("no feature transform for collection '" + collection + "'",
                processed_dir + "/" + kManifestFileName, "feature_transforms");
  transform_ = *t;
  load(manifest, keep, label);
}

GraphSet::GraphSet(const std::string& processed_dir, const std::string& collection,
                   const Filter& keep, const std::string& label, const FeatureTransform* transform)
    : GraphSet(processed_dir, read_manifest(processed_dir + "/" + kManifestFileName), collection,
               keep, label, transform) {}

GraphSet::~GraphSet() = default;
GraphSet::GraphSet(GraphSet&&) noexcept = default;
GraphSet& GraphSet::operator=(GraphSet&&) noexcept = default;

int GraphSet::num_node_feat() const { return static_cast<int>(transform_.kept_columns.size()); }

const ShardReader& GraphSet::reader(const std::string& shard_file) const {
  auto it = readers_.find(shard_file);
  if (it == readers_.end())
    it = readers_.emplace(shard_file, std::make_unique<ShardReader>(dir_ + "/" + shard_file)).first;
  return *it->second;
}

ProcessedGraph GraphSet::load_graph(const ManifestGraph& m) const {
  const ShardReader& r = reader(m.shard);
  try {
    check_entry(r, m);
    ProcessedGraph g = kind_ == Kind::Tile ? r.read(m.index) : r.read_structure(m.index);
    attach_config_dims(kind_, g);  // from the raw features, before the transform
    g.node_feat = apply_transform(transform_, g.node_feat.data(), g.num_nodes);
    g.num_node_feat = num_node_feat();
    return g;
  } catch (Error& e) {
    e.with_file(r.path());
    throw;
  }
}

void GraphSet::load(const Manifest& manifest, const Filter& keep, const std::string& label) {
  for (const ManifestGraph* m : manifest.graphs_of(collection_))
    if (keep(*m)) entries_.push_back(*m);
  const std::string what = collection_ + (label.empty() ? "" : " (" + label + ")");
  spdlog::info("loading {} graphs of {}", entries_.size(), what);

  const auto t0 = Clock::now();
  auto last_log = t0;
  graphs_.reserve(entries_.size());
  for (const ManifestGraph& m : entries_) {
    graphs_.push_back(load_graph(m));
    memory_bytes_ += graph_bytes(graphs_.back());
    if (seconds_since(last_log) >= 10.0) {
      last_log = Clock::now();
      spdlog::info("loading {}: {}/{} graphs, {:.1f} MB, {:.1f} s", what, graphs_.size(),
                   entries_.size(), memory_bytes_ / 1e6, seconds_since(t0));
    }
  }
  // Tile rows are all in memory now; only layout reads configs later.
  if (kind_ == Kind::Tile) readers_.clear();
  spdlog::info("loaded {} graphs of {}: {:.1f} MB in memory, {:.1f} s", graphs_.size(), what,
               memory_bytes_ / 1e6, seconds_since(t0));
}

void GraphSet::check_index(int64_t i) const {
  if (i < 0 || i >= size())
    throw Error("graph index " + std::to_string(i) + " outside [0, " + std::to_string(size()) +
                ")", "", collection_);
}

void GraphSet::check_configs(int64_t i, const std::vector<int64_t>& config_indices) const {
  const int64_t c = graphs_[static_cast<size_t>(i)].num_configs();
  for (int64_t k : config_indices)
    if (k < 0 || k >= c)
      throw Error("config " + std::to_string(k) + " outside [0, " + std::to_string(c) + ")", "",
                  key(i));
}

const ProcessedGraph& GraphSet::graph(int64_t i) const {
  check_index(i);
  return graphs_[static_cast<size_t>(i)];
}

const ManifestGraph& GraphSet::entry(int64_t i) const {
  check_index(i);
  return entries_[static_cast<size_t>(i)];
}

std::string GraphSet::key(int64_t i) const { return collection_ + ":" + entry(i).name; }

std::vector<int64_t> GraphSet::num_configs() const {
  std::vector<int64_t> out;
  out.reserve(graphs_.size());
  for (const ProcessedGraph& g : graphs_) out.push_back(g.num_configs());
  return out;
}

ProcessedGraph GraphSet::with_configs(int64_t i, const std::vector<int64_t>& config_indices) const {
  check_index(i);
  check_configs(i, config_indices);
  const ProcessedGraph& src = graphs_[static_cast<size_t>(i)];
  ProcessedGraph out = src;
  out.config_runtime = gather_rows(src.config_runtime, config_indices, 1);
  if (kind_ == Kind::Tile) {
    out.config_feat = gather_rows(src.config_feat, config_indices, kTileConfigDim);
    out.config_runtime_normalizers = gather_rows(src.config_runtime_normalizers, config_indices, 1);
    return out;
  }
  const ManifestGraph& m = entries_[static_cast<size_t>(i)];
  const ShardReader& r = reader(m.shard);
  ConfigRows rows;
  try {
    rows = r.read_configs(m.index, config_indices);
  } catch (Error& e) {
    e.with_file(r.path());
    throw;
  }
  const size_t expect = config_indices.size() * src.node_config_ids.size();
  if (rows.node_config_packed.size() != expect)
    throw Error(graph_label(m) + ": read " + std::to_string(rows.node_config_packed.size()) +
                    " packed values, expected " + std::to_string(expect),
                r.path(), "node_config_packed");
  out.node_config_packed = std::move(rows.node_config_packed);
  return out;
}

std::set<std::string> GraphSet::shards() const {
  std::set<std::string> out;
  for (const ManifestGraph& m : entries_) out.insert(m.shard);
  return out;
}

void GraphSet::set_config_cache_mb(double mb) {
  if (kind_ != Kind::Layout || entries_.empty() || mb <= 0) return;
  const std::set<std::string> all = shards();
  // Never below HDF5's default of 1 MiB per shard: a share smaller than a chunk caches nothing.
  constexpr double kMiB = 1024 * 1024;
  const auto per_shard = static_cast<size_t>(std::max(kMiB, mb * kMiB / static_cast<double>(all.size())));
  for (const std::string& shard : all) {
    reader(shard);  // opened if it is not yet
    readers_.at(shard)->set_config_cache_bytes(per_shard);
  }
}

int64_t GraphSet::config_cache_bytes() const {
  int64_t sum = 0;
  for (const std::string& shard : shards()) sum += static_cast<int64_t>(reader(shard).config_cache_bytes());
  return sum;
}

GraphSlate GraphSet::slate(int64_t i, const std::vector<int64_t>& config_indices) const {
  check_index(i);
  GraphSlate s;
  s.configs = config_indices;
  if (kind_ == Kind::Tile) {
    check_configs(i, config_indices);
    s.graph = &graphs_[static_cast<size_t>(i)];
    s.batch_configs = config_indices;
    return s;
  }
  s.view = std::make_shared<const ProcessedGraph>(with_configs(i, config_indices));
  s.graph = s.view.get();
  s.batch_configs.resize(config_indices.size());
  std::iota(s.batch_configs.begin(), s.batch_configs.end(), int64_t{0});
  return s;
}

}  // namespace tpuperf
