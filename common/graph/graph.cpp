#include "common/graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <functional>
#include <type_traits>

#include <fmt/format.h>

#include "common/base/error.h"
#include "common/formats/npz_reader.h"
#include "common/formats/npz_writer.h"

namespace tpuperf {

namespace {

// Layout configs are written as float32 in slices of this many values (1 MiB), so that a
// 0.9 GB node_config_feat never exists twice.
constexpr size_t kConfigSliceValues = size_t{1} << 18;

using ShapeCheck = std::function<void(const std::vector<int64_t>&)>;

// want: -1 matches any size; want_text spells the expectation for the message.
ShapeCheck expect_shape(std::vector<int64_t> want, std::string want_text) {
  return [want = std::move(want), want_text = std::move(want_text)](const std::vector<int64_t>& got) {
    bool ok = got.size() == want.size();
    for (size_t i = 0; ok && i < got.size(); ++i) ok = want[i] < 0 || want[i] == got[i];
    if (!ok) throw Error("shape " + format_shape(got) + " does not match " + want_text);
  };
}

std::string dtype_list(std::initializer_list<DType> types) {
  std::string s;
  for (DType t : types) s += (s.empty() ? "" : ", ") + dtype_descr(t);
  return s;
}

template <typename T>
T load_value(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Calls fn(index, value) for every element of a chunk, with the file dtype resolved once
// per chunk rather than per element.
template <typename Fn>
void for_each_in_chunk(DType t, const uint8_t* p, size_t n, size_t first, Fn&& fn) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) fn(first + i, load_value<T>(p + i * sizeof(T)));
  };
  switch (t) {
    case DType::U1:
    case DType::B1: run(uint8_t{}); break;
    case DType::I4: run(int32_t{}); break;
    case DType::I8: run(int64_t{}); break;
    case DType::F4: run(float{}); break;
    case DType::F8: run(double{}); break;
  }
}

// Throws unless the member's dtype is one of accepted and its shape passes check.
void check_header(const NpyHeader& h, std::initializer_list<DType> accepted, const ShapeCheck& check) {
  bool ok = false;
  for (DType t : accepted) ok = ok || t == h.dtype;
  if (!ok)
    throw Error("dtype " + dtype_descr(h.dtype) + " is not accepted here (expected " +
                dtype_list(accepted) + ")");
  check(h.shape);
}

// Reads a member into a vector of Out, converting chunk by chunk as the reader hands them
// out. convert(dtype, data, count, first, out) converts and checks count values of the
// file's dtype into out[first...].
template <typename Out, typename Convert>
std::vector<Out> read_converted_with(NpzReader& r, const std::string& key,
                                     std::initializer_list<DType> accepted, const ShapeCheck& check,
                                     Convert convert, std::vector<int64_t>* shape_out = nullptr) {
  std::vector<Out> out;
  DType dtype = DType::U1;
  size_t done = 0;
  auto on_header = [&](const NpyHeader& h) {
    check_header(h, accepted, check);
    if (shape_out) *shape_out = h.shape;
    dtype = h.dtype;
    out.resize(static_cast<size_t>(h.count()));
  };
  auto on_chunk = [&](const uint8_t* p, size_t n) {
    size_t count = n / dtype_size(dtype);
    convert(dtype, p, count, done, out.data());
    done += count;
  };
  r.read_chunks(key, on_header, on_chunk);
  return out;
}

// read_converted_with, one value at a time: store(out, index, value) converts and checks one.
template <typename Out, typename Store>
std::vector<Out> read_converted(NpzReader& r, const std::string& key,
                                std::initializer_list<DType> accepted, const ShapeCheck& check,
                                Store store, std::vector<int64_t>* shape_out = nullptr) {
  auto convert = [&](DType dtype, const uint8_t* p, size_t count, size_t first, Out* dst) {
    if (dtype == dtype_of<Out>()) {
      std::memcpy(dst + first, p, count * sizeof(Out));  // same type: the common case costs one copy
      for (size_t i = first; i < first + count; ++i) store(dst, i, dst[i]);
      return;
    }
    for_each_in_chunk(dtype, p, count, first, [&](size_t i, auto v) { store(dst, i, v); });
  };
  return read_converted_with<Out>(r, key, accepted, check, convert, shape_out);
}

