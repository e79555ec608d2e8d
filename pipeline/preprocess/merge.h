// Rank 0's part after every rank has processed its files: the new manifest is the
// previous one's records for the units not redone plus every rank's new records; the
// transforms of the refitted collections are fitted; then the effective config,
// rejected.txt and, last, the manifest are written, and files no manifest refers to any
// more (older generations, temporaries of killed runs) are removed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/shards/manifest.h"
#include "pipeline/preprocess/features.h"
#include "pipeline/preprocess/plan.h"
#include "pipeline/preprocess/settings.h"

namespace tpuperf {

constexpr const char* kRejectedFileName = "rejected.txt";
constexpr const char* kEffectiveConfigName = "preprocess_config.yaml";

// Returns kExitOk, or kExitRejected when the new output has rejected sources.
int finish_on_rank0(const Config& cfg, const PreprocessSettings& s, const Plan& plan,
                    const Manifest* previous, const std::vector<Manifest>& partials,
                    const std::map<std::string, FeatureStats>& stats);

// Removes files below the directories of the manifest's collections that the manifest
// does not reference: shards and feature files of other generations and temporaries.
void collect_garbage(const std::string& processed_dir, const Manifest& m);

}  // namespace tpuperf
