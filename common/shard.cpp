#include "common/shard.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "common/error.h"
#include "common/files.h"

namespace tpuperf {

namespace {

// HDF5 reports an OS error with the time, file descriptor and buffer address:
// "file write failed: time = ..., filename = '...', file descriptor = 21, errno = 28,
// error message = 'No space left on device', buf = 0x..., ...". What a user can act on
// is "file write failed: No space left on device"; other messages stay as they are.
std::string condensed(const std::string& msg) {
  const std::string tag = "error message = '";
  size_t at = msg.find(tag);
  if (at == std::string::npos) return msg;
  size_t start = at + tag.size(), end = msg.find('\'', start);
  return msg.substr(0, msg.find(": time = ")) + ": " + msg.substr(start, end - start);
}

herr_t collect_error(unsigned, const H5E_error2_t* e, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(e->desc ? e->desc : "");
  return 0;
}

}  // namespace

// Called before anything else touches HDF5. HDF5 prints its error stack to stderr by
// default; tpuperf reports failures as Errors instead. And a file whose H5Fclose failed
// (a full disk) stays registered half-destroyed: HDF5's own atexit clean-up would close it
// again and crash, turning a clear error into a segfault. Every file tpuperf opens is
// closed explicitly, so that clean-up has nothing else to do.
void quiet_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5dont_atexit();  // fails harmlessly if the library is already initialized
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

// The outermost and innermost messages of HDF5's error stack, which then is cleared:
// e.g. "can't read data: data error detected by Fletcher32 checksum". When the innermost
// is an OS error (a full disk), it alone: it is the cause, the outer ones only say which
// HDF5 step failed ("disable slist on flush dest failure failed").
std::string hdf5_error_detail() {
  std::vector<std::string> msgs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &msgs);
  H5Eclear2(H5E_DEFAULT);
  if (msgs.empty()) return "";
  std::string inner = condensed(msgs.back());
  std::string s = msgs.front();
  if (inner != msgs.back()) s = inner;
  else if (msgs.size() > 1 && msgs.back() != msgs.front()) s += ": " + msgs.back();
  std::replace(s.begin(), s.end(), '\n', ' ');  // write errors embed ctime()'s newline
  return " (HDF5: " + s + ")";
}

namespace {

// Small, because the trainer samples slates of a few configs from graphs with up to 100k:
// each sampled row costs inflating its whole chunk (64 KiB chunks made a 64-config slate
// of a 20 MB packed graph 4x faster to read than 256 KiB ones). Deflate's window is only
// 32 KiB, so larger chunks would barely compress better (~10% in that test).
constexpr hsize_t kChunkBytes = 64 * 1024;
constexpr const char* kCreatedBy = "tpuperf-preprocess";
constexpr const char* kTransformGroup = "feature_transform";

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = -1;
    }
    return *this;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }
  // Closing can fail (a flush on a full disk), so writers check it.
  bool close_checked() {
    if (id_ < 0) return true;
    herr_t r = closer_(id_);
    id_ = -1;
    return r >= 0;
  }

 private:
  hid_t id_ = -1;
  herr_t (*closer_)(hid_t) = nullptr;
};

hid_t checked(hid_t id, const std::string& what, const std::string& file,
              const std::string& key = "") {
  if (id < 0) throw Error(what + hdf5_error_detail(), file, key);
  return id;
}

void check(herr_t r, const std::string& what, const std::string& file,
           const std::string& key = "") {
  if (r < 0) throw Error(what + hdf5_error_detail(), file, key);
}

// Shards live on cluster filesystems (NFS, Lustre) where flock may be disabled: lock where
// the filesystem supports it, as HDF5 does by default, but don't fail where it doesn't.
Handle file_access(const std::string& path) {
  Handle fapl(checked(H5Pcreate(H5P_FILE_ACCESS), "cannot create file access properties", path),
              H5Pclose);
  check(H5Pset_file_locking(fapl.get(), 1, 1), "cannot set file locking", path);
  return fapl;
}

bool is_tile_collection(const std::string& collection) {
  return collection.rfind("tile", 0) == 0;
}

bool is_layout_collection(const std::string& collection) {
  return collection.rfind("layout", 0) == 0;
}

// A fixed-length, NUL-padded string type of the given size (at least 1 byte).
Handle string_type(size_t size) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), std::max<size_t>(size, 1));
  H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
  return t;
}

// ---------------------------------------------------------------------------------------
// Writing

struct WriteTarget {
  hid_t file;
  int deflate;
  const std::string& path;
};