std::vector<float> read_floats(NpzReader& r, const std::string& key, const ShapeCheck& check) {
  return read_converted<float>(r, key, {DType::F4, DType::F8}, check,
                               [](float* d, size_t i, auto v) { d[i] = static_cast<float>(v); });
}

std::vector<int64_t> read_ints(NpzReader& r, const std::string& key, const ShapeCheck& check,
                               std::vector<int64_t>* shape = nullptr) {
  return read_converted<int64_t>(
      r, key, {DType::I8, DType::I4}, check,
      [](int64_t* d, size_t i, auto v) { d[i] = static_cast<int64_t>(v); }, shape);
}

std::string opcode_error(size_t node, int64_t op) {
  return fmt::format("node {} has opcode {}, outside 0..{}", node, op, kNumOpcodes - 1);
}

std::vector<uint8_t> read_opcodes(NpzReader& r, const ShapeCheck& check) {
  return read_converted<uint8_t>(r, "node_opcode", {DType::U1, DType::I4, DType::I8}, check,
                                 [](uint8_t* d, size_t i, auto v) {
                                   if (v < 0 || v >= kNumOpcodes)
                                     throw Error(opcode_error(i, static_cast<int64_t>(v)));
                                   d[i] = static_cast<uint8_t>(v);
                                 });
}

// Where flat index i of a (c, nc, 18) array lies, for messages.
std::string config_position(size_t i, int64_t nc) {
  size_t per_config = static_cast<size_t>(nc) * kLayoutConfigDim;
  return fmt::format("config {}, config node {}, column {}", i / per_config,
                     (i % per_config) / kLayoutConfigDim, i % kLayoutConfigDim);
}

bool is_layout_value(double v) { return v >= -1 && v <= 5 && v == static_cast<int>(v); }  // NaN: false

// count layout values (float or double, memcpy-loaded: p need not be aligned) appended to
// out as int8; returns the index of the first one that is not an integer in -1..5, or count.
// Appended block by block from a block on the stack into out's reserved room: resizing out
// first would zero the whole array (a pass over up to a gigabyte) only to overwrite it.
// node_config_feat is most of a layout file's bytes, so this is written to vectorize: no
// branches, and the rounding is an add of 1.5 * 2^mantissa bits (the integer then sits in
// the low bits), defined for every input where a float-to-int cast of NaN or 1e30 is not.
// A value is good when that integer is in -1..5 and converts back to the value exactly.
template <typename T>
size_t to_layout_values(const uint8_t* p, size_t count, std::vector<int8_t>& out) {
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  constexpr T kRound = sizeof(T) == 4 ? T(12582912.0) : T(6755399441055744.0);
  Bits round_bits;
  std::memcpy(&round_bits, &kRound, sizeof(T));
  constexpr size_t kBlock = 2048;
  T v[kBlock];
  int8_t q8[kBlock];
  for (size_t at = 0; at < count; at += kBlock) {
    const size_t n = std::min(kBlock, count - at);
    std::memcpy(v, p + at * sizeof(T), n * sizeof(T));
    Bits bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const T y = v[i] + kRound;
      Bits q;
      std::memcpy(&q, &y, sizeof(T));
      q -= round_bits;
      q8[i] = static_cast<int8_t>(q);
      bad |= (q < -1) | (q > 5) | (static_cast<T>(q) != v[i]);
    }
    if (bad)
      for (size_t i = 0; i < n; ++i)
        if (!is_layout_value(v[i])) return at + i;
    out.insert(out.end(), q8, q8 + n);
  }
  return count;
}

