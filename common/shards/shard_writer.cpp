#include "common/shards/shard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "common/base/phase_clock.h"
#include "common/graph/graph.h"
#include "common/shards/hdf5.h"
#include "common/shards/hdf5_chunk.h"

namespace tpuperf {

namespace {

// Small, because the trainer samples slates of a few configs from graphs with up to 100k:
// each sampled row costs inflating its whole chunk (64 KiB chunks made a 64-config slate
// of a 20 MB packed graph 4x faster to read than 256 KiB ones). Deflate's window is only
// 32 KiB, so larger chunks would barely compress better (~10% in that test).
constexpr hsize_t kShardChunkBytes = 64 * 1024;
// bytes_added() counts per graph, besides its rows, its name and its 13 int64 entries of
// the per-graph arrays (7 counts, 6 offsets).
constexpr int64_t kPerGraphTableBytes = 13 * sizeof(int64_t);

// Chunks are written as stored (H5Dwrite_chunk), in the file's byte order.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shard chunks are encoded little-endian");

struct WriteTarget {
  hid_t file;
  int deflate;
  const std::string& path;
  h5::ChunkEncoder& encoder;
};

// One dataset streamed to the file in whole chunks: rows are buffered until a chunk is
// full, large appends go straight to the file. A dataset that never fills a chunk is
// created at finish() with a chunk just as large as its data. Chunks are encoded here
// (h5::ChunkEncoder: libdeflate, where HDF5's filter would run zlib) and written as stored.
class Column {
 public:
  // elem_size: bytes of one element in the file's type, which memory holds as well.
  Column(std::string name, hid_t file_type, size_t elem_size, int rank, hsize_t cols)
      : name_(std::move(name)), file_type_(file_type), elem_(elem_size), rank_(rank), cols_(cols) {}

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
    dset_.close("dataset '" + name_ + "'", t.path, name_);
  }

  void abandon() { dset_.reset(); }

 private:
  hsize_t chunk_rows() const {
    size_t row_bytes = std::max<size_t>(elem_ * cols_, 1);
    return std::max<hsize_t>(1, kShardChunkBytes / row_bytes);
  }

  void flush_pending(const WriteTarget& t, hsize_t chunk) {
    if (pending_rows_ == 0) return;
    write(t, pending_.data(), pending_rows_, chunk);
    pending_.clear();
    pending_rows_ = 0;
  }

  void create(const WriteTarget& t, hsize_t chunk_rows) {
    h5::DatasetLayout l;
    l.rank = rank_;
    // Unlimited rows so that the dataset can grow; a zero-column dataset needs an
    // unlimited second dimension too, since a chunk dimension must be at least 1.
    l.dims[1] = cols_;
    l.max_dims[0] = H5S_UNLIMITED;
    l.max_dims[1] = cols_ > 0 ? cols_ : H5S_UNLIMITED;
    l.chunk[0] = chunk_rows;
    l.chunk[1] = std::max<hsize_t>(cols_, 1);
    l.deflate = t.deflate;
    // Rows arrive in whole chunks, so a chunk cache would only hold memory (1 MiB per
    // dataset of every open shard; the driver keeps train shards open until folds are set).
    l.chunk_cache = false;
    dset_ = h5::create_dataset(t.file, name_, file_type_, l, t.path);
    dset_chunk_ = chunk_rows;
  }

  // rows from written_ on, which is a multiple of the chunk: whole chunks but for the
  // dataset's last, which is padded with zeros to the chunk's size (HDF5 stores edge
  // chunks whole; readers never see the padding, which lies beyond the extent).
  void write(const WriteTarget& t, const void* data, hsize_t rows, hsize_t chunk) {
    if (!dset_.valid()) create(t, chunk);
    h5::set_rows(dset_.get(), written_ + rows, cols_, t.path, name_);
    const size_t row_bytes = elem_ * cols_;
    const size_t chunk_bytes = dset_chunk_ * row_bytes;
    const auto* p = static_cast<const uint8_t*>(data);
    for (hsize_t r = 0; r < rows && row_bytes > 0; r += dset_chunk_) {
      const hsize_t n = std::min(dset_chunk_, rows - r);
      const uint8_t* src = p + r * row_bytes;
      if (n < dset_chunk_) {
        padded_.assign(chunk_bytes, 0);
        std::copy(src, src + n * row_bytes, padded_.begin());
        src = padded_.data();
      }
      ScopedPhase phase("shard deflate");
      const std::vector<uint8_t>& stored = t.encoder.encode(src, chunk_bytes, elem_);
      ScopedPhase writing("HDF5 writes");
      h5::write_chunk(dset_.get(), written_ + r, stored.data(), stored.size(), t.path, name_);
    }
    written_ += rows;
  }

