// Combining the scores that several fold models give one graph into one score per config.
// Raw scores of different models live on different scales (each fold's model drifts
// differently), so the default normalizes each model's scores per graph first.
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/predictions.h"

namespace tpuperf {

enum class EnsembleMethod {
  MeanZ,     // per model: (s - mean) / std over the graph's configs (constant -> 0); average
  MeanRank,  // per model: rank 1..n ascending (ties get their average rank); average
  MeanRaw,   // plain average of the raw scores
};

// "mean_z", "mean_rank", "mean_raw" (config key output.ensemble); anything else throws an
// Error with key output.ensemble that lists the choices.
EnsembleMethod parse_ensemble_method(const std::string& name);
std::string ensemble_method_name(EnsembleMethod method);

// Per-model transforms, exposed for tests and diagnostics. z-scores use the population
// standard deviation (divide by n).
std::vector<double> standardize(const std::vector<double>& scores);
std::vector<double> average_ranks(const std::vector<double>& scores);

// One graph scored by several models -> one GraphScores with model = -1, configs in the
// order of members[0]. Every member must name the same graph and score the same set of
// config indices (in any order) with no NaN; otherwise throws Error naming the graph.
// tile_spread (output.tile_ensemble_spread), for a tile graph only: each config's score is
// the members' mean of the transformed scores plus tile_spread times their standard
// deviation over the members (population), so a config the fold models disagree on ranks
// as if it were as slow as their doubt says: a cautious first pick. 0: the plain mean.
GraphScores ensemble_graph(const std::vector<GraphScores>& members, EnsembleMethod method,
                           double tile_spread = 0);

// Groups all records by graph (collection, split, name) and ensembles each group (members
// in fold order); the result is sorted by (collection, split, name). Several records of
// one model for one graph (its configs split across ranks) are joined first; a config
// scored twice by one model is an Error.
std::vector<GraphScores> ensemble_all(const std::vector<GraphScores>& scores,
                                      EnsembleMethod method, double tile_spread = 0);

}  // namespace tpuperf
