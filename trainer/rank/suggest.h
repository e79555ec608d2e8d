// Which candidates an autotuner should measure next (Ranker::suggest): a greedy batch over
// the predicted costs, the fold models' disagreement and the configs' similarity to those
// already picked. Plain C++ on scores: the models are run by the caller.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tpuperf/ranker.h"
#include "trainer/rank/measured_blend.h"

namespace tpuperf {

// Throws Error naming the option (count, exploration, diversity, exclude) when it is out of
// range for a graph of `candidates` configs.
void check_suggest_options(const SuggestOptions& options, int64_t candidates, const std::string& graph);

// The batch: score and spread per candidate (lower score = predicted faster; spread in the
// score's units), rows the candidates' configs. The returned Suggestion holds the picked
// indices in order, and their score and spread standardized over the candidates. first >= 0:
// that candidate (the run's first pick, config 0) opens the batch when it is not excluded,
// and the rest are picked beside it as beside any other.
Suggestion suggest_configs(const std::vector<double>& score, const std::vector<double>& spread, const ConfigRows& rows,
                           const SuggestOptions& options, int64_t first = -1);

}  // namespace tpuperf