// One dataset streamed to the file in whole chunks: rows are buffered until a chunk is
// full, large appends go straight to the file. A dataset that never fills a chunk is
// created at finish() with a chunk just as large as its data.
class Column {
 public:
  Column(std::string name, hid_t file_type, hid_t mem_type, size_t elem_size, int rank,
         hsize_t cols)
      : name_(std::move(name)), file_type_(file_type), mem_type_(mem_type),
        elem_(elem_size), rank_(rank), cols_(cols) {}

  const std::string& name() const { return name_; }
  void set_cols(hsize_t cols) { cols_ = cols; }
  hsize_t rows() const { return written_ + pending_rows_; }

  void append(const WriteTarget& t, const void* data, hsize_t rows) {
    const auto* p = static_cast<const unsigned char*>(data);
    const size_t row_bytes = elem_ * cols_;
    const hsize_t chunk = chunk_rows();
    if (pending_rows_ > 0 || rows < chunk) {
      hsize_t take = std::min(rows, chunk - pending_rows_);
      pending_.insert(pending_.end(), p, p + take * row_bytes);
      pending_rows_ += take;
      p += take * row_bytes;
      rows -= take;
      if (pending_rows_ == chunk) flush_pending(t, chunk);
    }
    hsize_t whole = rows / chunk * chunk;
    if (whole > 0) {
      write(t, p, whole, chunk);
      p += whole * row_bytes;
      rows -= whole;
    }
    pending_.insert(pending_.end(), p, p + rows * row_bytes);
    pending_rows_ += rows;
  }

  void finish(const WriteTarget& t) {
    hsize_t chunk = dset_.valid() ? chunk_rows() : std::clamp<hsize_t>(rows(), 1, chunk_rows());
    flush_pending(t, chunk);
    if (!dset_.valid()) create(t, chunk);
    if (!dset_.close_checked())
      throw Error("cannot close dataset '" + name_ + "'" + hdf5_error_detail(), t.path, name_);
  }

  void abandon() { dset_.reset(); }

 private:
  hsize_t chunk_rows() const {
    size_t row_bytes = std::max<size_t>(elem_ * cols_, 1);
    return std::max<hsize_t>(1, kChunkBytes / row_bytes);
  }

  void flush_pending(const WriteTarget& t, hsize_t chunk) {
    if (pending_rows_ == 0) return;
    write(t, pending_.data(), pending_rows_, chunk);
    pending_.clear();
    pending_rows_ = 0;
  }

  void create(const WriteTarget& t, hsize_t chunk_rows) {
    // Unlimited rows so that the dataset can grow; a zero-column dataset needs an
    // unlimited second dimension too, since a chunk dimension must be at least 1.
    hsize_t dims[2] = {0, cols_};
    hsize_t maxdims[2] = {H5S_UNLIMITED, cols_ > 0 ? cols_ : H5S_UNLIMITED};
    hsize_t chunk[2] = {chunk_rows, std::max<hsize_t>(cols_, 1)};
    const std::string what = "cannot create dataset '" + name_ + "'";
    Handle space(checked(H5Screate_simple(rank_, dims, maxdims), what, t.path, name_), H5Sclose);
    Handle dcpl(checked(H5Pcreate(H5P_DATASET_CREATE), what, t.path, name_), H5Pclose);
    check(H5Pset_chunk(dcpl.get(), rank_, chunk), what, t.path, name_);
    // Checksum last, so that it covers the bytes as stored and is verified before inflate.
    if (t.deflate > 0) {
      check(H5Pset_shuffle(dcpl.get()), what, t.path, name_);
      check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(t.deflate)), what, t.path, name_);
    }
    check(H5Pset_fletcher32(dcpl.get()), what, t.path, name_);
    // Rows arrive in whole chunks, so a chunk cache would only hold memory (1 MiB per
    // dataset of every open shard; the driver keeps train shards open until folds are set).
    Handle dapl(checked(H5Pcreate(H5P_DATASET_ACCESS), what, t.path, name_), H5Pclose);
    check(H5Pset_chunk_cache(dapl.get(), 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT), what, t.path, name_);
    dset_ = Handle(checked(H5Dcreate2(t.file, name_.c_str(), file_type_, space.get(), H5P_DEFAULT,
                                      dcpl.get(), dapl.get()),
                           what, t.path, name_),
                   H5Dclose);
  }

  void write(const WriteTarget& t, const void* data, hsize_t rows, hsize_t chunk) {
    if (!dset_.valid()) create(t, chunk);
    const std::string what = "cannot write dataset '" + name_ + "'";
    hsize_t dims[2] = {written_ + rows, cols_};
    check(H5Dset_extent(dset_.get(), dims), what, t.path, name_);
    if (rows * cols_ > 0) {
      Handle fspace(checked(H5Dget_space(dset_.get()), what, t.path, name_), H5Sclose);
      hsize_t start[2] = {written_, 0}, count[2] = {rows, cols_};
      check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
            what, t.path, name_);
      Handle mspace(checked(H5Screate_simple(rank_, count, nullptr), what, t.path, name_), H5Sclose);
      check(H5Dwrite(dset_.get(), mem_type_, mspace.get(), fspace.get(), H5P_DEFAULT, data), what,
            t.path, name_);
    }
    written_ += rows;
  }

  std::string name_;
  hid_t file_type_, mem_type_;
  size_t elem_;
  int rank_;
  hsize_t cols_;
  Handle dset_;
  hsize_t written_ = 0;
  std::vector<unsigned char> pending_;
  hsize_t pending_rows_ = 0;
};

