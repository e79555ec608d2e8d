// The release's 140 node features of one HLO instruction and the per-config features
// (tile 24, layout 18), computed as upstream's featurizer did (featurizers.h
// FeaturizeHloInstruction with the op_window_cost / module_layout_cost feature bits;
// column by column in /work/notes/featurizer_spec.md §7-9). Every value is computed in
// int64 (sums and products wrap like upstream's int64_t) and cast to float32 directly.
#pragma once

#include <cstdint>

#include "pipeline/featurize/tuning_records.pb.h"

namespace tpuperf::featurize {

namespace pb = tpuperf::records;

// Writes the 140 features of `inst`, an instruction of `comp`, to row[0..139].
void instruction_features(const pb::HloInstructionProto& inst, const pb::HloComputationProto& comp,
                          float* row);

// Writes the 24 tile config features: kernel, output and input bounds, each the first 6
// values (0-padded), their sum and their product (0 for an empty list, unlike the node
// features). iteration_bounds are not featurized.
void tile_config_features(const pb::TileSizeConfig& config, float* row);

// Column of the element-type one-hot (2..20) for a PrimitiveType value, or -1 when the type
// is not among the 19 the release encodes (S4, U4, F8 types and newer: all-zero one-hot).
int element_type_column(int32_t element_type);

}  // namespace tpuperf::featurize
