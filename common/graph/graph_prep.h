// One source graph as the model sees it (a ProcessedGraph): re-measured configs collapsed
// (if asked), layout graphs pruned to the neighbourhood of their configurable nodes, node
// features re-padded (untransformed: the fitted transform is applied when graphs are read),
// int32 re-indexing, base-7 packing of layout configs and provenance. What preprocessing
// stores for every graph, and what a ranker applies to a graph it has never seen.
#pragma once

#include <string>
#include <vector>

#include "common/graph/config_dedup.h"
#include "common/graph/graph.h"
#include "common/graph/processed_graph.h"
#include "common/graph/prune.h"

namespace tpuperf {

// dedup: collapse re-measured configs with `policy` (train/valid); false keeps every
// config in source order (test). Throws Error naming the graph on inconsistent input.
ProcessedGraph to_processed(const TileGraph& g, const std::string& collection,
                            const std::string& split, int fold, DedupPolicy policy, bool dedup);

// prune: see prune.h (hops -1 keeps every node). The config block is read in place:
// besides the packed output (8 bytes per node and config against 18 in the source) no
// copy of node_config_feat-sized data is made.
ProcessedGraph to_processed(const LayoutGraph& g, const std::string& collection,
                            const std::string& split, int fold, DedupPolicy policy, bool dedup,
                            const PruneRule& prune);

// Throws Error unless node_feat holds num_nodes x 140 values and indices fit int32.
void check_node_feat(const GraphBase& g);

}  // namespace tpuperf