template <class T>
void write_small(const WriteTarget& t, const std::string& name, hid_t file_type, hid_t mem_type,
                 const std::vector<T>& v) {
  Column c(name, file_type, mem_type, sizeof(T), 1, 1);
  c.append(t, v.data(), v.size());
  c.finish(t);
}

void write_names(const WriteTarget& t, const std::vector<std::string>& names) {
  size_t len = 1;
  for (const auto& n : names) len = std::max(len, n.size());
  std::vector<char> buf(names.size() * len, '\0');
  for (size_t i = 0; i < names.size(); ++i) std::copy(names[i].begin(), names[i].end(), &buf[i * len]);
  Handle type = string_type(len);
  Column c("name", type.get(), type.get(), len, 1, 1);
  c.append(t, buf.data(), names.size());
  c.finish(t);
}

void write_int_attr(const WriteTarget& t, const char* name, hid_t file_type, hid_t mem_type,
                    const void* value) {
  const std::string what = std::string("cannot write attribute '") + name + "'";
  Handle space(checked(H5Screate(H5S_SCALAR), what, t.path, name), H5Sclose);
  Handle attr(checked(H5Acreate2(t.file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                      what, t.path, name),
              H5Aclose);
  check(H5Awrite(attr.get(), mem_type, value), what, t.path, name);
}

void write_string_attr(const WriteTarget& t, const char* name, const std::string& value) {
  const std::string what = std::string("cannot write attribute '") + name + "'";
  Handle type = string_type(value.size());
  std::vector<char> buf(std::max<size_t>(value.size(), 1), '\0');
  std::copy(value.begin(), value.end(), buf.begin());
  Handle space(checked(H5Screate(H5S_SCALAR), what, t.path, name), H5Sclose);
  Handle attr(checked(H5Acreate2(t.file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                      what, t.path, name),
              H5Aclose);
  check(H5Awrite(attr.get(), type.get(), buf.data()), what, t.path, name);
}

// H5Fclose does not fsync; without it a crash after the rename could leave a torn shard.
void fsync_file(const std::string& file, const std::string& shard) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    throw Error("cannot fsync " + file, shard);
  }
  ::close(fd);
}

}  // namespace

struct ShardWriter::Impl {
  std::string path, tmp, collection, split;
  FeatureTransform transform;
  bool tile = false;
  int deflate = 0;
  Handle file;
  bool done = false;    // closed, or discarded after an error
  bool broken = false;  // a write failed half-way: the shard cannot be completed
  int64_t bytes = 0;
  int64_t num_node_feat = -1;
  std::unordered_set<std::string> names_seen;

  std::vector<std::string> names;
  std::vector<int32_t> fold;
  std::vector<int64_t> num_nodes, num_edges, num_configs, num_config_nodes, configs_before,
      nodes_before, edges_before;
  std::vector<int64_t> node_off{0}, edge_off{0}, config_off{0}, config_node_off{0},
      packed_off{0}, split_off{0};

  Column node_feat{"node_feat", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, 2, 0};
  Column node_opcode{"node_opcode", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 1, 1};
  Column edge_index{"edge_index", H5T_STD_I32LE, H5T_NATIVE_INT32, 4, 2, 2};
  Column config_runtime{"config_runtime", H5T_STD_I64LE, H5T_NATIVE_INT64, 8, 1, 1};
  Column config_feat{"config_feat", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, 2, kTileConfigDim};
  Column normalizers{"config_runtime_normalizers", H5T_STD_I64LE, H5T_NATIVE_INT64, 8, 1, 1};
  Column node_config_ids{"node_config_ids", H5T_STD_I32LE, H5T_NATIVE_INT32, 4, 1, 1};
  Column node_config_packed{"node_config_packed", H5T_STD_U64LE, H5T_NATIVE_UINT64, 8, 1, 1};
  Column node_splits{"node_splits", H5T_STD_I64LE, H5T_NATIVE_INT64, 8, 1, 1};

