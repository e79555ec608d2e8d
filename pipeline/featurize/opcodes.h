// HLO opcode ids as the TpuGraphs release numbers them (upstream hlo_opcode.h: 117
// learned opcodes and 2 retired "tombstones", ids 1..120; 0 = an opcode not in the table).
#pragma once

#include <cstdint>
#include <string_view>

namespace tpuperf::featurize {

constexpr int kMaxOpcodeId = 120;

// Exact, case-sensitive match on the full opcode string ("add", "get-tuple-element"); an
// unknown string (e.g. an opcode newer than the release: "topk", "erf") is 0.
uint8_t opcode_id(std::string_view opcode);

// The name of id 1..120 ("trace" and "tuple-select" for the tombstones 97 and 101); ""
// for any other id.
std::string_view opcode_name(int id);

}  // namespace tpuperf::featurize
