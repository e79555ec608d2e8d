// The five TpuGraphs collections and where their files live in the raw tree:
//   tile:xla             -> <raw>/tile/xla/<split>/
//   layout:<src>:<search> -> <raw>/layout/<src>/<search>/<split>/
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tpuperf {

enum class Kind { Tile, Layout };

struct Collection {
  Kind kind = Kind::Tile;
  std::string source;  // "xla" or "nlp"
  std::string search;  // "random" or "default"; empty for tile

  // "tile:xla", "layout:nlp:random"
  std::string id() const;
  // Directory of one split below the raw root, e.g. "<raw>/layout/nlp/random/train".
  std::string split_dir(const std::string& raw_root, const std::string& split) const;
  // Submission ID of a graph: "<id>:<stem>".
  std::string submission_id(const std::string& stem) const { return id() + ":" + stem; }

  // Parses an id; throws Error naming the bad id and the valid ones.
  static Collection parse(const std::string& id);
  static std::vector<Collection> all();
};

// Where a file sits in a release-style tree: ".../tile/xla/test/x.npz" is tile:xla's test
// split, ".../layout/nlp/random/valid/x.npz" layout:nlp:random's valid split (the inverse
// of split_dir). nullopt when the file's directories do not name a collection and split.
struct TreePlace {
  Collection collection;
  std::string split;
};
std::optional<TreePlace> place_in_tree(const std::string& file);

// Directory of a collection inside a processed_dir or an output dir:
// "layout:xla:random" -> "layout_xla_random".
std::string collection_dir(const std::string& collection);

extern const std::vector<std::string> kSplits;  // train, valid, test

}  // namespace tpuperf