  WriteTarget target() const { return {file.get(), deflate, path}; }
  std::vector<Column*> columns() {
    return {&node_feat, &node_opcode, &edge_index, &config_runtime, &config_feat,
            &normalizers, &node_config_ids, &node_config_packed, &node_splits};
  }

  void check_graph(const ProcessedGraph& g) const;
  void append_rows(const ProcessedGraph& g);
  void record(const ProcessedGraph& g);
  void write_tables();
  void discard();
};

void ShardWriter::Impl::check_graph(const ProcessedGraph& g) const {
  auto bad = [&](const std::string& why) { return Error("graph '" + g.name + "': " + why, path); };
  auto size_is = [&](size_t actual, int64_t expected, const char* field, const char* as) {
    if (static_cast<int64_t>(actual) != expected)
      throw bad(std::string(field) + " has " + std::to_string(actual) + " values, expected " +
                std::to_string(expected) + " (" + as + ")");
  };
  if (g.name.empty()) throw Error("a graph without a name", path);
  if (!g.collection.empty() && g.collection != collection)
    throw bad("collection '" + g.collection + "' differs from the shard's '" + collection + "'");
  if (!g.split.empty() && g.split != split)
    throw bad("split '" + g.split + "' differs from the shard's '" + split + "'");
  if (names_seen.count(g.name)) throw bad("name already in this shard");
  if (g.num_nodes < 0 || g.num_node_feat < 0) throw bad("negative num_nodes or num_node_feat");
  if (num_node_feat >= 0 && g.num_node_feat != num_node_feat)
    throw bad("num_node_feat " + std::to_string(g.num_node_feat) + " differs from the shard's " +
              std::to_string(num_node_feat));
  size_is(g.node_feat.size(), g.num_nodes * g.num_node_feat, "node_feat", "num_nodes x num_node_feat");
  size_is(g.node_opcode.size(), g.num_nodes, "node_opcode", "num_nodes");
  if (g.edge_index.size() % 2 != 0) throw bad("edge_index has an odd number of values");
  for (int32_t v : g.edge_index)
    if (v < 0 || v >= g.num_nodes) throw bad("edge_index holds node " + std::to_string(v) +
                                             " outside [0, " + std::to_string(g.num_nodes) + ")");
  const int64_t c = g.num_configs();
  const int64_t nc = static_cast<int64_t>(g.node_config_ids.size());
  if (tile) {
    size_is(g.config_feat.size(), c * kTileConfigDim, "config_feat", "num_configs x 24");
    size_is(g.config_runtime_normalizers.size(), c, "config_runtime_normalizers", "num_configs");
    size_is(g.node_config_ids.size() + g.node_config_packed.size() + g.node_splits.size(), 0,
            "layout fields", "a tile graph has none");
  } else {
    size_is(g.config_feat.size() + g.config_runtime_normalizers.size(), 0, "tile fields",
            "a layout graph has none");
    size_is(g.node_config_packed.size(), c * nc, "node_config_packed", "num_configs x nc");
    for (int32_t v : g.node_config_ids)
      if (v < 0 || v >= g.num_nodes) throw bad("node_config_ids holds node " + std::to_string(v) +
                                               " outside [0, " + std::to_string(g.num_nodes) + ")");
  }
}

void ShardWriter::Impl::append_rows(const ProcessedGraph& g) {
  const WriteTarget t = target();
  node_feat.append(t, g.node_feat.data(), g.num_nodes);
  node_opcode.append(t, g.node_opcode.data(), g.num_nodes);
  edge_index.append(t, g.edge_index.data(), g.num_edges());
  config_runtime.append(t, g.config_runtime.data(), g.num_configs());
  config_feat.append(t, g.config_feat.data(), g.config_feat.size() / kTileConfigDim);
  normalizers.append(t, g.config_runtime_normalizers.data(), g.config_runtime_normalizers.size());
  node_config_ids.append(t, g.node_config_ids.data(), g.node_config_ids.size());
  node_config_packed.append(t, g.node_config_packed.data(), g.node_config_packed.size());
  node_splits.append(t, g.node_splits.data(), g.node_splits.size());
}

