// What a run's ranking of a tile graph puts first (output.tile_first_pick), decided once at
// the end of training and kept in the run's directory (first_pick.json) so that the
// submission and every later ranking of the run (tpuperf-rank, the library, Python) agree.
//
// An autotuner that measures one config per kernel runs the first. A model that ranks the
// bulk of the configs well can still pick a config slower than the compiler's default
// (config 0) first: an under-trained tile model ranks bigger tiles faster up to those that
// spill out of the scratchpad (docs/experiments E36). 'auto' compares, on the valid graphs
// (never trained on, scored by the ensemble as test graphs are), the top-1 slowdown of the
// ensemble's first pick with config 0's, and puts config 0 first when it is faster on
// average (E47).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "trainer/eval/submission.h"

namespace tpuperf {

constexpr const char* kFirstPickFile = "first_pick.json";

struct FirstPick {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string setting;         // output.tile_first_pick: auto, model or default
  bool default_first = false;  // the decision: config 0 first
  int64_t valid_graphs = 0;    // the collection's valid graphs (the means skip any without a slowdown)
  double valid_top1_model = kNone, valid_top1_default = kNone;  // mean top-1 slowdowns
  bool keep_default = true;    // output.tile_keep_default when decided

  // Both means measured: auto had evidence to decide on.
  bool measured() const;
};

// The decision for one tile collection. auto keeps the model's first pick without valid
// graphs (or measured slowdowns) to compare on, and when keep_default
// (output.tile_keep_default) is off: that says config 0 is not the compiler default here.
// Throws Error (key output.tile_first_pick) on another setting.
FirstPick choose_first_pick(const std::string& setting, bool keep_default, int64_t valid_graphs,
                            double valid_top1_model, double valid_top1_default);

// Where the rankings of a collection's graphs put config 0: among the top 5 with keep
// (output.tile_keep_default), first where its decision in picks says so; a collection
// without a decision gets `first` = fallback_first.
TileDefault tile_default_of(const std::map<std::string, FirstPick>& picks, const std::string& collection, bool keep,
                            bool fallback_first = false);

// One line for the log and the report: the decision and the evidence it rests on.
std::string describe_first_pick(const std::string& collection, const FirstPick& pick);

// out_dir/first_pick.json, {"<collection>": {"setting", "default_first", "valid_graphs",
// "valid_top1_model", "valid_top1_default", "keep_default"}}, written atomically.
void write_first_picks(const std::string& out_dir, const std::map<std::string, FirstPick>& picks);
// The file's decisions; empty when the run has none (a run of an older version, or one
// that did not finish). Throws Error naming the file when it does not parse.
std::map<std::string, FirstPick> read_first_picks(const std::string& out_dir);

}  // namespace tpuperf
