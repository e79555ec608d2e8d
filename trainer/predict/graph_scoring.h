// The one prediction path: how a trained model scores every config of a graph, and how
// the fold models' scores become one ranking. tpuperf-train --predict-only (for the test
// graphs of a processed tree) and the ranker (tpuperf-rank, the library) both call these,
// so a submission's row and the ranker's order of the same graph agree.
//
// Duplicate configs (byte-identical rows: a re-measured config, or the default repeated)
// are scored once and share that score: a chunk's cross-config attention would otherwise
// give two copies of one config different scores, depending on where they fall.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "trainer/eval/ensemble.h"
#include "trainer/eval/predictions.h"
#include "trainer/eval/submission.h"
#include "trainer/models/graph_slate.h"
#include "trainer/models/registry.h"

namespace tpuperf {

// The configs of one graph, a slate at a time (GraphSet::slate for stored graphs).
struct ConfigSource {
  Kind kind = Kind::Tile;
  int64_t num_configs = 0;
  std::function<GraphSlate(const std::vector<int64_t>& configs)> slate;
};

// Every config of a graph held whole in memory (structure and all config rows).
ConfigSource source_of(const ProcessedGraph& graph, Kind kind);

// Per config, the first config with the same row (itself when unique): rows are read
// `read_chunk` configs at a time. Tile rows are the 24 config features, layout rows the
// packed values of every configurable node.
std::vector<int64_t> first_duplicates(const ConfigSource& source, int64_t read_chunk);

// One model's scores (lower = faster) of every config 0..c-1, in order: the unique configs
// in chunks of `chunk` (in first-occurrence order), duplicates copied. The model is put in
// evaluation mode. Labels (collection, split, name, model) are left for the caller.
GraphScores score_every_config(RankingModel& model, const ConfigSource& source, int64_t chunk);

// The fold models' scores of one graph as one ranking: ensemble_graph over the members
// (same configs), then its configs best first (ranked_configs, config 0 of a tile graph
// placed by `rule`; tile_spread as ensemble_graph's). `ensembled` receives the ensemble's
// scores when given.
std::vector<int64_t> ensemble_ranking(const std::vector<GraphScores>& members, EnsembleMethod method,
                                      TileDefault rule, GraphScores* ensembled = nullptr,
                                      double tile_spread = 0);

}  // namespace tpuperf
