// One source graph -> one ProcessedGraph: dedup (if asked), pruning (layout), re-padding
// of the node features (untransformed: the transform is fitted afterwards and applied when
// graphs are read), int32 re-indexing, base-7 packing of layout configs and provenance.
// Also the statistics pass that precedes fitting the transform.
#pragma once

#include <string>

#include "common/graph.h"
#include "common/processed_graph.h"
#include "pipeline/preprocess/dedup.h"
#include "pipeline/preprocess/features.h"

namespace tpuperf {

// dedup: collapse re-measured configs with `policy` (train/valid); false keeps every
// config in source order (test). Throws Error naming the graph on inconsistent input.
ProcessedGraph to_processed(const TileGraph& g, const std::string& collection,
                            const std::string& split, int fold, DedupPolicy policy, bool dedup);

// prune_hops: see prune.h (-1 keeps every node). The config block is read in place:
// besides the packed output (8 bytes per node and config against 18 in the source) no
// copy of node_config_feat-sized data is made.
ProcessedGraph to_processed(const LayoutGraph& g, const std::string& collection,
                            const std::string& split, int fold, DedupPolicy policy, bool dedup,
                            int prune_hops);

// The first pass: adds the graph's re-padded node features, as the model will see them
// (layout: after pruning with the same hops), to the statistics.
void add_feature_stats(FeatureStats& stats, const TileGraph& g);
void add_feature_stats(FeatureStats& stats, const LayoutGraph& g, int prune_hops);

}  // namespace tpuperf