void ShardWriter::Impl::record(const ProcessedGraph& g) {
  names_seen.insert(g.name);
  names.push_back(g.name);
  fold.push_back(g.fold);
  num_nodes.push_back(g.num_nodes);
  num_edges.push_back(g.num_edges());
  num_configs.push_back(g.num_configs());
  num_config_nodes.push_back(static_cast<int64_t>(g.node_config_ids.size()));
  configs_before.push_back(g.configs_before);
  nodes_before.push_back(g.nodes_before);
  edges_before.push_back(g.edges_before);
  node_off.push_back(node_off.back() + g.num_nodes);
  edge_off.push_back(edge_off.back() + g.num_edges());
  config_off.push_back(config_off.back() + g.num_configs());
  config_node_off.push_back(config_node_off.back() + num_config_nodes.back());
  packed_off.push_back(packed_off.back() + static_cast<int64_t>(g.node_config_packed.size()));
  split_off.push_back(split_off.back() + static_cast<int64_t>(g.node_splits.size()));
  auto b = [](const auto& v) { return static_cast<int64_t>(v.size() * sizeof(v[0])); };
  bytes += b(g.node_feat) + b(g.node_opcode) + b(g.edge_index) + b(g.config_runtime) +
           b(g.config_feat) + b(g.config_runtime_normalizers) + b(g.node_config_ids) +
           b(g.node_config_packed) + b(g.node_splits) + static_cast<int64_t>(g.name.size()) +
           13 * 8;  // the per-graph entries and offsets
}

