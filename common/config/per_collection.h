// Per-collection lists of a config: entries "collection=<value>" (e.g. the steps of
// "layout:nlp:random=40") that replace a key's value for the collections they name. The
// one parser of such lists, for the preprocessing and the trainer alike.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "common/config/config.h"
#include "common/base/error.h"

namespace tpuperf {

namespace per_collection_detail {
inline std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t"), last = s.find_last_not_of(" \t");
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}
}  // namespace per_collection_detail

// Entries "collection=<value_name>" of a per-collection list (spaces around '=' allowed),
// e.g. "layout:nlp:random=40" -> {"layout:nlp:random", 40}. Each value is read and bounded
// as the key `value_key` reads its own (parse_config_int / parse_config_float); Error
// naming the list's key and the entry on a bad one.
template <typename T>
std::map<std::string, T> per_collection(const std::vector<std::string>& entries, const std::string& key,
                                        const std::string& value_name, const std::string& value_key,
                                        T (*parse)(const std::string&, const ConfigKey&)) {
  using per_collection_detail::trimmed;
  const ConfigKey& bounds = config_key(value_key);
  std::map<std::string, T> values;
  for (const auto& entry : entries) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) throw Error("expected collection=" + value_name + ", got '" + entry + "'", "", key);
    std::string id;
    T value{};
    try {
      id = Collection::parse(trimmed(entry.substr(0, eq))).id();
      value = parse(trimmed(entry.substr(eq + 1)), bounds);
    } catch (const Error& e) {
      throw Error(std::string("in '") + entry + "': " + e.reason(), "", key);
    }
    if (!values.emplace(id, value).second) throw Error(id + " is given twice", "", key);
  }
  return values;
}

// Error naming `key` if a per-collection list of layout options names a tile collection.
template <typename T>
void require_layout_collections(const std::map<std::string, T>& values, const std::string& key) {
  for (const auto& entry : values)
    if (Collection::parse(entry.first).kind != Kind::Layout)
      throw Error(entry.first + " is not a layout collection", "", key);
}

}  // namespace tpuperf
