#include "common/graph/prune_rules.h"

#include "common/base/error.h"
#include "common/graph/collection.h"

namespace tpuperf {

namespace {

constexpr const char* kHopsKey = "preprocess.prune_hops";
constexpr const char* kBridgesKey = "preprocess.prune_bridges";

// "<what> <value>" for the collections whose value differs from the most common one, then
// "others <value>" (or the value alone when all agree).
std::string describe_values(const std::map<std::string, int>& values) {
  std::map<int, int> count;
  for (const auto& [id, v] : values) ++count[v];
  int usual = values.empty() ? 0 : values.begin()->second;
  for (const auto& [v, n] : count)
    if (n > count[usual]) usual = v;
  std::string out;
  for (const auto& [id, v] : values)
    if (v != usual) out += id + " " + std::to_string(v) + ", ";
  return out + (out.empty() ? "" : "others ") + std::to_string(usual);
}

}  // namespace

PruneRules::PruneRules(const Config& cfg) {
  for (const Collection& c : Collection::all()) {
    if (c.kind != Kind::Layout) continue;
    const Config own = cfg.for_collection(c.id());
    rules_[c.id()] = {static_cast<int>(own.get_int(kHopsKey)), static_cast<int>(own.get_int(kBridgesKey))};
  }
}

PruneRules PruneRules::saved(const Config& cfg) {
  PruneRules rules(cfg);
  // The bridges' schema default is not how settings without the key pruned.
  for (auto& [id, rule] : rules.rules_)
    if (!cfg.for_collection(id).given(kBridgesKey)) rule.bridges = 0;
  return rules;
}

PruneRule PruneRules::of(const std::string& collection) const {
  const auto own = rules_.find(Collection::parse(collection).id());
  if (own == rules_.end()) throw Error(collection + " graphs are not pruned (not a layout collection)");
  return own->second;
}

std::string PruneRules::describe() const {
  std::map<std::string, int> hops, bridges;
  for (const auto& [id, rule] : rules_) {
    hops[id] = rule.hops;
    bridges[id] = rule.bridges;
  }
  return "hops: " + describe_values(hops) + "; bridges through " + describe_values(bridges) + " pruned nodes";
}

}  // namespace tpuperf
