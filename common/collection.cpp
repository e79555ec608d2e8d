#include "common/collection.h"

#include <algorithm>

#include "common/error.h"

namespace tpuperf {

const std::vector<std::string> kSplits = {"train", "valid", "test"};

std::string Collection::id() const {
  return kind == Kind::Tile ? "tile:" + source : "layout:" + source + ":" + search;
}

std::string Collection::split_dir(const std::string& raw_root, const std::string& split) const {
  if (kind == Kind::Tile) return raw_root + "/tile/" + source + "/" + split;
  return raw_root + "/layout/" + source + "/" + search + "/" + split;
}

std::vector<Collection> Collection::all() {
  return {{Kind::Tile, "xla", ""},
          {Kind::Layout, "xla", "random"},
          {Kind::Layout, "xla", "default"},
          {Kind::Layout, "nlp", "random"},
          {Kind::Layout, "nlp", "default"}};
}

std::string collection_dir(const std::string& collection) {
  std::string d = collection;
  std::replace(d.begin(), d.end(), ':', '_');
  return d;
}

Collection Collection::parse(const std::string& id) {
  std::string valid;
  for (const auto& c : all()) {
    if (c.id() == id) return c;
    valid += (valid.empty() ? "" : ", ") + c.id();
  }
  throw Error("unknown collection '" + id + "' (valid: " + valid + ")");
}

}  // namespace tpuperf
