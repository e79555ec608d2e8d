#include "trainer/predict/graph_scoring.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "common/base/error.h"
#include "trainer/eval/submission.h"
#include "trainer/models/batch.h"

namespace tpuperf {

namespace {

// The row of slot s of a slate, as bytes.
std::string_view row_of(const GraphSlate& slate, size_t s, Kind kind) {
  const ProcessedGraph& g = *slate.graph;
  const auto k = static_cast<size_t>(slate.batch_configs[s]);
  if (kind == Kind::Tile)
    return {reinterpret_cast<const char*>(g.config_feat.data() + k * kTileConfigDim), kTileConfigDim * sizeof(float)};
  const size_t nc = g.node_config_ids.size();
  return {reinterpret_cast<const char*>(g.node_config_packed.data() + k * nc), nc * sizeof(uint64_t)};
}

}  // namespace

ConfigSource source_of(const ProcessedGraph& graph, Kind kind) {
  ConfigSource s;
  s.kind = kind;
  s.num_configs = graph.num_configs();
  s.slate = [&graph](const std::vector<int64_t>& configs) {
    for (int64_t c : configs)
      if (c < 0 || c >= graph.num_configs())
        throw Error("config " + std::to_string(c) + " out of range", "", graph.collection + ":" + graph.name);
    GraphSlate slate;
    slate.graph = &graph;
    slate.batch_configs = configs;
    slate.configs = configs;
    return slate;
  };
  return s;
}

std::vector<int64_t> first_duplicates(const ConfigSource& source, int64_t read_chunk) {
  std::vector<int64_t> first(static_cast<size_t>(source.num_configs));
  // Rows are copied into the map: a chunk's view may not outlive the chunk.
  std::unordered_map<std::string, int64_t> seen;
  for (int64_t begin = 0; begin < source.num_configs; begin += read_chunk) {
    std::vector<int64_t> configs(static_cast<size_t>(std::min(read_chunk, source.num_configs - begin)));
    std::iota(configs.begin(), configs.end(), begin);
    const GraphSlate slate = source.slate(configs);
    for (size_t s = 0; s < configs.size(); ++s)
      first[static_cast<size_t>(configs[s])] = seen.emplace(std::string(row_of(slate, s, source.kind)), configs[s]).first->second;
  }
  return first;
}

GraphScores score_every_config(RankingModel& model, const ConfigSource& source, int64_t chunk) {
  if (chunk < 1) throw Error("scoring chunk must be at least 1");
  const std::vector<int64_t> first = first_duplicates(source, std::max<int64_t>(chunk, 1024));
  std::vector<int64_t> unique;
  for (int64_t c = 0; c < source.num_configs; ++c)
    if (first[static_cast<size_t>(c)] == c) unique.push_back(c);
  // No autograd state at all (no graph, no version counters): scores only.
  c10::InferenceMode inference;
  model.eval();
  std::vector<double> score(static_cast<size_t>(source.num_configs));
  for (size_t at = 0; at < unique.size(); at += static_cast<size_t>(chunk)) {
    const std::vector<int64_t> part(unique.begin() + static_cast<std::ptrdiff_t>(at),
                                    unique.begin() + static_cast<std::ptrdiff_t>(std::min(unique.size(), at + chunk)));
    const GraphSlate slate = source.slate(part);
    const torch::Tensor s =
        model.forward(make_batch(source.kind, {slate.graph}, {slate.batch_configs})).to(torch::kFloat64).contiguous();
    const double* p = s.data_ptr<double>();
    for (size_t i = 0; i < part.size(); ++i) score[static_cast<size_t>(part[i])] = p[i];
  }
  GraphScores out;
  out.config_index.resize(score.size());
  std::iota(out.config_index.begin(), out.config_index.end(), int64_t{0});
  for (size_t c = 0; c < score.size(); ++c) score[c] = score[static_cast<size_t>(first[c])];
  out.score = std::move(score);
  return out;
}

std::vector<int64_t> ensemble_ranking(const std::vector<GraphScores>& members, EnsembleMethod method,
                                      TileDefault rule, GraphScores* ensembled, double tile_spread) {
  GraphScores e = ensemble_graph(members, method, tile_spread);
  std::vector<int64_t> order = ranked_configs(e, rule);
  if (ensembled) *ensembled = std::move(e);
  return order;
}

}  // namespace tpuperf
