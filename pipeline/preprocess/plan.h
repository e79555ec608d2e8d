// What a preprocessing run has to do, decided by rank 0 from the raw tree, the settings
// and the previous manifest, then broadcast so that every rank works from the same plan.
//
// The unit of work is one (collection, split). A unit is redone when its source files
// changed (added, removed, or different size/mtime and content hash), when the settings
// that shape its shards changed, when one of its shards is missing or has the wrong size,
// or with --force. Valid and test units do not depend on the train split (shards hold
// untransformed features; the transform lives in the manifest), so changing a valid file
// rewrites only that unit. Changing only the transform settings refits the transform from
// the stored train statistics without reading any source.
#pragma once

#include <mpi.h>

#include <set>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/shards/manifest.h"
#include "pipeline/preprocess/sources.h"

namespace tpuperf {

// Digests of the setting groups, so a changed setting redoes only what it shapes.
struct SettingsDigest {
  std::string graphs;     // prune_hops, dedup, compression, shard_mb: every shard
  std::string folds;      // folds, seed: train shards (they hold each graph's fold)
  std::string transform;  // log_columns, drop_constant_columns: the fitted transform only
  std::string text() const;  // "graphs=..;folds=..;transform=.." as stored in the manifest
  static SettingsDigest of(const Config& cfg);
  static SettingsDigest parse(const std::string& text);  // empty fields if unparsable
};

struct Plan {
  int generation = 1;                // shards written now are named with it
  std::vector<SourceFile> sources;   // every current source file
  std::vector<uint8_t> process;      // per source: read it in this run
  std::set<std::string> redo_units;  // "collection|split" of units rewritten
  std::set<std::string> refit;       // collections whose transform is (re)fitted
  std::vector<std::string> reasons;  // why, for the log ("layout:xla:random train: 2 files changed")
  bool nothing_to_do() const { return redo_units.empty() && refit.empty(); }
};

std::string unit_key(const std::string& collection, const std::string& split);

// Rank 0: scans, compares with `previous` (nullptr: no usable previous output).
Plan make_plan(const Config& cfg, const std::string& processed_dir, const Manifest* previous,
               bool force);

// Collective: rank 0's plan to every rank of comm.
void broadcast_plan(Plan& plan, int rank, MPI_Comm comm);

}  // namespace tpuperf