std::vector<int8_t> read_layout_configs(NpzReader& r, int64_t c, int64_t nc) {
  auto check = expect_shape({c, nc, kLayoutConfigDim},
                            fmt::format("({}, {}, {}) (configs, config nodes, {})", c, nc,
                                        kLayoutConfigDim, kLayoutConfigDim));
  std::vector<int8_t> out;
  bool f4 = true;
  auto on_header = [&](const NpyHeader& h) {
    check_header(h, {DType::F4, DType::F8}, check);
    f4 = h.dtype == DType::F4;
    out.reserve(static_cast<size_t>(h.count()));
  };
  auto on_chunk = [&](const uint8_t* p, size_t n) {
    const size_t first = out.size(), count = n / (f4 ? 4 : 8);
    size_t bad = f4 ? to_layout_values<float>(p, count, out) : to_layout_values<double>(p, count, out);
    if (bad == count) return;
    // Printed in the file's type: 2.1f shows as 2.1, not as the double nearest to it.
    std::string v = f4 ? fmt::format("{}", load_value<float>(p + bad * 4))
                       : fmt::format("{}", load_value<double>(p + bad * 8));
    throw Error(fmt::format("value {} at {} is not an integer in -1..5", v, config_position(first + bad, nc)));
  };
  r.read_chunks("node_config_feat", on_header, on_chunk);
  return out;
}

void load_base(NpzReader& r, GraphBase& g) {
  g.name = file_stem(r.path());
  g.node_feat = read_floats(r, "node_feat", expect_shape({-1, kNodeFeatDim}, "(n, 140)"));
  g.num_nodes = static_cast<int64_t>(g.node_feat.size() / kNodeFeatDim);
  g.node_opcode = read_opcodes(
      r, expect_shape({g.num_nodes}, fmt::format("({},) (one per node)", g.num_nodes)));
  g.edge_index = read_ints(r, "edge_index", [](const std::vector<int64_t>& s) {
    if (s == std::vector<int64_t>{0}) return;  // an empty array saved without its 2 columns
    expect_shape({-1, 2}, "(m, 2)")(s);
  });
}

template <typename Fn>
auto with_path(const std::string& path, Fn&& fn) {
  try {
    return fn();
  } catch (Error& e) {
    e.with_file(path);
    throw;
  }
}

// ---- validation ----

// Index of the first of n values failing ok, or n. The all-good case, the common one, runs
// without branches so that it vectorizes: these checks pass over every value of a file.
template <typename T, typename Ok>
size_t first_failing(const T* v, size_t n, Ok ok) {
  unsigned failed = 0;  // a bool accumulator does not vectorize
  for (size_t i = 0; i < n; ++i) failed |= static_cast<unsigned>(!ok(v[i]));
  if (!failed) return n;
  for (size_t i = 0; i < n; ++i)
    if (!ok(v[i])) return i;
  return n;
}

void check_size(const std::string& key, size_t got, int64_t rows, int64_t cols) {
  if (got != static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols))
    throw Error(fmt::format("holds {} values, expected {} x {} = {}", got, rows, cols, rows * cols),
                "", key);
}

void validate_base(const GraphBase& g) {
  if (g.num_nodes < 1) throw Error("graph has no nodes (at least one is needed)", "", "node_feat");
  check_size("node_feat", g.node_feat.size(), g.num_nodes, kNodeFeatDim);
  check_size("node_opcode", g.node_opcode.size(), g.num_nodes, 1);
  if (g.edge_index.size() % 2 != 0)
    throw Error(fmt::format("holds {} values, not pairs", g.edge_index.size()), "", "edge_index");
  // |x| <= max is false for NaN and infinities, and vectorizes where isfinite does not.
  const size_t i = first_failing(g.node_feat.data(), g.node_feat.size(),
                                 [](float x) { return std::fabs(x) <= std::numeric_limits<float>::max(); });
  if (i < g.node_feat.size())
    throw Error(fmt::format("node {} feature {} is {}", i / kNodeFeatDim, i % kNodeFeatDim, g.node_feat[i]),
                "", "node_feat");
  for (size_t i = 0; i < g.node_opcode.size(); ++i)
    if (g.node_opcode[i] >= kNumOpcodes) throw Error(opcode_error(i, g.node_opcode[i]), "", "node_opcode");
  for (size_t i = 0; i < g.edge_index.size(); ++i)
    if (g.edge_index[i] < 0 || g.edge_index[i] >= g.num_nodes)
      throw Error(fmt::format("edge {} endpoint {} is outside [0, {})", i / 2, g.edge_index[i],
                              g.num_nodes),
                  "", "edge_index");
}

