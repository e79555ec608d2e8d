#include "common/shards/shard_reader.h"

#include <unistd.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/shards/hdf5.h"

namespace tpuperf {

namespace {

// Consecutive rows [first, first + count) of a dataset.
struct Run {
  hsize_t first, count;
};

}  // namespace

struct ShardReader::Impl {
  std::string path, collection, split;
  h5::Handle file;
  bool tile = false;
  int num_node_feat = 0;
  std::vector<ShardGraphInfo> infos;
  std::unordered_map<std::string, int64_t> by_name;
  std::vector<int64_t> node_off, edge_off, config_off, config_node_off, packed_off, split_off;
  mutable std::unordered_map<std::string, h5::Handle> dsets;  // opened on first use
  size_t config_cache_bytes = 0;  // node_config_packed's chunk cache; 0: HDF5's default

  hid_t dataset(const std::string& name) const;
  int dims(const std::string& name, hsize_t d[2]) const {
    return h5::dataset_dims(dataset(name), d, path, name);
  }
  hsize_t rows(const std::string& name) const {
    hsize_t d[2];
    dims(name, d);
    return d[0];
  }
  template <class T>
  std::vector<T> read_whole(const std::string& name, size_t expect) const;
  std::vector<std::string> read_names(size_t expect) const;
  void read_runs(const std::string& name, hid_t mem_type, const std::vector<Run>& runs,
                 void* out) const;
  template <class T>
  void read_range(const std::string& name, int64_t first, int64_t rows, size_t cols,
                  std::vector<T>& out) const {
    out.resize(static_cast<size_t>(rows) * cols);
    read_runs(name, h5::native_type<T>(), {{static_cast<hsize_t>(first), static_cast<hsize_t>(rows)}},
              out.data());
  }

