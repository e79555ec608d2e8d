// Collapses re-measured configurations: rows whose config values are identical (tile: the
// 24 floats compared bitwise; layout: the whole nc x 18 block of one config) become one,
// with one runtime chosen by a policy. Hash-based, linear in the number of configs.
// Applied to train/valid only; the caller decides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/graph.h"

namespace tpuperf {

// Runtime kept for a group of identical configs.
enum class DedupPolicy { Min, Mean, First };

// "min" | "mean" | "first"; throws Error naming the key preprocess.dedup otherwise.
DedupPolicy parse_dedup_policy(const std::string& name);
const char* dedup_policy_name(DedupPolicy policy);

struct DedupResult {
  std::vector<int64_t> kept;     // source index of each kept config, first occurrences in order
  std::vector<int64_t> runtime;  // merged runtime of each kept config
  std::vector<int64_t> normalizers;  // tile only: normalizer of the kept row
  int64_t removed = 0;               // source configs minus kept configs
};

// The core: rows of row_bytes bytes each, compared bytewise. runtime has num_rows entries.
// Mean is the rounded integer mean (half away from zero).
DedupResult dedup_rows(const void* rows, size_t row_bytes, int64_t num_rows,
                       const int64_t* runtime, DedupPolicy policy);

DedupResult dedup_tile(const TileGraph& g, DedupPolicy policy);
DedupResult dedup_layout(const LayoutGraph& g, DedupPolicy policy);

// Keeps every config: what test graphs (or dedup switched off) get.
DedupResult identity_dedup(const std::vector<int64_t>& runtime);

}  // namespace tpuperf
