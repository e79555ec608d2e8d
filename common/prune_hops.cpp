#include "common/prune_hops.h"

#include "common/collection.h"
#include "common/error.h"
#include "common/per_collection.h"

namespace tpuperf {

namespace {

constexpr const char* kHopsKey = "preprocess.prune_hops";
constexpr const char* kListKey = "preprocess.prune_hops_by_collection";

int parse_hops(const std::string& text, const ConfigKey& key) {
  return static_cast<int>(parse_config_int(text, key));
}

}  // namespace

PruneHops::PruneHops(const Config& cfg) : hops_(static_cast<int>(cfg.get_int(kHopsKey))) {
  try {
    by_collection_ = per_collection<int>(cfg.get_list(kListKey), kListKey, "hops", kHopsKey, parse_hops);
    require_layout_collections(by_collection_, kListKey);
  } catch (Error& e) {
    throw e.with_file(cfg.origin(kListKey));  // the config file or --set that gave the list
  }
}

int PruneHops::of(const std::string& collection) const {
  const auto own = by_collection_.find(Collection::parse(collection).id());
  return own != by_collection_.end() ? own->second : hops_;
}

std::string PruneHops::describe() const {
  std::string out;
  for (const auto& [id, hops] : by_collection_) out += id + " " + std::to_string(hops) + ", ";
  return out + (by_collection_.empty() ? "" : "others ") + std::to_string(hops_);
}

}  // namespace tpuperf
