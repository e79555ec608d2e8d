#include "trainer/models/batch.h"

#include <algorithm>
#include <string>

#include "trainer/models/config_dims.h"
#include "common/base/error.h"
#include "trainer/models/shape_features.h"

namespace tpuperf {

namespace {

void check_graph(Kind kind, const ProcessedGraph& g, int64_t num_feat,
                 const std::vector<int64_t>& configs) {
  const int64_t n = g.num_nodes, c = g.num_configs();
  auto fail = [&](const std::string& why) { throw Error(why, "", g.collection + ":" + g.name); };
  if (g.num_node_feat != num_feat)
    fail(std::to_string(g.num_node_feat) + " node features, the batch has " +
         std::to_string(num_feat));
  if (static_cast<int64_t>(g.node_feat.size()) != n * num_feat)
    fail("node_feat holds " + std::to_string(g.node_feat.size()) + " values, expected " +
         std::to_string(n) + " x " + std::to_string(num_feat));
  if (static_cast<int64_t>(g.node_opcode.size()) != n) fail("node_opcode size != num_nodes");
  for (uint8_t op : g.node_opcode)
    if (op >= kNumOpcodes) fail("opcode " + std::to_string(op) + " out of range");
  if (g.edge_index.size() % 2 != 0) fail("edge_index has an odd number of values");
  for (int32_t v : g.edge_index)
    if (v < 0 || v >= n) fail("edge endpoint " + std::to_string(v) + " out of range");
  if (configs.empty()) fail("empty slate");
  for (int64_t k : configs)
    if (k < 0 || k >= c)
      fail("config " + std::to_string(k) + " out of range [0, " + std::to_string(c) + ")");
  if (kind == Kind::Tile) {
    if (static_cast<int64_t>(g.config_feat.size()) != c * kTileConfigDim)
      fail("config_feat size != num_configs x 24");
    if (static_cast<int64_t>(g.config_runtime_normalizers.size()) != c)
      fail("config_runtime_normalizers size != num_configs");
  } else {
    const auto nc = static_cast<int64_t>(g.node_config_ids.size());
    if (static_cast<int64_t>(g.node_config_packed.size()) != c * nc)
      fail("node_config_packed size != num_configs x num configurable nodes");
    for (int32_t v : g.node_config_ids)
      if (v < 0 || v >= n) fail("node_config_id " + std::to_string(v) + " out of range");
  }
  const auto dims = kind == Kind::Tile ? kTileConfigDims : kLayoutConfigDims * static_cast<int64_t>(g.node_config_ids.size());
  if (g.has_config_dims && static_cast<int64_t>(g.config_dims.size()) != dims)
    fail("config_dims holds " + std::to_string(g.config_dims.size()) + " values, expected " + std::to_string(dims));
}

// All graphs carry config dims, or none (then the batch has no config_shape).
bool have_config_dims(const std::vector<const ProcessedGraph*>& graphs) {
  const bool first = graphs[0]->has_config_dims;
  for (const ProcessedGraph* g : graphs)
    if (g->has_config_dims != first)
      throw Error("some graphs of the batch carry config dims and some do not", "", g->collection + ":" + g->name);
  return first;
}

double target_of(Kind kind, const ProcessedGraph& g, int64_t k) {
  const auto runtime = static_cast<double>(g.config_runtime[static_cast<size_t>(k)]);
  if (kind == Kind::Layout) return runtime;
  const int64_t norm = g.config_runtime_normalizers[static_cast<size_t>(k)];
  if (norm <= 0)
    throw Error("normalizer " + std::to_string(norm) + " of config " + std::to_string(k) +
                    " is not positive",
                "", g.collection + ":" + g.name);
  return runtime / static_cast<double>(norm);
}

template <typename T>
torch::Tensor to_tensor(std::vector<T>& v, std::vector<int64_t> shape, torch::ScalarType t) {
  if (v.empty()) return torch::empty(shape, torch::TensorOptions().dtype(t));  // no blob
  return torch::from_blob(v.data(), shape, t).clone();
}

}  // namespace

Batch make_batch(Kind kind, const std::vector<const ProcessedGraph*>& graphs,
                 const std::vector<std::vector<int64_t>>& configs) {
  require(!graphs.empty(), "make_batch: no graphs");
  require(graphs.size() == configs.size(), "make_batch: one slate per graph needed");
  const int64_t num_feat = graphs[0]->num_node_feat;
  Batch b;
  b.kind = kind;
  b.num_graphs = static_cast<int64_t>(graphs.size());
  b.node_offsets.push_back(0);
  for (size_t g = 0; g < graphs.size(); ++g) {
    check_graph(kind, *graphs[g], num_feat, configs[g]);
    b.slate = std::max<int64_t>(b.slate, static_cast<int64_t>(configs[g].size()));
    b.node_offsets.push_back(b.node_offsets.back() + graphs[g]->num_nodes);
  }
  b.num_nodes = b.node_offsets.back();
  const int64_t G = b.num_graphs, S = b.slate;
  const bool with_dims = have_config_dims(graphs);

  std::vector<float> feat;
  std::vector<int64_t> opcode, node_graph, consumer, producer;
  feat.reserve(static_cast<size_t>(b.num_nodes * num_feat));
  for (int64_t g = 0; g < G; ++g) {
    const ProcessedGraph& pg = *graphs[static_cast<size_t>(g)];
    const int64_t off = b.node_offsets[static_cast<size_t>(g)];
    feat.insert(feat.end(), pg.node_feat.begin(), pg.node_feat.end());
    opcode.insert(opcode.end(), pg.node_opcode.begin(), pg.node_opcode.end());
    node_graph.insert(node_graph.end(), static_cast<size_t>(pg.num_nodes), g);
    for (int64_t e = 0; e < pg.num_edges(); ++e) {
      consumer.push_back(off + pg.edge_index[static_cast<size_t>(2 * e)]);
      producer.push_back(off + pg.edge_index[static_cast<size_t>(2 * e + 1)]);
    }
  }
  b.node_feat = to_tensor(feat, {b.num_nodes, num_feat}, torch::kFloat32);
  b.node_opcode = to_tensor(opcode, {b.num_nodes}, torch::kInt64);
  b.node_graph = to_tensor(node_graph, {b.num_nodes}, torch::kInt64);
  const auto E = static_cast<int64_t>(consumer.size());
  b.edges.consumer = to_tensor(consumer, {E}, torch::kInt64);
  b.edges.producer = to_tensor(producer, {E}, torch::kInt64);

  // Slots: slot s of graph g holds configs[g][s], or configs[g][0] as padding.
  std::vector<int64_t> index(static_cast<size_t>(G * S));
  std::vector<uint8_t> mask(static_cast<size_t>(G * S));
  std::vector<double> target(static_cast<size_t>(G * S), 0.0);
  for (int64_t g = 0; g < G; ++g) {
    const auto& slate = configs[static_cast<size_t>(g)];
    for (int64_t s = 0; s < S; ++s) {
      const bool real = s < static_cast<int64_t>(slate.size());
      const auto at = static_cast<size_t>(g * S + s);
      index[at] = real ? slate[static_cast<size_t>(s)] : slate[0];
      mask[at] = real ? 1 : 0;
      if (real) target[at] = target_of(kind, *graphs[static_cast<size_t>(g)], index[at]);
    }
  }
  b.config_index = to_tensor(index, {G, S}, torch::kInt64);
  b.config_mask = to_tensor(mask, {G, S}, torch::kUInt8).to(torch::kBool);
  b.target = to_tensor(target, {G, S}, torch::kFloat64);

  if (kind == Kind::Tile) {
    std::vector<float> cf;
    cf.reserve(static_cast<size_t>(G * S * kTileConfigDim));
    for (int64_t g = 0; g < G; ++g) {
      const auto& src = graphs[static_cast<size_t>(g)]->config_feat;
      for (int64_t s = 0; s < S; ++s) {
        const auto row = src.begin() + index[static_cast<size_t>(g * S + s)] * kTileConfigDim;
        cf.insert(cf.end(), row, row + kTileConfigDim);
      }
    }
    b.config_feat = to_tensor(cf, {G, S, kTileConfigDim}, torch::kFloat32);
    if (with_dims) {
      std::vector<float> shape(static_cast<size_t>(G * S * kTileShapeFeat));
      for (int64_t gs = 0; gs < G * S; ++gs)
        tile_shape_features(cf.data() + gs * kTileConfigDim, graphs[static_cast<size_t>(gs / S)]->config_dims.data(),
                            shape.data() + gs * kTileShapeFeat);
      b.config_shape = to_tensor(shape, {G, S, kTileShapeFeat}, torch::kFloat32);
    }
    return b;
  }

  std::vector<int64_t> config_node;
  b.config_offsets.assign(1, 0);
  for (int64_t g = 0; g < G; ++g) {
    for (int32_t id : graphs[static_cast<size_t>(g)]->node_config_ids)
      config_node.push_back(b.node_offsets[static_cast<size_t>(g)] + id);
    b.config_offsets.push_back(static_cast<int64_t>(config_node.size()));
  }
  const auto M = static_cast<int64_t>(config_node.size());
  std::vector<int64_t> values;
  values.reserve(static_cast<size_t>(S * M * kLayoutConfigDim));
  std::vector<float> shape(with_dims ? static_cast<size_t>(S * M * kLayoutShapeFeat) : 0);
  std::vector<double> max_elements(static_cast<size_t>(G), 1.0);
  std::vector<LayoutNodeDims> node_dims;  // per configurable node of the batch, in config_node's order
  if (with_dims) {
    node_dims.reserve(static_cast<size_t>(M));
    for (int64_t g = 0; g < G; ++g) {
      const ProcessedGraph& pg = *graphs[static_cast<size_t>(g)];
      const auto nc = static_cast<int64_t>(pg.node_config_ids.size());
      max_elements[static_cast<size_t>(g)] = max_layout_elements(pg.config_dims.data(), nc);
      for (int64_t m = 0; m < nc; ++m) node_dims.push_back(layout_node_dims(pg.config_dims.data() + m * kLayoutConfigDims));
    }
  }
  int8_t decoded[kLayoutConfigDim];
  for (int64_t s = 0; s < S; ++s) {
    for (int64_t g = 0; g < G; ++g) {
      const ProcessedGraph& pg = *graphs[static_cast<size_t>(g)];
      const auto nc = static_cast<int64_t>(pg.node_config_ids.size());
      const int64_t k = index[static_cast<size_t>(g * S + s)];
      for (int64_t m = 0; m < nc; ++m) {
        unpack_layout_values(pg.node_config_packed[static_cast<size_t>(k * nc + m)], decoded);
        if (with_dims) {
          const auto row = static_cast<int64_t>(values.size()) / kLayoutConfigDim;  // s * M + this node's
          layout_shape_features(decoded, node_dims[static_cast<size_t>(row % M)], max_elements[static_cast<size_t>(g)],
                                shape.data() + row * kLayoutShapeFeat);
        }
        for (int64_t j = 0; j < kLayoutConfigDim; ++j)
          values.push_back(j * kLayoutLevels + decoded[j] + 1);
      }
    }
  }
  b.config_node = to_tensor(config_node, {M}, torch::kInt64);
  b.config_values = to_tensor(values, {S, M, kLayoutConfigDim}, torch::kInt64);
  if (with_dims) b.config_shape = to_tensor(shape, {S, M, kLayoutShapeFeat}, torch::kFloat32);
  return b;
}

Batch batch_to_dtype(const Batch& batch, torch::ScalarType dtype) {
  Batch b = batch;
  b.node_feat = batch.node_feat.to(dtype);
  if (batch.config_feat.defined()) b.config_feat = batch.config_feat.to(dtype);
  if (batch.config_shape.defined()) b.config_shape = batch.config_shape.to(dtype);
  return b;
}

const torch::Tensor& require_config_shape(const Batch& batch, const std::string& model) {
  if (!batch.config_shape.defined())
    throw Error("model '" + model + "' needs the graphs' config dims (trainer/models/config_dims.h), which this batch's "
                "graphs do not carry: attach_config_dims must run on the untransformed features when they are loaded");
  return batch.config_shape;
}

}  // namespace tpuperf