void ShardWriter::Impl::write_tables() {
  const WriteTarget t = target();
  write_names(t, names);
  write_small(t, "fold", H5T_STD_I32LE, H5T_NATIVE_INT32, fold);
  const std::pair<const char*, const std::vector<int64_t>*> int64_tables[] = {
      {"num_nodes", &num_nodes},
      {"num_edges", &num_edges},
      {"num_configs", &num_configs},
      {"num_config_nodes", &num_config_nodes},
      {"configs_before", &configs_before},
      {"nodes_before", &nodes_before},
      {"edges_before", &edges_before},
      {"node_offsets", &node_off},
      {"edge_offsets", &edge_off},
      {"config_offsets", &config_off},
      {"config_node_offsets", &config_node_off},
      {"packed_offsets", &packed_off},
      {"split_offsets", &split_off},
  };
  for (const auto& [name, v] : int64_tables) write_small(t, name, H5T_STD_I64LE, H5T_NATIVE_INT64, *v);

  const std::string what = "cannot create group '" + std::string(kTransformGroup) + "'";
  Handle group(checked(H5Gcreate2(t.file, kTransformGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       what, path, kTransformGroup),
               H5Gclose);
  const std::string g = std::string(kTransformGroup) + "/";
  write_small(t, g + "kept_columns", H5T_STD_I32LE, H5T_NATIVE_INT32, transform.kept_columns);
  write_small(t, g + "log1p", H5T_STD_U8LE, H5T_NATIVE_UINT8, transform.log1p);
  write_small(t, g + "mean", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, transform.mean);
  write_small(t, g + "stddev", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, transform.stddev);

  const int32_t version = kShardSchemaVersion;
  const int64_t count = static_cast<int64_t>(names.size());
  write_int_attr(t, "schema_version", H5T_STD_I32LE, H5T_NATIVE_INT32, &version);
  write_string_attr(t, "collection", collection);
  write_string_attr(t, "split", split);
  write_int_attr(t, "num_graphs", H5T_STD_I64LE, H5T_NATIVE_INT64, &count);
  write_string_attr(t, "created_by", kCreatedBy);
}

void ShardWriter::Impl::discard() {
  for (Column* c : columns()) c->abandon();
  file.reset();
  std::remove(tmp.c_str());
  done = true;
}

ShardWriter::ShardWriter(std::string path, std::string collection, std::string split,
                         const FeatureTransform& transform, int deflate_level)
    : impl_((quiet_hdf5(), std::make_unique<Impl>())) {  // Impl's members already use HDF5
  Impl& m = *impl_;
  m.path = std::move(path);
  m.tmp = m.path + ".tmp";
  m.collection = std::move(collection);
  m.split = std::move(split);
  m.transform = transform;
  m.deflate = deflate_level;
  if (!is_tile_collection(m.collection) && !is_layout_collection(m.collection))
    throw Error("collection '" + m.collection + "' is neither a tile nor a layout collection", m.path);
  if (deflate_level < 0 || deflate_level > 9)
    throw Error("deflate level " + std::to_string(deflate_level) + " is not in 0..9", m.path);
  const size_t k = transform.kept_columns.size();
  if (transform.log1p.size() != k || transform.mean.size() != k || transform.stddev.size() != k)
    throw Error("feature transform columns differ in length", m.path, kTransformGroup);
  m.tile = is_tile_collection(m.collection);
  Handle fapl = file_access(m.path);
  m.file = Handle(checked(H5Fcreate(m.tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                          "cannot create " + m.tmp, m.path),
                  H5Fclose);
}

ShardWriter::~ShardWriter() {
  if (impl_ && !impl_->done) impl_->discard();
}

ShardWriter::ShardWriter(ShardWriter&&) noexcept = default;
ShardWriter& ShardWriter::operator=(ShardWriter&& o) noexcept {
  if (this != &o) {
    if (impl_ && !impl_->done) impl_->discard();
    impl_ = std::move(o.impl_);
  }
  return *this;
}

void ShardWriter::add(const ProcessedGraph& g) {
  Impl& m = *impl_;
  if (m.done) throw Error("cannot add graph '" + g.name + "': shard already closed", m.path);
  if (m.broken) throw Error("cannot add graph '" + g.name + "' after a write error", m.path);
  m.check_graph(g);
  if (m.num_node_feat < 0) {
    m.num_node_feat = g.num_node_feat;
    m.node_feat.set_cols(static_cast<hsize_t>(g.num_node_feat));
  }
  try {
    m.append_rows(g);
  } catch (Error&) {
    m.broken = true;
    throw;
  }
  m.record(g);
}

void ShardWriter::set_fold(int64_t index, int fold) {
  Impl& m = *impl_;
  if (m.done) throw Error("cannot set a fold: shard already closed", m.path);
  if (index < 0 || index >= static_cast<int64_t>(m.fold.size()))
    throw Error("cannot set the fold of graph " + std::to_string(index) + ": the shard has " +
                    std::to_string(m.fold.size()) + " graphs",
                m.path, "fold");
  m.fold[static_cast<size_t>(index)] = fold;
}

int64_t ShardWriter::bytes_added() const { return impl_->bytes; }
int64_t ShardWriter::num_graphs() const { return static_cast<int64_t>(impl_->names.size()); }
const std::string& ShardWriter::path() const { return impl_->path; }

void ShardWriter::close() {
  Impl& m = *impl_;
  if (m.done) throw Error("shard already closed", m.path);
  try {
    if (m.broken) throw Error("cannot close a shard after a write error", m.path);
    if (m.num_node_feat < 0) m.node_feat.set_cols(m.transform.kept_columns.size());
    const WriteTarget t = m.target();
    for (Column* c : m.columns()) c->finish(t);
    m.write_tables();
    if (!m.file.close_checked()) throw Error("cannot close " + m.tmp + hdf5_error_detail(), m.path);
    fsync_file(m.tmp, m.path);
    rename_durable(m.tmp, m.path);
    m.done = true;
  } catch (Error&) {
    m.discard();
    throw;
  }
}

// ---------------------------------------------------------------------------------------
// Reading

namespace {

// Consecutive rows [first, first + count) of a dataset.
struct Run {
  hsize_t first, count;
};

}  // namespace

struct ShardReader::Impl {
  std::string path, collection, split;
  Handle file;
  bool tile = false;
  int num_node_feat = 0;
  std::vector<ShardGraphInfo> infos;
  std::unordered_map<std::string, int64_t> by_name;
  std::vector<int64_t> node_off, edge_off, config_off, config_node_off, packed_off, split_off;
  FeatureTransform transform;
  mutable std::unordered_map<std::string, Handle> dsets;  // opened on first use

  hid_t dataset(const std::string& name) const;
  int dims(const std::string& name, hsize_t d[2]) const;
  hsize_t rows(const std::string& name) const {
    hsize_t d[2];
    dims(name, d);
    return d[0];
  }
  template <class T>
  std::vector<T> read_whole(const std::string& name, hid_t mem_type, size_t expect) const;
  std::vector<std::string> read_names(size_t expect) const;
  std::string string_attr(const char* name) const;
  template <class T>
  T int_attr(const char* name, hid_t mem_type) const;
  void read_runs(const std::string& name, hid_t mem_type, const std::vector<Run>& runs,
                 void* out) const;
  template <class T>
  void read_range(const std::string& name, hid_t mem_type, int64_t first, int64_t rows,
                  size_t cols, std::vector<T>& out) const {
    out.resize(static_cast<size_t>(rows) * cols);
    read_runs(name, mem_type, {{static_cast<hsize_t>(first), static_cast<hsize_t>(rows)}}, out.data());
  }

  void open();
  void load_tables();
  void load_transform();
  void read_structure_into(int64_t i, ProcessedGraph& g) const;
  void check_index(int64_t i) const;
  Error graph_error(int64_t i, const Error& e) const;
};

hid_t ShardReader::Impl::dataset(const std::string& name) const {
  auto it = dsets.find(name);
  if (it != dsets.end()) return it->second.get();
  if (H5Lexists(file.get(), name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Error("dataset '" + name + "' is missing", path, name);
  }
  hid_t d = checked(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT),
                    "cannot open dataset '" + name + "'", path, name);
  return dsets.emplace(name, Handle(d, H5Dclose)).first->second.get();
}

int ShardReader::Impl::dims(const std::string& name, hsize_t d[2]) const {
  Handle space(checked(H5Dget_space(dataset(name)), "cannot get the shape", path, name), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1 || rank > 2) throw Error("dataset has rank " + std::to_string(rank), path, name);
  d[1] = 1;
  H5Sget_simple_extent_dims(space.get(), d, nullptr);
  return rank;
}

// One H5Dread per run, with a memory space shaped like the selection: HDF5 copies a
// same-shaped selection chunk by chunk but falls back to element-wise iteration for a 1-D
// buffer (10x slower), and a union of many hyperslabs costs quadratic time to build.
// Runs that share a chunk hit the chunk cache, so each chunk is inflated once.
void ShardReader::Impl::read_runs(const std::string& name, hid_t mem_type,
                                  const std::vector<Run>& runs, void* out) const {
  hid_t d = dataset(name);
  hsize_t shape[2];
  const int rank = dims(name, shape);
  const std::string what = "dataset '" + name + "': checksum/read failure";
  const size_t row_bytes = H5Tget_size(mem_type) * (rank == 2 ? shape[1] : 1);
  auto* p = static_cast<unsigned char*>(out);
  Handle fspace(checked(H5Dget_space(d), what, path), H5Sclose);
  for (const Run& r : runs) {
    if (r.count == 0) continue;
    if (r.first + r.count > shape[0])
      throw Error("dataset '" + name + "': rows [" + std::to_string(r.first) + ", " +
                      std::to_string(r.first + r.count) + ") outside its " +
                      std::to_string(shape[0]) + " rows",
                  path);
    if (row_bytes == 0) continue;
    hsize_t start[2] = {r.first, 0}, count[2] = {r.count, shape[1]};
    check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr), what,
          path);
    Handle mspace(checked(H5Screate_simple(rank, count, nullptr), what, path), H5Sclose);
    check(H5Dread(d, mem_type, mspace.get(), fspace.get(), H5P_DEFAULT, p), what, path);
    p += r.count * row_bytes;
  }
}

