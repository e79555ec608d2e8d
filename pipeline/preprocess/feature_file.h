// The per-collection feature file "<collection dir>/features-g<gen>.h5": the train
// statistics the transform was fitted on (exact, mergeable sums, see features.h) and the
// fitted transform itself. The statistics let a rerun refit the transform after a change
// of the transform settings without reading any source file; the transform is also in
// the manifest, which is what the trainer reads.
//   /stats_flat   float64 (FeatureStats::kFlatSize)
//   /kept_columns int32, /log1p uint8, /mean float64, /stddev float64
//   attributes: schema_version (int32), collection (string)
// Each non-empty dataset is one chunk with a fletcher32 checksum (files written before
// that are contiguous and still read), so a damaged file is an error, not a silently
// different transform.
#pragma once

#include <string>

#include "common/graph/processed_graph.h"
#include "pipeline/preprocess/features.h"

namespace tpuperf {

constexpr int kFeatureFileSchemaVersion = 1;

// Written under a temporary name and renamed.
void write_feature_file(const std::string& path, const std::string& collection,
                        const FeatureStats& stats, const FeatureTransform& transform);
FeatureStats read_feature_stats(const std::string& path);

}  // namespace tpuperf
