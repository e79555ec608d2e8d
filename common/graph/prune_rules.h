// How each layout collection's graphs are pruned (common/graph/prune.h): by
// preprocess.prune_hops and bridged through preprocess.prune_bridges pruned nodes, each as
// the collection's config reads it (Config::for_collection: its collections: section may
// set its own). Read in one place for the preprocessing (which prunes) and the ranker and
// tpuperf-inspect (which must prune a graph as a run's data was pruned).
#pragma once

#include <map>
#include <string>

#include "common/config/config.h"
#include "common/graph/prune.h"

namespace tpuperf {

class PruneRules {
 public:
  // The rules a config asks for.
  explicit PruneRules(const Config& cfg);
  // The rules saved settings (a manifest's, a run's preprocess_settings.yaml) were applied
  // with. Settings saved before preprocess.prune_bridges existed lack it, and their data
  // was pruned without bridges.
  static PruneRules saved(const Config& cfg);

  PruneRule of(const std::string& collection) const;
  // "hops: layout:xla:default 2, others 1; bridges through 3 pruned nodes", for logs.
  std::string describe() const;

 private:
  std::map<std::string, PruneRule> rules_;  // every layout collection's
};

}  // namespace tpuperf
