// A TuningData (tile-size tuning: one ModuleTuningData per kernel) -> one release tile
// graph per kept kernel (upstream tuning_data_iterator.cc OpTuningDataIterator;
// /work/notes/featurizer_spec.md §8). Kernels are parsed one by one, so a damaged or
// invalid kernel costs only itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/featurize/featurized.h"
#include "pipeline/featurize/record_scan.h"

namespace tpuperf::featurize {

struct TileResult {
  std::vector<FeaturizedTile> kernels;  // record order
  std::vector<Rejection> rejected;
  RecordCounts counts;
};

// Kept, as upstream: kernels with at least 2 runs, a module and a tile_size_config on
// every run, and a default among the kept runs; runs without error and with a runtime
// above 1 ns. Every kernel or run left out for another reason than a run's error is a
// Rejection; upstream would have failed on the whole file for a missing default, or
// silently dropped the rest. Output names are "<prefix>_<fingerprint as signed hex>".
TileResult featurize_tuning_data(const uint8_t* data, const TopLevel& top, const std::string& prefix,
                                 bool extra_features);

// The fingerprint seen as int64 in lower-case hex, '-' for negative values
// (0xe451d85be28f0b24 -> "-1bae27a41d70f4dc"), as in the release's tile file names.
std::string signed_hex(uint64_t fingerprint);

}  // namespace tpuperf::featurize
