// Cross-validation folds over train graphs, grouped by model family so that no family
// is split between a model's training and validation folds, or graph by graph when the
// families cannot fill the folds (preprocess.fold_by).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpuperf {

// The leading letters of a graph name, lowercased, up to the first non-letter
// ("resnet50.4x4.fp16" -> "resnet", "bert_en_cased_L-12..." -> "bert"). A name that does
// not start with a letter is its own family (the whole name).
std::string model_family(const std::string& name);

// preprocess.fold_by: family (every family in one fold), graph (graphs dealt alone), or
// auto: family when the families fill the folds in balance, else graph.
enum class FoldBy { Auto, Family, Graph };
FoldBy parse_fold_by(const std::string& name);  // Error naming preprocess.fold_by

// Family folds are in balance when every fold gets at least this share of an even split
// (total size / k); below it (too few families, or one family holding most of the data)
// auto assigns graphs instead.
constexpr double kMinFoldShare = 0.5;

struct FoldAssignment {
  std::vector<int> folds;  // per graph, aligned with the names, 0..k-1
  FoldBy rule = FoldBy::Family;  // Family or Graph: the rule applied
  std::string note;        // why auto chose graphs, or what stays empty; "" when all is well
};

// Groups (families, or single graphs) go, largest total size first (ties broken by a
// seeded hash of the group's name, then the name), each to the currently lightest fold
// (lowest index on ties). Deterministic for a seed and independent of the input order.
// With fewer graphs than folds some folds stay empty (said in the note). fold_by family
// with fewer families than k is an Error that names the counts and the way out.
// Throws Error when k < 1, sizes are negative or names and sizes differ in length.
FoldAssignment assign_folds(const std::vector<std::string>& names, const std::vector<int64_t>& sizes, int k,
                            uint64_t seed, FoldBy by = FoldBy::Auto);

}  // namespace tpuperf
