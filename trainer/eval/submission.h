// submission.csv in the competition's format:
//   ID,TopConfigs
//   layout:nlp:random:0a1b...,3;0;2;1;...     (layout: a full permutation, best first)
//   tile:xla:3ba8...,12;4;7;0;33               (tile: the 5 best, best first)
// Rows sorted by ID.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/eval/predictions.h"

namespace tpuperf {

constexpr int kTileTopConfigs = 5;

// ID -> predicted config indices, best first.
using Submission = std::map<std::string, std::vector<int64_t>>;

// Where a tile graph's ranking puts config 0 (the compiler default, the file's first
// config); layout graphs ignore it.
struct TileDefault {
  // output.tile_keep_default: config 0 among the first kTileTopConfigs (tile_top_k gives it
  // the last of them when the scores leave it out).
  bool keep = false;
  // The run's first pick is config 0 (output.tile_first_pick): it comes first, the other
  // configs follow in score order. The first kTileTopConfigs then hold the same configs as
  // with keep alone; only their order differs.
  bool first = false;
};

// Every scored config of one graph, best first: ascending score, ties by config index;
// tile: config 0 placed by rule when it was scored. Layout requires the scores to cover
// exactly the configs 0..c-1 (Error naming the graph otherwise).
std::vector<int64_t> ranked_configs(const GraphScores& g, TileDefault rule = {});

// The TopConfigs of one graph from its scores: ranked_configs, cut to the first
// kTileTopConfigs for tile (all when fewer); every config for layout.
std::vector<int64_t> top_configs(const GraphScores& g, TileDefault rule = {});

// Rows for the records whose split is "test" (others are ignored, so the ensembled valid
// and test scores can be passed together). Throws Error on an unknown collection or a
// graph given twice.
Submission make_submission(const std::vector<GraphScores>& scores, TileDefault rule = {});
std::string format_submission(const Submission& submission);
// make_submission + format_submission, written atomically.
void write_submission(const std::string& path, const std::vector<GraphScores>& scores, TileDefault rule = {});

// Parses a submission; errors name the file, the line number and what is wrong (bad
// header, missing field, bad or repeated config index, repeated ID).
Submission parse_submission(const std::string& text, const std::string& path);
Submission read_submission(const std::string& path);

}  // namespace tpuperf
