#include "pipeline/preprocess/folds.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "common/base/error.h"
#include "common/base/log.h"
#include "common/base/random.h"

namespace tpuperf {

namespace {
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

struct Family {
  std::string name;
  int64_t size = 0;
  uint64_t tie = 0;  // seeded tie-break
  int fold = -1;
};
}  // namespace

std::string model_family(const std::string& name) {
  if (name.empty() || !is_letter(name[0])) return name;
  std::string family;
  for (char c : name) {
    if (!is_letter(c)) break;
    family += lower(c);
  }
  return family;
}

FoldBy parse_fold_by(const std::string& name) {
  if (name == "auto") return FoldBy::Auto;
  if (name == "family") return FoldBy::Family;
  if (name == "graph") return FoldBy::Graph;
  throw Error("'" + name + "' is not one of: auto, family, graph", "", "preprocess.fold_by");
}

namespace {

// Groups of graphs dealt to k folds by size: group g's fold, per group in `groups` order.
void deal_groups(std::vector<Family>& groups, int k, std::vector<int64_t>& load) {
  std::vector<Family*> order;
  for (auto& g : groups) order.push_back(&g);
  std::sort(order.begin(), order.end(), [](const Family* a, const Family* b) {
    if (a->size != b->size) return a->size > b->size;
    if (a->tie != b->tie) return a->tie < b->tie;
    return a->name < b->name;
  });
  load.assign(static_cast<size_t>(k), 0);
  for (Family* f : order) {
    f->fold = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[f->fold] += f->size;
  }
}

// Why family folds are out of balance ("" when they are not).
std::string imbalance(const std::vector<int64_t>& load, size_t families, int k) {
  const int64_t total = std::accumulate(load.begin(), load.end(), int64_t{0});
  if (static_cast<int>(families) < k)
    return std::to_string(families) + " model famil" + (families == 1 ? "y" : "ies") + " for " +
           std::to_string(k) + " folds";
  const int64_t lightest = *std::min_element(load.begin(), load.end());
  if (total > 0 && static_cast<double>(lightest) < kMinFoldShare * static_cast<double>(total) / k)
    return "the lightest family fold holds " + std::to_string(100 * lightest / total) + "% of the data (an even split: " +
           std::to_string(100 / k) + "%)";
  return "";
}

}  // namespace

FoldAssignment assign_folds(const std::vector<std::string>& names, const std::vector<int64_t>& sizes, int k,
                            uint64_t seed, FoldBy by) {
  if (k < 1) throw Error("number of folds must be >= 1, got " + std::to_string(k), "", "preprocess.folds");
  if (names.size() != sizes.size())
    throw Error("assign_folds: " + std::to_string(names.size()) + " names but " + std::to_string(sizes.size()) +
                " sizes");
  for (size_t i = 0; i < names.size(); ++i)
    if (sizes[i] < 0) throw Error("negative size of graph '" + names[i] + "'");
  // Groups keyed by name in a map: independent of the input order.
  const auto group = [&](FoldBy rule) {
    std::map<std::string, Family> by_name;
    for (size_t i = 0; i < names.size(); ++i) {
      Family& f = by_name[rule == FoldBy::Graph ? names[i] : model_family(names[i])];
      f.size += sizes[i];
    }
    std::vector<Family> out;
    for (auto& [name, f] : by_name) {
      f.name = name;
      f.tie = mix_seed(seed, name);
      out.push_back(f);
    }
    return out;
  };
  FoldAssignment a;
  if (names.empty()) return a;
  std::vector<Family> groups = group(FoldBy::Family);
  std::vector<int64_t> load;
  deal_groups(groups, k, load);
  a.rule = FoldBy::Family;
  if (by != FoldBy::Family || k == 1) {
    const std::string why = by == FoldBy::Graph ? "" : imbalance(load, groups.size(), k);
    if (by == FoldBy::Graph || (!why.empty() && k > 1)) {
      a.rule = FoldBy::Graph;
      a.note = why.empty() ? "" : why + ": folds assign graphs, not families (preprocess.fold_by=family keeps families)";
      groups = group(FoldBy::Graph);
      deal_groups(groups, k, load);
    }
  } else if (static_cast<int>(groups.size()) < k) {
    throw Error(std::to_string(groups.size()) + " model families cannot fill " + std::to_string(k) +
                    " folds (preprocess.fold_by=graph or auto assigns single graphs; or lower preprocess.folds)",
                "", "preprocess.fold_by");
  }
  const int empty = static_cast<int>(std::count(load.begin(), load.end(), int64_t{0}));
  if (empty > 0 && !names.empty())
    a.note += std::string(a.note.empty() ? "" : "; ") + std::to_string(names.size()) + " train graphs for " +
              std::to_string(k) + " folds: " + std::to_string(empty) +
              " fold(s) hold no graph (their models train on every graph and have no out-of-fold score)";
  std::map<std::string, int> fold_of;
  for (const auto& g : groups) fold_of[g.name] = g.fold;
  for (const auto& n : names) a.folds.push_back(fold_of[a.rule == FoldBy::Graph ? n : model_family(n)]);
  return a;
}

}  // namespace tpuperf
