// node_feat_extra (--extra-features): 56 more columns per node from what the records hold
// beyond the release's 140 (proposal of /work/notes/featurizer_spec.md §10). Off by
// default; the release's arrays are the same with or without it. Every value is an int64
// cast to float32 like the main block; -1 marks "not applicable" where 0 is a real value.
//
//  col    feature
//  0-3    fusion_kind one-hot: kLoop, kInput, kOutput, kCustom (all 0 for non-fusions)
//  4      tuple_index of a get-tuple-element, else -1
//  5      number of operands, repeats counted
//  6      number of distinct operands
//  7      number of distinct users (instructions listing this one among their operands)
//  8      number of called computations
//  9      instructions in the directly called computations
//  10     instructions reachable through calls, transitively, each computation once
//  11     1 if in the entry computation (computation id == module entry_computation_id)
//  12     1 if its computation is a fusion computation
//  13     rank (number of shape dimensions)
//  14     output bytes: elements x element bits / 8, rounded up; a tuple sums its leaves;
//         token, opaque and unknown element types count 0
//  15     number of tuple leaves, recursively (0 for an array)
//  16     largest rank among the tuple leaves (-1 for an array)
//  17     number of dynamic dimensions
//  18     number of layout tiles (TPU tiling)
//  19-20  the first tile's last two dimensions, e.g. 8, 128 (0 where there are none)
//  21     layout memory space
//  22-27  operand 0's minor_to_major, first 6, -1 padded (all -1 without operand or layout)
//  28-33  operand 1's minor_to_major, likewise
//  34-35  operands 0 and 1: element count (product of the dimensions), -1 without operand
//  36-37  operands 0 and 1: element type (xla.PrimitiveType number), -1 without operand
//  38-41  convolution output spatial dimensions, first 4, 0-padded (completes 93-106)
//  42-43  dot lhs / rhs first contracting dimension, -1 when none
//  44     number of dot batch dimensions (lhs)
//  45     sum of the interior padding of a pad
//  46-51  comparison direction one-hot: EQ NE LT LE GT GE
//  52     highest operand precision (xla.PrecisionConfig.Precision), 0 when none
//  53     number of control predecessors
//  54     1 for a custom-call with a target
//  55     number of replica groups
// Operands 0 and 1 are the first two entries of operand_ids in record order.
#pragma once

#include <vector>

#include "pipeline/featurize/tuning_records.pb.h"

namespace tpuperf::featurize {

constexpr int kExtraNodeFeatDim = 56;

// num_nodes x 56 in node order. The module must have passed encode_module (every operand
// id resolves).
std::vector<float> extra_node_features(const tpuperf::records::HloModuleProto& module);

}  // namespace tpuperf::featurize