template <class T>
std::vector<T> ShardReader::Impl::read_whole(const std::string& name, hid_t mem_type,
                                             size_t expect) const {
  hsize_t d[2];
  if (dims(name, d) != 1 || d[0] != expect)
    throw Error("expected " + std::to_string(expect) + " values, found shape (" +
                    std::to_string(d[0]) + ", " + std::to_string(d[1]) + ")",
                path, name);
  std::vector<T> v(expect);
  read_runs(name, mem_type, {{0, expect}}, v.data());
  return v;
}

std::vector<std::string> ShardReader::Impl::read_names(size_t expect) const {
  hsize_t d[2];
  if (dims("name", d) != 1 || d[0] != expect)
    throw Error("expected " + std::to_string(expect) + " names", path, "name");
  Handle type(checked(H5Dget_type(dataset("name")), "cannot get the type", path, "name"), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) != 0)
    throw Error("not a fixed-length string dataset", path, "name");
  const size_t len = H5Tget_size(type.get());
  std::vector<char> buf(expect * len);
  read_runs("name", type.get(), {{0, expect}}, buf.data());
  std::vector<std::string> names(expect);
  for (size_t i = 0; i < expect; ++i) {
    const char* p = &buf[i * len];
    names[i].assign(p, std::find(p, p + len, '\0'));
  }
  return names;
}

std::string ShardReader::Impl::string_attr(const char* name) const {
  const std::string what = std::string("cannot read attribute '") + name + "'";
  Handle attr(checked(H5Aopen(file.get(), name, H5P_DEFAULT), what, path, name), H5Aclose);
  Handle type(checked(H5Aget_type(attr.get()), what, path, name), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) != 0)
    throw Error("attribute is not a fixed-length string", path, name);
  std::vector<char> buf(H5Tget_size(type.get()));
  check(H5Aread(attr.get(), type.get(), buf.data()), what, path, name);
  return std::string(buf.data(), std::find(buf.begin(), buf.end(), '\0') - buf.begin());
}

template <class T>
T ShardReader::Impl::int_attr(const char* name, hid_t mem_type) const {
  const std::string what = std::string("cannot read attribute '") + name + "'";
  Handle attr(checked(H5Aopen(file.get(), name, H5P_DEFAULT), what, path, name), H5Aclose);
  Handle type(checked(H5Aget_type(attr.get()), what, path, name), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER) throw Error("attribute is not an integer", path, name);
  T v{};
  check(H5Aread(attr.get(), mem_type, &v), what, path, name);
  return v;
}

