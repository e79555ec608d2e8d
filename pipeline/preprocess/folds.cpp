#include "pipeline/preprocess/folds.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "common/error.h"
#include "common/log.h"
#include "common/random.h"

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

std::vector<int> assign_folds(const std::vector<std::string>& names,
                              const std::vector<int64_t>& sizes, int k, uint64_t seed) {
  if (k < 1) throw Error("number of folds must be >= 1, got " + std::to_string(k), "",
                         "preprocess.folds");
  if (names.size() != sizes.size())
    throw Error("assign_folds: " + std::to_string(names.size()) + " names but " +
                std::to_string(sizes.size()) + " sizes");
  // Family totals in a map keyed by name: independent of the input order.
  std::map<std::string, Family> by_name;
  for (size_t i = 0; i < names.size(); ++i) {
    if (sizes[i] < 0) throw Error("negative size of graph '" + names[i] + "'");
    Family& f = by_name[model_family(names[i])];
    f.size += sizes[i];
  }
  std::vector<Family*> order;
  for (auto& [name, f] : by_name) {
    f.name = name;
    f.tie = mix_seed(seed, name);
    order.push_back(&f);
  }
  std::sort(order.begin(), order.end(), [](const Family* a, const Family* b) {
    if (a->size != b->size) return a->size > b->size;
    if (a->tie != b->tie) return a->tie < b->tie;
    return a->name < b->name;
  });
  std::vector<int64_t> load(static_cast<size_t>(k), 0);
  for (Family* f : order) {
    f->fold = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[f->fold] += f->size;
  }
  if (static_cast<int>(by_name.size()) < k)
    spdlog::warn("{} model families for {} folds: {} fold(s) will be empty", by_name.size(), k,
                 k - static_cast<int>(by_name.size()));
  std::vector<int> folds(names.size());
  for (size_t i = 0; i < names.size(); ++i) folds[i] = by_name[model_family(names[i])].fold;
  return folds;
}

}  // namespace tpuperf
