#include "trainer/models/config_dims.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/graph/feature_transform.h"
#include "common/graph/graph.h"

namespace tpuperf {

namespace {

// Six values of a row starting at column `begin`, rounded to integers: shape dims are
// integers in the release; a non-integer or negative value (other featurizers, noise)
// is rounded and clamped at -1 rather than refused, since the dims only feed features.
void copy_dims(const ProcessedGraph& g, int64_t node, int begin, int64_t* out) {
  const float* row = g.node_feat.data() + node * kNodeFeatDim + begin;
  for (int i = 0; i < kMaxRank; ++i) {
    const float v = row[i];
    if (!std::isfinite(v))
      throw Error("node " + std::to_string(node) + " column " + std::to_string(begin + i) + " is " +
                      std::to_string(v) + ", not a dimension",
                  "", g.collection + ":" + g.name);
    out[i] = std::llround(std::clamp(static_cast<double>(v), -1.0, 1e15));
  }
}

// Node feature columns read here besides the shape dims: the element type one-hot (19
// columns from 2, upstream's PrimitiveType order: INVALID, PRED, S8, S16, S32, S64, U8, U16,
// U32, U64, F16, F32, F64, BF16, C64, C128, TUPLE, OPAQUE, TOKEN) and the shape product.
constexpr int kElementTypeBegin = 2, kElementTypes = 19, kShapeProduct = 28;
constexpr int kTupleType = 16;  // TUPLE's place in the one-hot

// A node's element type: its one-hot's first set column, -1 when none is set.
int element_type(const ProcessedGraph& g, int64_t node) {
  const float* row = g.node_feat.data() + node * kNodeFeatDim + kElementTypeBegin;
  for (int i = 0; i < kElementTypes; ++i)
    if (row[i] > 0.5f) return i;
  return -1;
}

// Bytes of one element of a node's type; 4 (f32's) when no type is set, so a featurizer
// that leaves the one-hot empty gets f32's widths rather than zero bytes.
int64_t element_bytes(const ProcessedGraph& g, int64_t node) {
  static constexpr int64_t kBytes[kElementTypes] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8, 16, 0, 0, 0};
  const int type = element_type(g, node);
  return type < 0 ? 4 : kBytes[type];
}

// A node's element count: its shape product (1 for a scalar).
double node_elements(const ProcessedGraph& g, int64_t node) {
  const float v = g.node_feat[static_cast<size_t>(node * kNodeFeatDim + kShapeProduct)];
  return std::isfinite(v) && v > 0 ? static_cast<double>(v) : 0.0;
}

constexpr uint8_t kFusionOpcode = 41, kParameterOpcode = 63, kTupleOpcode = 100;

// The producers of a node, in edge order.
std::vector<int64_t> operands_of(const ProcessedGraph& g, int64_t node) {
  std::vector<int64_t> out;
  for (int64_t e = 0; e < g.num_edges(); ++e) {
    if (g.edge_index[static_cast<size_t>(2 * e)] != node) continue;
    const int32_t producer = g.edge_index[static_cast<size_t>(2 * e + 1)];
    if (producer < 0 || producer >= g.num_nodes)
      throw Error("edge " + std::to_string(e) + " has an endpoint out of range", "", g.collection + ":" + g.name);
    out.push_back(producer);
  }
  return out;
}

bool is_root(const ProcessedGraph& g, int64_t node) { return g.node_feat[static_cast<size_t>(node * kNodeFeatDim)] > 0.0f; }

struct TileOutput {
  int64_t node;   // whose shape the tile covers
  int64_t bytes;  // written per output element
};

// A multi-output kernel's output is a tuple, which has no shape: its largest element is the
// output the tile covers, and every element is written per output element. The release's
// tile graphs end in the fusion instruction; when it is tuple-shaped, its tuple is the
// called computation's root, one of its operands (the featurizer's edge to a callee's root).
TileOutput tile_output(const ProcessedGraph& g, int64_t root) {
  int64_t node = root;
  for (int depth = 0; depth < 4 && g.node_opcode[static_cast<size_t>(node)] != kTupleOpcode; ++depth) {
    if (element_type(g, node) != kTupleType) break;
    int64_t callee = -1;
    for (int64_t p : operands_of(g, node))
      if (is_root(g, p)) callee = std::max(callee, p);
    if (callee < 0) break;
    node = callee;
  }
  if (g.node_opcode[static_cast<size_t>(node)] != kTupleOpcode) return {node, element_bytes(g, node)};
  TileOutput out{node, 0};
  for (int64_t element : operands_of(g, node)) {
    out.bytes += element_bytes(g, element);
    if (out.node == node || node_elements(g, element) > node_elements(g, out.node)) out.node = element;
  }
  return out;
}

struct TileInputs {
  double bytes = 0, elements = 0;
};

// The kernel's inputs, summed: a fusion root's parameter operands (the fused computation's
// own parameters repeat them), else every parameter of the graph.
TileInputs tile_inputs(const ProcessedGraph& g, int64_t root) {
  std::vector<int64_t> nodes;
  if (g.node_opcode[static_cast<size_t>(root)] == kFusionOpcode) {
    nodes = operands_of(g, root);
  } else {
    nodes.resize(static_cast<size_t>(g.num_nodes));
    for (int64_t i = 0; i < g.num_nodes; ++i) nodes[static_cast<size_t>(i)] = i;
  }
  TileInputs in;
  for (int64_t i : nodes)
    if (g.node_opcode[static_cast<size_t>(i)] == kParameterOpcode) {
      in.bytes += node_elements(g, i) * static_cast<double>(element_bytes(g, i));
      in.elements += node_elements(g, i);
    }
  return in;
}

void attach_tile(ProcessedGraph& g) {
  int64_t root = g.num_nodes - 1;
  for (int64_t i = g.num_nodes - 1; i >= 0; --i)
    if (is_root(g, i)) {
      root = i;
      break;
    }
  g.config_dims.assign(kTileConfigDims, 0);
  if (root < 0) return;
  if (static_cast<int64_t>(g.node_opcode.size()) != g.num_nodes)
    throw Error("config dims need the " + std::to_string(g.num_nodes) + " nodes' opcodes, the graph has " +
                    std::to_string(g.node_opcode.size()),
                "", g.collection + ":" + g.name);
  const TileOutput output = tile_output(g, root);
  copy_dims(g, output.node, kShapeDimsBegin, g.config_dims.data());
  copy_dims(g, output.node, kMinorToMajorBegin, g.config_dims.data() + kMaxRank);
  const TileInputs in = tile_inputs(g, root);
  g.config_dims[kTileOutBytes] = output.bytes;
  g.config_dims[kTileInBytes] = std::llround(std::min(in.bytes, 1e15));
  g.config_dims[kTileInElements] = std::llround(std::min(in.elements, 1e15));
}

void attach_layout(ProcessedGraph& g) {
  const auto nc = static_cast<int64_t>(g.node_config_ids.size());
  g.config_dims.assign(static_cast<size_t>(nc * kLayoutConfigDims), 0);
  std::vector<int64_t> slot_of(static_cast<size_t>(g.num_nodes), -1);
  for (int64_t m = 0; m < nc; ++m) {
    const int32_t node = g.node_config_ids[static_cast<size_t>(m)];
    if (node < 0 || node >= g.num_nodes)
      throw Error("node_config_id " + std::to_string(node) + " out of range", "", g.collection + ":" + g.name);
    slot_of[static_cast<size_t>(node)] = m;
    copy_dims(g, node, kShapeDimsBegin, g.config_dims.data() + m * kLayoutConfigDims);
  }
  std::vector<int> operands(static_cast<size_t>(nc), 0);
  for (int64_t e = 0; e < g.num_edges(); ++e) {
    const int32_t consumer = g.edge_index[static_cast<size_t>(2 * e)];
    const int32_t producer = g.edge_index[static_cast<size_t>(2 * e + 1)];
    if (consumer < 0 || consumer >= g.num_nodes || producer < 0 || producer >= g.num_nodes)
      throw Error("edge " + std::to_string(e) + " has an endpoint out of range", "", g.collection + ":" + g.name);
    const int64_t m = slot_of[static_cast<size_t>(consumer)];
    if (m < 0 || operands[static_cast<size_t>(m)] == 2) continue;
    const int k = ++operands[static_cast<size_t>(m)];  // operand 0 -> tensor 1, operand 1 -> tensor 2
    copy_dims(g, producer, kShapeDimsBegin, g.config_dims.data() + m * kLayoutConfigDims + k * kMaxRank);
  }
}

}  // namespace

void attach_config_dims(Kind kind, ProcessedGraph& g) {
  if (g.num_node_feat != kNodeFeatDim ||
      static_cast<int64_t>(g.node_feat.size()) != g.num_nodes * kNodeFeatDim)
    throw Error("config dims need the untransformed " + std::to_string(kNodeFeatDim) + " node features, the graph has " +
                    std::to_string(g.num_node_feat) + " columns",
                "", g.collection + ":" + g.name);
  if (kind == Kind::Tile)
    attach_tile(g);
  else
    attach_layout(g);
  g.has_config_dims = true;
}

}  // namespace tpuperf