void check_runtimes(const std::vector<int64_t>& v, const std::string& key, int64_t min_value) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < min_value)
      throw Error(fmt::format("config {} has {} {}, expected >= {}", i, key, v[i], min_value), "", key);
}

void check_has_configs(int64_t c) {
  if (c < 1) throw Error("no configurations (at least one is needed)", "", "config_runtime");
}

}  // namespace

std::string file_stem(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string ext = ".npz";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
    name.resize(name.size() - ext.size());
  return name;
}

void validate(const TileGraph& g) {
  validate_base(g);
  int64_t c = g.num_configs();
  check_has_configs(c);
  check_size("config_feat", g.config_feat.size(), c, kTileConfigDim);
  check_size("config_runtime_normalizers", g.config_runtime_normalizers.size(), c, 1);
  for (size_t i = 0; i < g.config_feat.size(); ++i)
    if (!std::isfinite(g.config_feat[i]))
      throw Error(fmt::format("config {} feature {} is {}", i / kTileConfigDim, i % kTileConfigDim,
                              g.config_feat[i]),
                  "", "config_feat");
  check_runtimes(g.config_runtime, "config_runtime", 0);
  // The target is runtime / normalizer: a zero normalizer has no meaning.
  check_runtimes(g.config_runtime_normalizers, "config_runtime_normalizers", 1);
}

namespace {

// validate(LayoutGraph) but for the values of node_config_feat, which loading checks as it
// converts them (read_layout_configs): a second pass over them would find nothing.
void validate_layout_structure(const LayoutGraph& g) {
  validate_base(g);
  int64_t nc = g.num_config_nodes(), c = g.num_configs();
  std::vector<int64_t> first_seen(static_cast<size_t>(g.num_nodes), -1);
  for (int64_t i = 0; i < nc; ++i) {
    int64_t id = g.node_config_ids[i];
    if (id < 0 || id >= g.num_nodes)
      throw Error(fmt::format("entry {} names node {}, outside [0, {})", i, id, g.num_nodes), "",
                  "node_config_ids");
    if (first_seen[id] >= 0)
      throw Error(fmt::format("node {} appears twice (entries {} and {})", id, first_seen[id], i), "",
                  "node_config_ids");
    first_seen[id] = i;
  }
  check_has_configs(c);
  check_size("node_config_feat", g.node_config_feat.size(), c, nc * kLayoutConfigDim);
  check_runtimes(g.config_runtime, "config_runtime", 0);
  int64_t prev = 0;
  for (size_t i = 0; i < g.node_splits.size(); ++i) {
    int64_t s = g.node_splits[i];
    if (s < prev || s > g.num_nodes)
      throw Error(fmt::format("split {} is {}: splits must be non-decreasing within [0, {}]", i, s,
                              g.num_nodes),
                  "", "node_splits");
    prev = s;
  }
}

}  // namespace

void validate(const LayoutGraph& g) {
  validate_layout_structure(g);
  const size_t bad = first_failing(g.node_config_feat.data(), g.node_config_feat.size(),
                                   [](int8_t v) { return v >= -1 && v <= 5; });
  if (bad < g.node_config_feat.size())
    throw Error(fmt::format("value {} at {} is not an integer in -1..5", int{g.node_config_feat[bad]},
                            config_position(bad, g.num_config_nodes())),
                "", "node_config_feat");
}