  std::string name_;
  hid_t file_type_;
  size_t elem_;
  int rank_;
  hsize_t cols_;
  h5::Handle dset_;
  hsize_t dset_chunk_ = 0;  // rows per chunk of the dataset, once created
  std::vector<uint8_t> padded_;
  hsize_t written_ = 0;
  std::vector<unsigned char> pending_;
  hsize_t pending_rows_ = 0;
};

template <class T>
void write_small(const WriteTarget& t, const std::string& name, hid_t file_type, const std::vector<T>& v) {
  Column c(name, file_type, sizeof(T), 1, 1);
  c.append(t, v.data(), v.size());
  c.finish(t);
}

void write_names(const WriteTarget& t, const std::vector<std::string>& names) {
  size_t len = 1;
  for (const auto& n : names) len = std::max(len, n.size());
  std::vector<char> buf(names.size() * len, '\0');
  for (size_t i = 0; i < names.size(); ++i) std::copy(names[i].begin(), names[i].end(), &buf[i * len]);
  h5::Handle type = h5::string_type(len, t.path, "name");
  Column c("name", type.get(), len, 1, 1);
  c.append(t, buf.data(), names.size());
  c.finish(t);
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
  bool tile = false;
  int deflate = 0;
  h5::Handle file;
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

  Column node_feat{"node_feat", H5T_IEEE_F32LE, 4, 2, 0};
  Column node_opcode{"node_opcode", H5T_STD_U8LE, 1, 1, 1};
  Column edge_index{"edge_index", H5T_STD_I32LE, 4, 2, 2};
  Column config_runtime{"config_runtime", H5T_STD_I64LE, 8, 1, 1};
  Column config_feat{"config_feat", H5T_IEEE_F32LE, 4, 2, kTileConfigDim};
  Column normalizers{"config_runtime_normalizers", H5T_STD_I64LE, 8, 1, 1};
  Column node_config_ids{"node_config_ids", H5T_STD_I32LE, 4, 1, 1};
  Column node_config_packed{"node_config_packed", H5T_STD_U64LE, 8, 1, 1};
  Column node_splits{"node_splits", H5T_STD_I64LE, 8, 1, 1};

  std::unique_ptr<h5::ChunkEncoder> encoder;
  WriteTarget target() const { return {file.get(), deflate, path, *encoder}; }
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
           kPerGraphTableBytes;
}

void ShardWriter::Impl::write_tables() {
  const WriteTarget t = target();
  write_names(t, names);
  write_small(t, "fold", H5T_STD_I32LE, fold);
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
  for (const auto& [name, v] : int64_tables) write_small(t, name, H5T_STD_I64LE, *v);
  const hid_t f = file.get();
  h5::write_attr(f, "schema_version", int32_t{kShardSchemaVersion}, path);
  h5::write_attr(f, "collection", collection, path);
  h5::write_attr(f, "split", split, path);
  h5::write_attr(f, "num_graphs", static_cast<int64_t>(names.size()), path);
  h5::write_attr(f, "created_by", std::string(kShardCreatedBy), path);
}

void ShardWriter::Impl::discard() {
  for (Column* c : columns()) c->abandon();
  file.reset();
  std::remove(tmp.c_str());
  done = true;
}

ShardWriter::ShardWriter(std::string path, std::string collection, std::string split,
                         int deflate_level)
    : impl_((quiet_hdf5(), std::make_unique<Impl>())) {  // Impl's members already use HDF5
  Impl& m = *impl_;
  m.path = std::move(path);
  m.tmp = m.path + ".tmp";
  m.collection = std::move(collection);
  m.split = std::move(split);
  m.deflate = deflate_level;
  try {
    m.tile = Collection::parse(m.collection).kind == Kind::Tile;
  } catch (Error& e) {
    throw e.with_file(m.path);
  }
  if (deflate_level < 0 || deflate_level > 9)
    throw Error("deflate level " + std::to_string(deflate_level) + " is not in 0..9", m.path);
  m.encoder = std::make_unique<h5::ChunkEncoder>(deflate_level);
  m.file = h5::create_file(m.tmp, m.path);
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
  ScopedPhase phase("HDF5 writes");
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
  ScopedPhase phase("HDF5 writes");
  Impl& m = *impl_;
  if (m.done) throw Error("shard already closed", m.path);
  try {
    if (m.broken) throw Error("cannot close a shard after a write error", m.path);
    if (m.num_node_feat < 0) m.node_feat.set_cols(kNodeFeatDim);
    const WriteTarget t = m.target();
    for (Column* c : m.columns()) c->finish(t);
    m.write_tables();
    m.file.close(m.tmp, m.path);
    ScopedPhase syncing("fsync");
    fsync_file(m.tmp, m.path);
    rename_durable(m.tmp, m.path);
    m.done = true;
  } catch (Error&) {
    m.discard();
    throw;
  }
}

}  // namespace tpuperf
