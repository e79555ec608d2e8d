#include "pipeline/synth/hlo.h"

#include <algorithm>
#include <utility>

#include "common/base/error.h"

namespace tpuperf::synth {

int elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::Pred:
      return 1;
    case ElemType::F16:
    case ElemType::BF16:
      return 2;
    case ElemType::S32:
    case ElemType::F32:
      return 4;
    case ElemType::Tuple:
      return 0;
  }
  return 4;
}

// One-hot column of each element type inside columns 2..20, 2 + the type's place in the
// release featurizer's order (INVALID PRED S8 S16 S32 S64 U8 U16 U32 U64 F16 F32 F64 BF16
// C64 C128 TUPLE OPAQUE TOKEN; pipeline/featurize/node_features.cpp writes the same).
static int type_column(ElemType t) {
  switch (t) {
    case ElemType::Pred:
      return 3;
    case ElemType::S32:
      return 6;
    case ElemType::F16:
      return 12;
    case ElemType::F32:
      return 13;
    case ElemType::BF16:
      return 15;
    case ElemType::Tuple:
      return 18;
  }
  return 13;
}

std::vector<int64_t> row_major(size_t rank) {
  std::vector<int64_t> m(rank);
  for (size_t i = 0; i < rank; ++i) m[i] = static_cast<int64_t>(rank - 1 - i);
  return m;
}

int64_t num_elements(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

int HloBuilder::add(HloNode node) {
  int id = size();
  for (int o : node.operands)
    if (o < 0 || o >= id)
      throw Error("operand " + std::to_string(o) + " of node " + std::to_string(id) +
                  " is not an earlier node");
  if (node.minor_to_major.empty() && node.type != ElemType::Tuple)
    node.minor_to_major = row_major(node.dims.size());
  if (starts_.empty()) starts_.push_back(0);
  nodes_.push_back(std::move(node));
  return id;
}

void HloBuilder::begin_computation() {
  if (!nodes_.empty() && starts_.back() != size()) starts_.push_back(size());
  if (starts_.empty()) starts_.push_back(0);
  next_parameter_ = 0;
}

std::vector<int64_t> HloBuilder::splits() const {
  std::vector<int64_t> s = starts_.empty() ? std::vector<int64_t>{0} : starts_;
  s.push_back(size());
  return s;
}

int HloBuilder::parameter(ElemType t, std::vector<int64_t> dims) {
  HloNode n;
  n.opcode = op::kParameter;
  n.type = t;
  n.dims = std::move(dims);
  n.parameter_number = next_parameter_++;
  return add(std::move(n));
}

int HloBuilder::constant(ElemType t, std::vector<int64_t> dims) {
  HloNode n;
  n.opcode = op::kConstant;
  n.type = t;
  n.dims = std::move(dims);
  return add(std::move(n));
}

int HloBuilder::broadcast(int operand, std::vector<int64_t> dims, std::vector<int64_t> kept) {
  HloNode n;
  n.opcode = op::kBroadcast;
  n.type = node(operand).type;
  n.dims = std::move(dims);
  n.operands = {operand};
  n.dimensions = std::move(kept);
  return add(std::move(n));
}

int HloBuilder::unary(uint8_t opcode, int a) {
  HloNode n;
  n.opcode = opcode;
  n.type = node(a).type;
  n.dims = node(a).dims;
  n.operands = {a};
  return add(std::move(n));
}

int HloBuilder::binary(uint8_t opcode, int a, int b) {
  HloNode n;
  n.opcode = opcode;
  n.type = opcode == op::kCompare ? ElemType::Pred : node(a).type;
  n.dims = node(a).dims;
  n.operands = {a, b};
  return add(std::move(n));
}

int HloBuilder::convert(int a, ElemType t) {
  HloNode n;
  n.opcode = op::kConvert;
  n.type = t;
  n.dims = node(a).dims;
  n.operands = {a};
  return add(std::move(n));
}

int HloBuilder::reshape(int a, std::vector<int64_t> dims) {
  if (num_elements(dims) != num_elements(node(a).dims))
    throw Error("reshape changes the number of elements");
  HloNode n;
  n.opcode = op::kReshape;
  n.type = node(a).type;
  n.dims = std::move(dims);
  n.operands = {a};
  return add(std::move(n));
}

int HloBuilder::transpose(int a, const std::vector<int64_t>& perm) {
  HloNode n;
  n.opcode = op::kTranspose;
  n.type = node(a).type;
  for (int64_t p : perm) n.dims.push_back(node(a).dims[static_cast<size_t>(p)]);
  n.operands = {a};
  n.dimensions = perm;
  return add(std::move(n));
}

int HloBuilder::reduce(int a, int init, std::vector<int64_t> reduced) {
  HloNode n;
  n.opcode = op::kReduce;
  n.type = node(a).type;
  const auto& in = node(a).dims;
  for (size_t i = 0; i < in.size(); ++i)
    if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(i)) == reduced.end())
      n.dims.push_back(in[i]);
  n.operands = {a, init};
  n.dimensions = std::move(reduced);
  return add(std::move(n));
}

int HloBuilder::reduce_window(int a, int init, const Window& w, std::vector<int64_t> out_dims) {
  HloNode n;
  n.opcode = op::kReduceWindow;
  n.type = node(a).type;
  n.dims = std::move(out_dims);
  n.operands = {a, init};
  n.has_window = true;
  n.window = w;
  return add(std::move(n));
}

int HloBuilder::dot(int lhs, int rhs, std::vector<int64_t> out_dims, ElemType out_type) {
  HloNode n;
  n.opcode = op::kDot;
  n.type = out_type;
  n.dims = std::move(out_dims);
  n.operands = {lhs, rhs};
  return add(std::move(n));
}

