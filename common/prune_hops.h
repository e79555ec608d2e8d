// How far each layout collection's graphs are pruned: preprocess.prune_hops, unless
// preprocess.prune_hops_by_collection names the collection. Read in one place for the
// preprocessing (which prunes) and the ranker (which must prune a new graph as the run's
// data was pruned).
#pragma once

#include <map>
#include <string>

#include "common/config.h"

namespace tpuperf {

class PruneHops {
 public:
  // Throws Error naming the key on a bad entry or a tile collection in the list. Saved
  // settings from before the list existed read it as the schema's default, the empty
  // list: they pruned every collection by preprocess.prune_hops, and so does this.
  explicit PruneHops(const Config& cfg);

  int of(const std::string& collection) const;
  // "layout:xla:default 2, others 1" (or "1"), for logs.
  std::string describe() const;

 private:
  int hops_;
  std::map<std::string, int> by_collection_;
};

}  // namespace tpuperf
