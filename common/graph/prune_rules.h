// How each layout collection's graphs are pruned (common/graph/prune.h): by preprocess.prune_hops,
// unless preprocess.prune_hops_by_collection names the collection, and bridged through
// preprocess.prune_bridges pruned nodes. Read in one place for the preprocessing (which
// prunes) and the ranker and tpuperf-inspect (which must prune a graph as a run's data was
// pruned).
#pragma once

#include <map>
#include <string>

#include "common/config/config.h"
#include "common/graph/prune.h"

namespace tpuperf {

class PruneRules {
 public:
  // The rules a config asks for. Throws Error naming the key (and the file or --set that
  // gave it) on a bad entry or a tile collection in the list.
  explicit PruneRules(const Config& cfg);
  // The rules saved settings (a manifest's, a run's preprocess_settings.yaml) were applied
  // with. Settings saved before a key existed lack it, and their data was pruned as
  // without it: no bridges, and every collection by preprocess.prune_hops.
  static PruneRules saved(const Config& cfg);

  PruneRule of(const std::string& collection) const;
  // "hops: layout:xla:default 2, others 1; bridges through 3 pruned nodes", for logs.
  std::string describe() const;

 private:
  int hops_;
  int bridges_;
  std::map<std::string, int> hops_by_collection_;
};

}  // namespace tpuperf