void ShardReader::Impl::open() {
  if (::access(path.c_str(), R_OK) != 0) throw Error("cannot open shard: no such readable file", path);
  htri_t h5 = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  if (h5 <= 0) throw Error("not an HDF5 file, so not a tpuperf shard", path);
  Handle fapl = file_access(path);
  file = Handle(checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), "cannot open HDF5 file", path),
                H5Fclose);
  auto has_attr = [&](const char* n) {
    htri_t r = H5Aexists(file.get(), n);
    H5Eclear2(H5E_DEFAULT);
    return r > 0;
  };
  if (!has_attr("schema_version") || !has_attr("created_by") ||
      string_attr("created_by") != kCreatedBy)
    throw Error("not a tpuperf shard (no schema_version/created_by attributes of " +
                    std::string(kCreatedBy) + ")",
                path);
  const int version = int_attr<int32_t>("schema_version", H5T_NATIVE_INT32);
  if (version != kShardSchemaVersion)
    throw Error("shard schema_version " + std::to_string(version) + " is not the " +
                    std::to_string(kShardSchemaVersion) +
                    " this build reads: rerun tpuperf-preprocess with this build",
                path, "schema_version");
  collection = string_attr("collection");
  split = string_attr("split");
  tile = is_tile_collection(collection);
  load_tables();
  load_transform();
  dsets.clear();  // the row datasets reopen on first read; the small ones are done
}

void ShardReader::Impl::load_tables() {
  const int64_t g = int_attr<int64_t>("num_graphs", H5T_NATIVE_INT64);
  if (g < 0) throw Error("negative num_graphs", path, "num_graphs");
  const size_t n = static_cast<size_t>(g);
  const auto names = read_names(n);
  const auto fold = read_whole<int32_t>("fold", H5T_NATIVE_INT32, n);
  auto i64 = [&](const char* name, size_t len) { return read_whole<int64_t>(name, H5T_NATIVE_INT64, len); };
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

void ShardReader::Impl::load_transform() {
  const std::string g = std::string(kTransformGroup) + "/";
  const size_t k = rows(g + "kept_columns");
  transform.kept_columns = read_whole<int32_t>(g + "kept_columns", H5T_NATIVE_INT32, k);
  transform.log1p = read_whole<uint8_t>(g + "log1p", H5T_NATIVE_UINT8, k);
  transform.mean = read_whole<double>(g + "mean", H5T_NATIVE_DOUBLE, k);
  transform.stddev = read_whole<double>(g + "stddev", H5T_NATIVE_DOUBLE, k);
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
  read_range("node_feat", H5T_NATIVE_FLOAT, node_off[i], f.num_nodes, num_node_feat, g.node_feat);
  read_range("node_opcode", H5T_NATIVE_UINT8, node_off[i], f.num_nodes, 1, g.node_opcode);
  read_range("edge_index", H5T_NATIVE_INT32, edge_off[i], f.num_edges, 2, g.edge_index);
  read_range("config_runtime", H5T_NATIVE_INT64, config_off[i], f.num_configs, 1, g.config_runtime);
  if (!tile) {
    read_range("node_config_ids", H5T_NATIVE_INT32, config_node_off[i], f.num_config_nodes, 1,
               g.node_config_ids);
    read_range("node_splits", H5T_NATIVE_INT64, split_off[i], split_off[i + 1] - split_off[i], 1,
               g.node_splits);
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
const FeatureTransform& ShardReader::feature_transform() const { return impl_->transform; }

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
  m.check_index(i);
  ProcessedGraph g;
  try {
    m.read_structure_into(i, g);
  } catch (const Error& e) {
    throw m.graph_error(i, e);
  }
  return g;
}

ProcessedGraph ShardReader::read(int64_t i) const {
  const Impl& m = *impl_;
  m.check_index(i);
  ProcessedGraph g;
  try {
    m.read_structure_into(i, g);
    const ShardGraphInfo& f = m.infos[i];
    if (m.tile) {
      m.read_range("config_feat", H5T_NATIVE_FLOAT, m.config_off[i], f.num_configs,
                   kTileConfigDim, g.config_feat);
      m.read_range("config_runtime_normalizers", H5T_NATIVE_INT64, m.config_off[i], f.num_configs,
                   1, g.config_runtime_normalizers);
    } else {
      m.read_range("node_config_packed", H5T_NATIVE_UINT64, m.packed_off[i],
                   f.num_configs * f.num_config_nodes, 1, g.node_config_packed);
    }
  } catch (const Error& e) {
    throw m.graph_error(i, e);
  }
  return g;
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
  std::vector<Run> runs;  // in configs, relative to the graph's first config
  for (int64_t c : wanted) {
    if (!runs.empty() && runs.back().first + runs.back().count == static_cast<hsize_t>(c))
      ++runs.back().count;
    else
      runs.push_back({static_cast<hsize_t>(c), 1});
  }
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
