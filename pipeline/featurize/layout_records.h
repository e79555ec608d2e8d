// A ModuleTuningData (layout tuning of one module) -> one release layout graph (upstream
// tuning_data_iterator.cc ModuleTuningDataIterator, FeaturizeLayoutConfig;
// /work/notes/featurizer_spec.md §9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/featurize/featurized.h"
#include "pipeline/featurize/record_scan.h"

namespace tpuperf::featurize {

struct LayoutResult {
  std::optional<FeaturizedLayout> module;  // none when the module is rejected
  std::vector<Rejection> rejected;
  RecordCounts counts;
};

// Kept, as upstream: runs with a layout config, no error and a profile, in record order,
// none deduplicated; nothing when no kept run is the default. A run left out for another
// reason than its error (no config, no profile, a config that does not fit the module, a
// layout value outside -1..5) is a Rejection and the module keeps its other runs; a
// damaged record, a module without configurable nodes or one naming a node it does not
// have is rejected whole. `name` is the output file's stem.
LayoutResult featurize_module_tuning_data(const uint8_t* data, size_t size, const TopLevel& top,
                                          const std::string& name, bool extra_features);

}  // namespace tpuperf::featurize
