// One graph's configs as a batch takes them (torch-free, so data-side headers can hold it).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/graph/processed_graph.h"

namespace tpuperf {

// What make_batch needs for one graph's slate: make_batch(kind, {slate.graph},
// {slate.batch_configs}). Tile: graph is the stored graph and batch_configs are the source
// indices. Layout: graph is a view holding only the slate's config rows, batch_configs is
// 0..s-1. In both cases configs[s] is the source config index of slot s, to map scores
// back to the graph's configs.
struct GraphSlate {
  const ProcessedGraph* graph = nullptr;
  std::vector<int64_t> batch_configs;
  std::vector<int64_t> configs;
  std::shared_ptr<const ProcessedGraph> view;  // owns *graph for layout
};

}  // namespace tpuperf
