#include "common/graph/collection.h"

#include <algorithm>
#include <filesystem>

#include "common/base/error.h"

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

std::optional<TreePlace> place_in_tree(const std::string& file) {
  const std::filesystem::path split_dir = std::filesystem::path(file).parent_path();
  const std::string split = split_dir.filename().string();
  if (std::find(kSplits.begin(), kSplits.end(), split) == kSplits.end()) return std::nullopt;
  // Walks up from the split directory: <kind>/<source>[/<search>]/<split>.
  const std::filesystem::path up1 = split_dir.parent_path(), up2 = up1.parent_path(), up3 = up2.parent_path();
  for (const Collection& c : Collection::all()) {
    const bool tile = c.kind == Kind::Tile && up2.filename() == "tile" && up1.filename() == c.source;
    const bool layout = c.kind == Kind::Layout && up3.filename() == "layout" && up2.filename() == c.source &&
                        up1.filename() == c.search;
    if (tile || layout) return TreePlace{c, split};
  }
  return std::nullopt;
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