int HloBuilder::convolution(int input, int kernel, const Window& w, const ConvDims& cd,
                            std::vector<int64_t> out_dims, ElemType out_type,
                            int64_t feature_groups) {
  HloNode n;
  n.opcode = op::kConvolution;
  n.type = out_type;
  n.dims = std::move(out_dims);
  n.operands = {input, kernel};
  n.has_window = true;
  n.window = w;
  n.has_conv = true;
  n.conv = cd;
  n.feature_groups = feature_groups;
  n.batch_groups = 1;
  return add(std::move(n));
}

int HloBuilder::tuple(const std::vector<int>& elements) {
  HloNode n;
  n.opcode = op::kTuple;
  n.type = ElemType::Tuple;
  n.operands = elements;
  n.tuple_size = static_cast<int64_t>(elements.size());
  return add(std::move(n));
}

int HloBuilder::get_tuple_element(int tuple, int64_t index, ElemType t, std::vector<int64_t> dims) {
  HloNode n;
  n.opcode = op::kGetTupleElement;
  n.type = t;
  n.dims = std::move(dims);
  n.operands = {tuple};
  n.dimensions = {index};
  return add(std::move(n));
}

Window square_window(int64_t k, int64_t s, bool reversed) {
  Window w;
  int64_t pad = (k - 1) / 2;
  w.size = {k, k};
  w.stride = {s, s};
  w.pad_low = {pad, pad};
  w.pad_high = {k - 1 - pad, k - 1 - pad};
  w.dilation = {1, 1};
  w.base_dilation = {1, 1};
  w.reversal = {reversed ? 1 : 0, reversed ? 1 : 0};
  return w;
}

// Writes up to 6 values, their sum and their product (1 for an empty list) at base.
static void put_list(float* row, int base, const std::vector<int64_t>& v) {
  double sum = 0, prod = 1;
  for (size_t i = 0; i < v.size() && i < 6; ++i) {
    row[base + static_cast<int>(i)] = static_cast<float>(v[i]);
    sum += static_cast<double>(v[i]);
    prod *= static_cast<double>(v[i]);
  }
  row[base + 6] = static_cast<float>(sum);
  row[base + 7] = static_cast<float>(prod);
}

static void put_values(float* row, int base, size_t width, const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size() && i < width; ++i)
    row[base + static_cast<int>(i)] = static_cast<float>(v[i]);
}

static void put_window(float* row, const HloNode& n) {
  const Window& w = n.window;
  const std::vector<int64_t>* fields[] = {&w.size,     &w.stride,        &w.pad_low, &w.pad_high,
                                          &w.dilation, &w.base_dilation, &w.reversal};
  for (int f = 0; f < 7; ++f)
    put_list(row, col::kWindow + 8 * f, n.has_window ? *fields[f] : std::vector<int64_t>{});
}

// Columns 93..104: input batch/feature/spatial x2, kernel in/out feature/spatial x2,
// output batch/feature/spatial x2; 105-106 stay 0 (3-d convolutions only).
static void put_conv(float* row, const HloNode& n) {
  const ConvDims& c = n.conv;
  const int64_t v[12] = {c.in_batch,     c.in_feature,    c.in_spatial[0],  c.in_spatial[1],
                         c.k_in_feature, c.k_out_feature, c.k_spatial[0],   c.k_spatial[1],
                         c.out_batch,    c.out_feature,   c.out_spatial[0], c.out_spatial[1]};
  for (int i = 0; i < 12; ++i) row[col::kConvDims + i] = static_cast<float>(v[i]);
}

std::array<float, kNodeFeatDim> node_features(const HloNode& n) {
  std::array<float, kNodeFeatDim> f{};
  float* row = f.data();
  row[col::kIsRoot] = n.is_root ? 1.f : 0.f;
  row[type_column(n.type)] = 1.f;
  put_list(row, col::kDims, n.dims);
  row[col::kTupleSize] = static_cast<float>(n.tuple_size);
  if (n.opcode == op::kParameter)
    row[col::kParameterNumber] = static_cast<float>(n.parameter_number);
  put_values(row, col::kDimensions, 6, n.dimensions);
  put_window(row, n);
  if (n.has_conv) put_conv(row, n);
  row[col::kFeatureGroups] = static_cast<float>(n.feature_groups);
  row[col::kBatchGroups] = static_cast<float>(n.batch_groups);
  put_values(row, col::kSliceStart, 4, n.slice_start);
  put_values(row, col::kSliceStride, 4, n.slice_stride);
  put_values(row, col::kSliceLimit, 4, n.slice_limit);
  put_values(row, col::kPadLow, 4, n.pad_low);
  put_values(row, col::kPadHigh, 4, n.pad_high);
  // Like the release: minor_to_major padded with 0 beyond the rank.
  put_values(row, col::kLayout, 6, n.minor_to_major);
  return f;
}

void HloBuilder::fill(GraphBase& g) const {
  g.num_nodes = size();
  g.node_feat.clear();
  g.node_feat.reserve(nodes_.size() * kNodeFeatDim);
  g.node_opcode.clear();
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (size_t u = 0; u < nodes_.size(); ++u) {
    auto f = node_features(nodes_[u]);
    g.node_feat.insert(g.node_feat.end(), f.begin(), f.end());
    g.node_opcode.push_back(nodes_[u].opcode);
    for (int v : nodes_[u].operands) edges.emplace_back(static_cast<int64_t>(u), v);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  g.edge_index.clear();
  g.edge_index.reserve(edges.size() * 2);
  for (const auto& [u, v] : edges) {
    g.edge_index.push_back(u);
    g.edge_index.push_back(v);
  }
}

}  // namespace tpuperf::synth
