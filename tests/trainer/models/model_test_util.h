// Helpers of the model tests: random graphs of either kind and small model specs.
#pragma once

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/graph/processed_graph.h"
#include "trainer/models/config_dims.h"
#include "trainer/models/registry.h"

namespace tpuperf {

// Random config dims (what attach_config_dims reads from raw features): ranks 1-4, dims
// 1-300, a random minor_to_major, output widths and input bytes for tile roots. Drawn from the graph's name, so the
// caller's generator is not advanced.
inline void attach_random_dims(Kind kind, ProcessedGraph& g) {
  std::mt19937_64 rng(std::hash<std::string>{}(g.name));
  auto tensor = [&](int64_t* d) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < 6; ++i) d[i] = i < rank ? 1 + static_cast<int64_t>(rng() % 300) : 0;
    return rank;
  };
  if (kind == Kind::Tile) {
    g.config_dims.assign(kTileConfigDims, -1);
    const int rank = tensor(g.config_dims.data());
    for (int i = 0; i < rank; ++i) g.config_dims[6 + static_cast<size_t>(i)] = i;
    std::shuffle(g.config_dims.begin() + 6, g.config_dims.begin() + 6 + rank, rng);
    g.config_dims[kTileOutBytes] = 1 + static_cast<int64_t>(rng() % 8);
    g.config_dims[kTileInElements] = 1 + static_cast<int64_t>(rng() % 100000);
    g.config_dims[kTileInBytes] = g.config_dims[kTileInElements] * (1 + static_cast<int64_t>(rng() % 4));
  } else {
    g.config_dims.assign(g.node_config_ids.size() * 18, 0);
    for (size_t t = 0; t < g.node_config_ids.size() * 3; ++t) tensor(g.config_dims.data() + 6 * t);
  }
  g.has_config_dims = true;
}

// A random graph: n nodes of num_feat features, a tree of edges (node u consumes a lower
// node), c configs with runtimes 1000..1999 (tile: config features 0..15, normalizers 1;
// layout: nc configurable nodes with random layout values).
inline ProcessedGraph random_graph(Kind kind, std::mt19937_64& rng, int64_t n, int64_t c, int64_t nc = 3,
                                   int64_t num_feat = 4) {
  ProcessedGraph g;
  g.collection = kind == Kind::Tile ? "tile:xla" : "layout:xla:random";
  g.name = "g" + std::to_string(rng() % 100000);
  g.num_nodes = n;
  g.num_node_feat = static_cast<int>(num_feat);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < n * num_feat; ++i) g.node_feat.push_back(normal(rng));
  for (int64_t i = 0; i < n; ++i) g.node_opcode.push_back(static_cast<uint8_t>(rng() % 121));
  for (int64_t u = 1; u < n; ++u) {
    g.edge_index.push_back(static_cast<int32_t>(u));
    g.edge_index.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(u)));
  }
  for (int64_t k = 0; k < c; ++k) g.config_runtime.push_back(1000 + static_cast<int64_t>(rng() % 1000));
  if (kind == Kind::Tile) {
    for (int64_t i = 0; i < c * kTileConfigDim; ++i) g.config_feat.push_back(static_cast<float>(rng() % 16));
    g.config_runtime_normalizers.assign(static_cast<size_t>(c), 1);
  } else {
    for (int64_t i = 0; i < nc; ++i) g.node_config_ids.push_back(static_cast<int32_t>(i * (n / nc)));
    for (int64_t i = 0; i < c * nc; ++i) {
      int8_t v[kLayoutConfigDim];
      for (auto& x : v) x = static_cast<int8_t>(static_cast<int>(rng() % 7) - 1);
      g.node_config_packed.push_back(pack_layout_values(v));
    }
  }
  attach_random_dims(kind, g);
  return g;
}

inline ModelOptions small_options(int64_t heads = 2, double dropout = 0.0) {
  ModelOptions o;
  o.hidden = 16;
  o.layers = 2;
  o.dropout = dropout;
  o.opcode_dim = 4;
  o.attention_heads = heads;
  return o;
}

inline ModelSpec spec_of(const ModelArch& arch, int64_t num_feat, const ModelOptions& opts) {
  ModelSpec s;
  s.kind = arch.kind;
  s.arch = arch.name;
  s.num_node_feat = num_feat;
  s.options = opts;
  return s;
}

inline ModelPtr model_of(const ModelArch& arch, int64_t num_feat, const ModelOptions& opts) {
  return make_model(spec_of(arch, num_feat, opts));
}

// The layers a model starts at zero so that training starts from its deep part (the wide
// term, wide.*) drawn at random, so that tests of shapes, equivariance, batching and the
// fused path see those terms at work.
inline void randomize_zero_started_layers(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters())
    if (p.key().rfind("wide.", 0) == 0) p.value().normal_(0, 0.3);
}

// Copies every parameter of `from` into the same-named one of `to` (the same model on the
// other path, fused or plain).
inline void copy_parameters(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  const auto source = from.named_parameters();
  for (auto& p : to.named_parameters()) p.value().copy_(*source.find(p.key()));
}

// The first (default) architecture of a kind.
inline const ModelArch& default_arch(Kind kind) {
  for (const auto& a : model_archs())
    if (a.kind == kind) return a;
  throw std::logic_error("no model of this kind");
}

}  // namespace tpuperf