TileGraph load_tile_graph(const std::string& path, NpzBuffer* buffer) {
  return with_path(path, [&] {
    NpzReader r(path, buffer);
    TileGraph g;
    load_base(r, g);
    g.config_feat = read_floats(r, "config_feat",
                                expect_shape({-1, kTileConfigDim}, "(c, 24) (configs, 24)"));
    int64_t c = static_cast<int64_t>(g.config_feat.size() / kTileConfigDim);
    auto per_config = expect_shape({c}, fmt::format("({},) (one per config)", c));
    g.config_runtime = read_ints(r, "config_runtime", per_config);
    g.config_runtime_normalizers = read_ints(r, "config_runtime_normalizers", per_config);
    validate(g);
    return g;
  });
}

LayoutGraph load_layout_graph(const std::string& path, NpzBuffer* buffer) {
  return with_path(path, [&] {
    NpzReader r(path, buffer);
    LayoutGraph g;
    load_base(r, g);
    g.node_config_ids = read_ints(r, "node_config_ids", expect_shape({-1}, "(nc,)"));
    g.config_runtime = read_ints(r, "config_runtime", expect_shape({-1}, "(c,)"));
    g.node_config_feat = read_layout_configs(r, g.num_configs(), g.num_config_nodes());
    g.node_splits = read_ints(r, "node_splits", [](const std::vector<int64_t>& s) {
      if (s.size() == 1) return;  // (k,): tolerated, the release writes (1, k)
      expect_shape({1, -1}, "(1, k)")(s);
    });
    validate_layout_structure(g);
    return g;
  });
}

namespace {

void save_base(NpzWriter& w, const GraphBase& g) {
  w.add("node_feat", g.node_feat, {g.num_nodes, kNodeFeatDim});
  w.add("node_opcode", g.node_opcode, {g.num_nodes});
  w.add("edge_index", g.edge_index, {g.num_edges(), 2});
}

}  // namespace

void save_tile_graph(const std::string& path, const TileGraph& g, bool compress) {
  NpzWriter w(path, compress);
  save_base(w, g);
  int64_t c = g.num_configs();
  w.add("config_feat", g.config_feat, {c, kTileConfigDim});
  w.add("config_runtime", g.config_runtime, {c});
  w.add("config_runtime_normalizers", g.config_runtime_normalizers, {c});
  w.close();
}

void save_layout_graph(const std::string& path, const LayoutGraph& g, bool compress) {
  NpzWriter w(path, compress);
  save_base(w, g);
  int64_t c = g.num_configs(), nc = g.num_config_nodes();
  std::vector<int64_t> shape = {c, nc, kLayoutConfigDim};
  if (static_cast<uint64_t>(shape_count(shape)) != g.node_config_feat.size())
    throw Error(fmt::format("{} values do not fill shape {}", g.node_config_feat.size(),
                            format_shape(shape)),
                path, "node_config_feat");
  // The file holds float32: convert in slices so a 0.9 GB array never exists twice.
  w.begin_member("node_config_feat", DType::F4, shape);
  std::vector<float> slice(kConfigSliceValues);
  for (size_t at = 0; at < g.node_config_feat.size(); at += slice.size()) {
    size_t n = std::min(slice.size(), g.node_config_feat.size() - at);
    for (size_t i = 0; i < n; ++i) slice[i] = g.node_config_feat[at + i];
    w.write_data(slice.data(), n * sizeof(float));
  }
  w.end_member();
  w.add("node_config_ids", g.node_config_ids, {nc});
  w.add("config_runtime", g.config_runtime, {c});
  w.add("node_splits", g.node_splits, {1, static_cast<int64_t>(g.node_splits.size())});
  w.close();
}

}  // namespace tpuperf
