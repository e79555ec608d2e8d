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

void attach_tile(ProcessedGraph& g) {
  int64_t root = g.num_nodes - 1;
  for (int64_t i = g.num_nodes - 1; i >= 0; --i)
    if (g.node_feat[static_cast<size_t>(i * kNodeFeatDim)] > 0.0f) {
      root = i;
      break;
    }
  g.config_dims.assign(kTileConfigDims, 0);
  if (root < 0) return;
  copy_dims(g, root, kShapeDimsBegin, g.config_dims.data());
  copy_dims(g, root, kMinorToMajorBegin, g.config_dims.data() + kMaxRank);
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