  void open();
  void check_identity() const;
  void load_tables();
  void read_structure_into(int64_t i, ProcessedGraph& g) const;
  void check_index(int64_t i) const;
  Error graph_error(int64_t i, const Error& e) const;
  // read() of graph i: an Error names the graph (and keeps the dataset and the cause).
  template <class Read>
  auto of_graph(int64_t i, Read read) const {
    check_index(i);
    try {
      return read(infos[i]);
    } catch (const Error& e) {
      throw graph_error(i, e);
    }
  }
};

hid_t ShardReader::Impl::dataset(const std::string& name) const {
  auto it = dsets.find(name);
  if (it != dsets.end()) return it->second.get();
  const size_t cache = name == "node_config_packed" ? config_cache_bytes : 0;
  return dsets.emplace(name, h5::open_dataset(file.get(), name, path, cache)).first->second.get();
}

// One H5Dread per run: a union of many hyperslabs costs quadratic time to build. Runs that
// share a chunk hit the chunk cache, so each chunk is inflated once.
void ShardReader::Impl::read_runs(const std::string& name, hid_t mem_type,
                                  const std::vector<Run>& runs, void* out) const {
  h5::RowReader reader(dataset(name), mem_type, path, name);
  auto* p = static_cast<unsigned char*>(out);
  for (const Run& r : runs) {
    reader.read(r.first, r.count, p);
    p += r.count * reader.row_bytes();
  }
}

template <class T>
std::vector<T> ShardReader::Impl::read_whole(const std::string& name, size_t expect) const {
  hsize_t d[2];
  if (dims(name, d) != 1 || d[0] != expect)
    throw Error("expected " + std::to_string(expect) + " values, found shape (" +
                    std::to_string(d[0]) + ", " + std::to_string(d[1]) + ")",
                path, name);
  std::vector<T> v(expect);
  read_runs(name, h5::native_type<T>(), {{0, expect}}, v.data());
  return v;
}

std::vector<std::string> ShardReader::Impl::read_names(size_t expect) const {
  hsize_t d[2];
  if (dims("name", d) != 1 || d[0] != expect)
    throw Error("expected " + std::to_string(expect) + " names", path, "name");
  const size_t len = h5::fixed_string_size(dataset("name"), path, "name");
  h5::Handle type = h5::dataset_type(dataset("name"), path, "name");
  std::vector<char> buf(expect * len);
  read_runs("name", type.get(), {{0, expect}}, buf.data());
  std::vector<std::string> names(expect);
  for (size_t i = 0; i < expect; ++i) {
    const char* p = &buf[i * len];
    names[i].assign(p, std::find(p, p + len, '\0'));
  }
  return names;
}

void ShardReader::Impl::open() {
  if (::access(path.c_str(), R_OK) != 0) throw Error("cannot open shard: no such readable file", path);
  if (!h5::is_hdf5_file(path)) throw Error("not an HDF5 file, so not a tpuperf shard", path);
  file = h5::open_file_readonly(path);
  check_identity();
  collection = h5::read_string_attr(file.get(), "collection", path);
  split = h5::read_string_attr(file.get(), "split", path);
  try {
    tile = Collection::parse(collection).kind == Kind::Tile;
  } catch (Error& e) {
    throw e.with_file(path).with_key("collection");
  }
  load_tables();
  dsets.clear();  // the row datasets reopen on first read; the small ones are done
}

// A tpuperf shard of a schema version this build reads. Version 1 differs only by a
// /feature_transform group, which is ignored.
void ShardReader::Impl::check_identity() const {
  const hid_t f = file.get();
  if (!h5::has_attr(f, "schema_version", path) || !h5::has_attr(f, "created_by", path) ||
      h5::read_string_attr(f, "created_by", path) != kShardCreatedBy)
    throw Error("not a tpuperf shard (no schema_version/created_by attributes of " +
                    std::string(kShardCreatedBy) + ")",
                path);
  const int64_t version = h5::read_int_attr(f, "schema_version", path);
  if (version < kShardOldestReadableVersion || version > kShardSchemaVersion)
    throw Error("shard schema_version " + std::to_string(version) + " is not one of the " +
                    std::to_string(kShardOldestReadableVersion) + ".." +
                    std::to_string(kShardSchemaVersion) +
                    " this build reads: rerun tpuperf-preprocess with this build",
                path, "schema_version");
}

void ShardReader::Impl::load_tables() {
  const int64_t g = h5::read_int_attr(file.get(), "num_graphs", path);
  if (g < 0) throw Error("negative num_graphs", path, "num_graphs");
  const size_t n = static_cast<size_t>(g);
  const auto names = read_names(n);
  const auto fold = read_whole<int32_t>("fold", n);
  auto i64 = [&](const char* name, size_t len) { return read_whole<int64_t>(name, len); };
  const auto num_nodes = i64("num_nodes", n), num_edges = i64("num_edges", n),
             num_configs = i64("num_configs", n), num_config_nodes = i64("num_config_nodes", n),
             configs_before = i64("configs_before", n), nodes_before = i64("nodes_before", n),
             edges_before = i64("edges_before", n);
  node_off = i64("node_offsets", n + 1);
  edge_off = i64("edge_offsets", n + 1);
  config_off = i64("config_offsets", n + 1);
  config_node_off = i64("config_node_offsets", n + 1);
  packed_off = i64("packed_offsets", n + 1);
  split_off = i64("split_offsets", n + 1);
  infos.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ShardGraphInfo& f = infos[i];
    f.name = names[i];
    f.fold = fold[i];
    f.num_nodes = num_nodes[i];
    f.num_edges = num_edges[i];
    f.num_configs = num_configs[i];
    f.num_config_nodes = num_config_nodes[i];
    f.configs_before = configs_before[i];
    f.nodes_before = nodes_before[i];
    f.edges_before = edges_before[i];
    by_name.emplace(f.name, static_cast<int64_t>(i));
  }
  // The offsets must agree with the counts and the datasets' lengths, or reads would
  // return another graph's rows.
  auto agree = [&](const char* off_name, const std::vector<int64_t>& off, auto count_of) {
    if (off[0] != 0) throw Error("does not start at 0", path, off_name);
    for (size_t i = 0; i < n; ++i)
      if (off[i + 1] - off[i] != count_of(infos[i]))
        throw Error("graph '" + infos[i].name + "' (index " + std::to_string(i) +
                        "): offsets disagree with its counts",
                    path, off_name);
  };
  agree("node_offsets", node_off, [](const ShardGraphInfo& f) { return f.num_nodes; });
  agree("edge_offsets", edge_off, [](const ShardGraphInfo& f) { return f.num_edges; });
  agree("config_offsets", config_off, [](const ShardGraphInfo& f) { return f.num_configs; });
  agree("config_node_offsets", config_node_off, [](const ShardGraphInfo& f) { return f.num_config_nodes; });
  agree("packed_offsets", packed_off,
        [this](const ShardGraphInfo& f) { return tile ? 0 : f.num_configs * f.num_config_nodes; });
  for (size_t i = 0; i < n; ++i)
    if (split_off[i + 1] < split_off[i]) throw Error("offsets decrease", path, "split_offsets");
  auto rows_are = [&](const char* name, int64_t expect) {
    if (static_cast<int64_t>(rows(name)) != expect)
      throw Error("has " + std::to_string(rows(name)) + " rows, the offsets say " +
                      std::to_string(expect),
                  path, name);
  };
  hsize_t d[2];
  dims("node_feat", d);
  num_node_feat = static_cast<int>(d[1]);
  rows_are("node_feat", node_off[n]);
  rows_are("node_opcode", node_off[n]);
  rows_are("edge_index", edge_off[n]);
  rows_are("config_runtime", config_off[n]);
  rows_are("config_feat", tile ? config_off[n] : 0);
  rows_are("config_runtime_normalizers", tile ? config_off[n] : 0);
  rows_are("node_config_ids", config_node_off[n]);
  rows_are("node_config_packed", packed_off[n]);
  rows_are("node_splits", split_off[n]);
}

