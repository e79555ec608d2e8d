#include "pipeline/featurize/opcodes.h"

#include <string_view>
#include <unordered_map>

namespace tpuperf::featurize {

namespace {

// Index i holds id i + 1, in upstream's order (LEARNED_HLO_OPCODE_LIST with the
// TOMBSTONE_HLO_OPCODE_LIST entries at 97 and 101). Upstream keeps the tombstones in its
// string-to-id map, so "trace" still reads as 97.
constexpr std::string_view kNames[kMaxOpcodeId] = {
    "abs", "add", "add-dependency", "after-all", "all-reduce", "all-to-all", "atan2",
    "batch-norm-grad", "batch-norm-inference", "batch-norm-training", "bitcast",
    "bitcast-convert", "broadcast", "call", "ceil", "cholesky", "clamp",
    "collective-permute", "count-leading-zeros", "compare", "complex", "concatenate",
    "conditional", "constant", "convert", "convolution", "copy", "copy-done", "copy-start",
    "cosine", "custom-call", "divide", "domain", "dot", "dynamic-slice",
    "dynamic-update-slice", "exponential", "exponential-minus-one", "fft", "floor",
    "fusion", "gather", "get-dimension-size", "set-dimension-size", "get-tuple-element",
    "imag", "infeed", "iota", "is-finite", "log", "log-plus-one", "and", "not", "or", "xor",
    "map", "maximum", "minimum", "multiply", "negate", "outfeed", "pad", "parameter",
    "partition-id", "popcnt", "power", "real", "recv", "recv-done", "reduce",
    "reduce-precision", "reduce-window", "remainder", "replica-id", "reshape", "reverse",
    "rng", "rng-get-and-update-state", "rng-bit-generator", "round-nearest-afz", "rsqrt",
    "scatter", "select", "select-and-scatter", "send", "send-done", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "slice", "sort",
    "sqrt", "subtract", "tanh", "trace", "transpose", "triangular-solve", "tuple",
    "tuple-select", "while", "cbrt", "all-gather", "collective-permute-start",
    "collective-permute-done", "logistic", "dynamic-reshape", "all-reduce-start",
    "all-reduce-done", "reduce-scatter", "all-gather-start", "all-gather-done",
    "opt-barrier", "async-start", "async-update", "async-done", "round-nearest-even",
    "stochastic-convert", "tan",
};

const std::unordered_map<std::string_view, uint8_t>& ids_by_name() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string_view, uint8_t>();
    for (int i = 0; i < kMaxOpcodeId; ++i) (*m)[kNames[i]] = static_cast<uint8_t>(i + 1);
    return m;
  }();
  return *map;
}

}  // namespace

uint8_t opcode_id(std::string_view opcode) {
  auto it = ids_by_name().find(opcode);
  return it == ids_by_name().end() ? 0 : it->second;
}

std::string_view opcode_name(int id) { return id >= 1 && id <= kMaxOpcodeId ? kNames[id - 1] : ""; }

}  // namespace tpuperf::featurize
