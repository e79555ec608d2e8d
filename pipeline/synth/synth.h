// tpuperf-synth's library: writes a raw tree in exactly the real TpuGraphs format
//   <out>/npz/tile/xla/{train,valid,test}/<name>.npz
//   <out>/npz/layout/{xla,nlp}/{random,default}/{train,valid,test}/<name>.npz
// plus the hidden test runtimes
//   <out>/truth/tile/xla/test/<name>.npz            (config_runtime, config_runtime_normalizers)
//   <out>/truth/layout/<src>/<search>/test/<name>.npz (config_runtime)
// Test files carry zero runtimes (tile: normalizers one) like the release's. With
// noise_free, every file's runtimes without measurement noise as well:
//   <out>/noise_free/<collection>/{train,valid,test}/<name>.npz (config_runtime; tile also
//   config_runtime_normalizers), row for row the file's configs
// so that a model's ranking can be scored against what it should have learned, and the
// noise-free order against the measured runtimes (what a model that learned the cost model
// exactly would score).
// The output depends only on the seed, the scale and the fraction (not on the thread count
// or the collections chosen): every file has its own random stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "pipeline/synth/classic_plan.h"

namespace tpuperf::synth {

struct SynthOptions {
  std::string out_dir;
  uint64_t seed = 1;
  // tiny | small | bench (classic_plan.h), release (release_plan.h), stress | stress-small
  // (stress_plan.h).
  std::string scale = "small";
  // release only: write every (1/fraction)-th file of each split (release_plan.h).
  double fraction = 1.0;
  std::vector<Collection> collections = Collection::all();
  int threads = 1;
  bool noise_free = false;  // also write <out>/noise_free/ (above); the npz tree is the same
};

struct SynthStats {
  int64_t files = 0;  // npz files written, truth files included
  uint64_t bytes = 0;
  double seconds = 0;
};

// Writes the tree; logs one line per collection. Files are written by `threads` workers,
// largest first. Throws Error on any failure.
SynthStats generate_tree(const SynthOptions& options);

// Where a collection's test truth files go: <out>/truth/tile/xla/test, ...
std::string truth_dir(const std::string& out_dir, const Collection& c);
// Where a split's noise-free runtimes go: <out>/noise_free/tile/xla/<split>, ...
std::string noise_free_dir(const std::string& out_dir, const Collection& c, const std::string& split);

}  // namespace tpuperf::synth
