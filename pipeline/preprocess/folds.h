// Cross-validation folds over train graphs, grouped by model family so that no family
// is split between a model's training and validation folds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

// The leading letters of a graph name, lowercased, up to the first non-letter
// ("resnet50.4x4.fp16" -> "resnet", "bert_en_cased_L-12..." -> "bert"). A name that does
// not start with a letter is its own family (the whole name).
std::string model_family(const std::string& name);

// Fold (0..k-1) of each graph, aligned with names. All graphs of a family share a fold;
// families go, largest total size first (ties broken by a seeded hash of the family
// name, then the name), each to the currently lightest fold (lowest index on ties).
// Deterministic for a seed and independent of the input order. With fewer families than
// k some folds stay empty (a warning is logged; the caller decides).
// Throws Error when k < 1, sizes are negative or names and sizes differ in length.
std::vector<int> assign_folds(const std::vector<std::string>& names,
                              const std::vector<int64_t>& sizes, int k, uint64_t seed);

}  // namespace tpuperf
