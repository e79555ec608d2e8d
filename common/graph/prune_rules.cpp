#include "common/graph/prune_rules.h"

#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/config/per_collection.h"

namespace tpuperf {

namespace {

constexpr const char* kHopsKey = "preprocess.prune_hops";
constexpr const char* kListKey = "preprocess.prune_hops_by_collection";
constexpr const char* kBridgesKey = "preprocess.prune_bridges";

int parse_hops(const std::string& text, const ConfigKey& key) {
  return static_cast<int>(parse_config_int(text, key));
}

}  // namespace

PruneRules::PruneRules(const Config& cfg)
    : hops_(static_cast<int>(cfg.get_int(kHopsKey))), bridges_(static_cast<int>(cfg.get_int(kBridgesKey))) {
  try {
    hops_by_collection_ = per_collection<int>(cfg.get_list(kListKey), kListKey, "hops", kHopsKey, parse_hops);
    require_layout_collections(hops_by_collection_, kListKey);
  } catch (Error& e) {
    throw e.with_file(cfg.origin(kListKey));  // the config file or --set that gave the list
  }
}

PruneRules PruneRules::saved(const Config& cfg) {
  PruneRules rules(cfg);
  // The list's default (empty) is already how settings without it pruned; the bridges'
  // default is not.
  if (!cfg.given(kBridgesKey)) rules.bridges_ = 0;
  return rules;
}

PruneRule PruneRules::of(const std::string& collection) const {
  const auto own = hops_by_collection_.find(Collection::parse(collection).id());
  return {own != hops_by_collection_.end() ? own->second : hops_, bridges_};
}

std::string PruneRules::describe() const {
  std::string hops;
  for (const auto& [id, h] : hops_by_collection_) hops += id + " " + std::to_string(h) + ", ";
  hops += (hops_by_collection_.empty() ? "" : "others ") + std::to_string(hops_);
  return "hops: " + hops + "; bridges through " + std::to_string(bridges_) + " pruned nodes";
}

}  // namespace tpuperf