void ShardReader::Impl::check_index(int64_t i) const {
  if (i < 0 || i >= static_cast<int64_t>(infos.size()))
    throw Error("graph index " + std::to_string(i) + " outside [0, " +
                    std::to_string(infos.size()) + ")",
                path);
}

Error ShardReader::Impl::graph_error(int64_t i, const Error& e) const {
  return Error("graph '" + infos[i].name + "' (index " + std::to_string(i) + "): " + e.reason(),
               path, e.key());
}

void ShardReader::Impl::read_structure_into(int64_t i, ProcessedGraph& g) const {
  const ShardGraphInfo& f = infos[i];
  g.collection = collection;
  g.split = split;
  g.name = f.name;
  g.fold = f.fold;
  g.num_nodes = f.num_nodes;
  g.num_node_feat = num_node_feat;
  g.configs_before = f.configs_before;
  g.nodes_before = f.nodes_before;
  g.edges_before = f.edges_before;
  read_range("node_feat", node_off[i], f.num_nodes, num_node_feat, g.node_feat);
  read_range("node_opcode", node_off[i], f.num_nodes, 1, g.node_opcode);
  read_range("edge_index", edge_off[i], f.num_edges, 2, g.edge_index);
  read_range("config_runtime", config_off[i], f.num_configs, 1, g.config_runtime);
  if (!tile) {
    read_range("node_config_ids", config_node_off[i], f.num_config_nodes, 1, g.node_config_ids);
    read_range("node_splits", split_off[i], split_off[i + 1] - split_off[i], 1, g.node_splits);
  }
}

ShardReader::ShardReader(const std::string& path)
    : impl_((quiet_hdf5(), std::make_unique<Impl>())) {
  impl_->path = path;
  impl_->open();
}

ShardReader::~ShardReader() = default;
ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;

const std::string& ShardReader::path() const { return impl_->path; }
const std::string& ShardReader::collection() const { return impl_->collection; }
const std::string& ShardReader::split() const { return impl_->split; }
bool ShardReader::is_tile() const { return impl_->tile; }
int ShardReader::num_node_feat() const { return impl_->num_node_feat; }
int64_t ShardReader::num_graphs() const { return static_cast<int64_t>(impl_->infos.size()); }

const ShardGraphInfo& ShardReader::info(int64_t i) const {
  impl_->check_index(i);
  return impl_->infos[i];
}

std::vector<std::string> ShardReader::names() const {
  std::vector<std::string> v;
  v.reserve(impl_->infos.size());
  for (const auto& f : impl_->infos) v.push_back(f.name);
  return v;
}

int64_t ShardReader::find(const std::string& name) const {
  auto it = impl_->by_name.find(name);
  return it == impl_->by_name.end() ? -1 : it->second;
}

ProcessedGraph ShardReader::read_structure(int64_t i) const {
  const Impl& m = *impl_;
  return m.of_graph(i, [&](const ShardGraphInfo&) {
    ProcessedGraph g;
    m.read_structure_into(i, g);
    return g;
  });
}

ProcessedGraph ShardReader::read(int64_t i) const {
  const Impl& m = *impl_;
  return m.of_graph(i, [&](const ShardGraphInfo& f) {
    ProcessedGraph g;
    m.read_structure_into(i, g);
    if (m.tile) {
      m.read_range("config_feat", m.config_off[i], f.num_configs, kTileConfigDim, g.config_feat);
      m.read_range("config_runtime_normalizers", m.config_off[i], f.num_configs, 1,
                   g.config_runtime_normalizers);
    } else {
      m.read_range("node_config_packed", m.packed_off[i], f.num_configs * f.num_config_nodes, 1,
                   g.node_config_packed);
    }
    return g;
  });
}

namespace {

// The distinct configs of `wanted` (sorted) as runs of consecutive indices.
std::vector<Run> runs_of(const std::vector<int64_t>& wanted) {
  std::vector<Run> runs;
  for (int64_t c : wanted) {
    if (!runs.empty() && runs.back().first + runs.back().count == static_cast<hsize_t>(c))
      ++runs.back().count;
    else
      runs.push_back({static_cast<hsize_t>(c), 1});
  }
  return runs;
}

}  // namespace

void ShardReader::set_config_cache_bytes(size_t bytes) {
  impl_->config_cache_bytes = bytes;
  impl_->dsets.erase("node_config_packed");  // reopened with the new cache on next use
}

size_t ShardReader::config_cache_bytes() const {
  if (impl_->tile) return 0;
  return h5::chunk_cache_bytes(impl_->dataset("node_config_packed"), impl_->path, "node_config_packed");
}

ConfigRows ShardReader::read_configs(int64_t i, const std::vector<int64_t>& config_indices) const {
  const Impl& m = *impl_;
  m.check_index(i);
  const ShardGraphInfo& f = m.infos[i];
  for (int64_t c : config_indices)
    if (c < 0 || c >= f.num_configs)
      throw m.graph_error(i, Error("config index " + std::to_string(c) + " outside [0, " +
                                   std::to_string(f.num_configs) + ")"));
  // Read each wanted config once, in file order, then hand them out in the asked order.
  std::vector<int64_t> wanted = config_indices;
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const std::vector<Run> runs = runs_of(wanted);  // in configs, relative to the graph's first
  auto shifted = [&](int64_t base, hsize_t scale) {
    std::vector<Run> r;
    r.reserve(runs.size());
    for (const Run& run : runs) r.push_back({base + run.first * scale, run.count * scale});
    return r;
  };
  const size_t u = wanted.size();
  const size_t nc = static_cast<size_t>(f.num_config_nodes);
  std::vector<int64_t> runtime(u), norm;
  std::vector<float> feat;
  std::vector<uint64_t> packed;
  try {
    m.read_runs("config_runtime", H5T_NATIVE_INT64, shifted(m.config_off[i], 1), runtime.data());
    if (m.tile) {
      feat.resize(u * kTileConfigDim);
      norm.resize(u);
      m.read_runs("config_feat", H5T_NATIVE_FLOAT, shifted(m.config_off[i], 1), feat.data());
      m.read_runs("config_runtime_normalizers", H5T_NATIVE_INT64, shifted(m.config_off[i], 1),
                  norm.data());
    } else {
      packed.resize(u * nc);
      m.read_runs("node_config_packed", H5T_NATIVE_UINT64, shifted(m.packed_off[i], nc),
                  packed.data());
    }
  } catch (const Error& e) {
    throw m.graph_error(i, e);
  }
  ConfigRows out;
  out.indices = config_indices;
  for (int64_t c : config_indices) {
    const size_t j = std::lower_bound(wanted.begin(), wanted.end(), c) - wanted.begin();
    out.config_runtime.push_back(runtime[j]);
    if (m.tile) {
      out.config_feat.insert(out.config_feat.end(), feat.begin() + j * kTileConfigDim,
                             feat.begin() + (j + 1) * kTileConfigDim);
      out.config_runtime_normalizers.push_back(norm[j]);
    } else {
      out.node_config_packed.insert(out.node_config_packed.end(), packed.begin() + j * nc,
                                    packed.begin() + (j + 1) * nc);
    }
  }
  return out;
}

}  // namespace tpuperf
