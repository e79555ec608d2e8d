// Which graphs and configs a trainer rank looks at: training slates and evaluation plans.
//
// Everything is a pure function of (seed, fold, epoch, step) and the graphs' config
// counts: no RNG state is carried from one step to the next, so a run resumed at step t
// draws exactly the slates the uninterrupted run would have drawn, and the draws of a step
// do not depend on how many ranks share it (the union over a group's ranks is the same
// for any group size). Own PRNG (splitmix64), no std:: distributions: the same draws on
// every platform.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/graph/collection.h"

namespace tpuperf {

// Part `part` of `parts` of n items as a contiguous range [first, last): the parts differ
// in size by at most one, earlier parts are the larger ones.
std::pair<int64_t, int64_t> share_of(int64_t n, int part, int parts);

// k distinct values of [0, n), ascending, a uniform random subset determined by `key`;
// all of [0, n) when n <= k. O(k) time and memory (Floyd's algorithm), whatever n.
std::vector<int64_t> sample_without_replacement(int64_t n, int64_t k, uint64_t key);

struct SamplerOptions {
  uint64_t seed = 0;
  int fold = 0;
  int64_t graphs_per_step = 8;  // over the whole fold group
  int64_t slate = 16;           // configs per graph (train.tile_slate / train.layout_slate)
  // A batch's fixed cost (its forward and backward passes' overhead), in the unit of
  // graph cost x slate slot: what splitting a rank's graphs into several batches costs.
  int64_t batch_overhead = 0;
};

// Graphs (slate widths and costs) split into the batches that cost least in all, a batch
// costing overhead + its widest slate (make_batch pads to it) x its graphs' summed cost.
// Runs of the graphs in width order are enough (moving a graph to the narrowest batch
// that fits it never costs more), and graphs of one width can always share a batch, so a
// dynamic program over the distinct widths finds the best split in O(n log n + k^2) for
// k distinct widths (at most the slate size). Returns the batches as ascending indices
// into the inputs, narrowest batch first; *total (optional) receives their summed cost.
std::vector<std::vector<size_t>> batches_by_width(const std::vector<int64_t>& width,
                                                  const std::vector<int64_t>& cost, int64_t overhead,
                                                  int64_t* total = nullptr);

// One graph of a step and its slate.
struct SlateDraw {
  int64_t graph = 0;             // index into the train set (e.g. a GraphSet)
  int64_t position = 0;          // position in the epoch's graph stream
  std::vector<int64_t> configs;  // ascending, distinct, min(slate, num_configs) of them
};

// An epoch visits the train graphs as a stream: a permutation seeded by (seed, fold,
// epoch), followed by fresh permutations (cycle 1, 2, ...) when an epoch has more steps
// than one pass needs. Step t covers stream positions [t * G, (t + 1) * G), G =
// graphs_per_step. Within one pass no graph appears twice, so the ranks of a step draw
// disjoint graphs whenever G is at most the number of graphs and the step does not
// straddle two passes.
//
// The G graphs of a step are dealt to the P ranks of a group by their work, so that no
// rank waits long for the slowest at the gradient all-reduce. A rank trains its share in
// the batches of batches_by_width (see batches()), and its work is their total cost, with
// a graph's cost e.g. its node count (1 each when no costs are given). Graphs go largest
// first (cost x slate size; ties: the lower position), each to the rank whose work would
// then be least (ties: the lower rank); then, while it lowers the busiest rank's work, one
// of its graphs moves to another rank (never its last one) or swaps with one there (in
// order of position and rank: the first change that helps; at most G changes). A draw with
// this search took 0.03 ms for G = 8 and 3 ms for G = 64 (2 ranks). Every rank can compute every
// rank's share, and the union over the ranks is the single-rank step.
//
// Ranks get different numbers of graphs (none when P > G): weight a rank's mean loss over
// its n graphs by n * P / G before the averaging all-reduce so that the step's gradient is
// the mean over its G graphs.
class SlateSampler {
 public:
  // num_configs: per train graph, in the train set's order; every count must be >= 1.
  // cost: per train graph, its work per config (>= 1; empty: 1 each).
  SlateSampler(std::vector<int64_t> num_configs, const SamplerOptions& options,
               std::vector<int64_t> cost = {});

  int64_t num_graphs() const { return static_cast<int64_t>(num_configs_.size()); }
  const SamplerOptions& options() const { return options_; }
  // Steps of one pass over the graphs: ceil(num_graphs / graphs_per_step).
  int64_t steps_per_pass() const;

  // This rank's graphs of a step, in stream order, each with its slate.
  std::vector<SlateDraw> draw(int64_t epoch, int64_t step, int rank, int group_size) const;
  // Draws of one rank split into batches (indices into draws): batches_by_width with the
  // slates' sizes, the graphs' costs and options().batch_overhead.
  std::vector<std::vector<size_t>> batches(const std::vector<SlateDraw>& draws) const;
  // Graph at a stream position of an epoch.
  int64_t graph_at(int64_t epoch, int64_t position) const;
  // Slate of the graph at a stream position: depends on the position too, so a graph seen
  // twice in an epoch gets two different slates.
  std::vector<int64_t> slate_at(int64_t epoch, int64_t position, int64_t graph) const;

 private:
  const std::vector<int64_t>& permutation(int64_t epoch, int64_t cycle) const;

  // The rank of the group that takes each of the step's G positions.
  std::vector<int> deal(int64_t epoch, int64_t step, int group_size) const;
  // The local search after deal's greedy pass (owner: the rank of each of the step's graphs).
  void improve_deal(const std::vector<int64_t>& width, const std::vector<int64_t>& cost, int group_size,
                    std::vector<int>& owner) const;

  std::vector<int64_t> num_configs_;
  SamplerOptions options_;
  std::vector<int64_t> cost_;
  // Cache of the last permutation built: speed only, never affects a draw.
  mutable int64_t cached_epoch_ = -1, cached_cycle_ = -1;
  mutable std::vector<int64_t> cached_perm_;
};

// The configs scored for one evaluation graph, in scoring chunks.
struct EvalGraphPlan {
  int64_t graph = 0;                          // index into the evaluated set
  std::string key;                            // the graph's submission id
  std::vector<int64_t> configs;               // ascending
  std::vector<std::vector<int64_t>> chunks;   // configs in order, at most max_chunk each
};

// Tile: every config. Layout: sample_eval_configs(num_configs, eval_max_configs, seed,
// key), the same subset on every epoch, fold and rank. num_configs and keys are per graph.
std::vector<EvalGraphPlan> make_eval_plans(Kind kind, const std::vector<int64_t>& num_configs,
                                           const std::vector<std::string>& keys,
                                           int64_t eval_max_configs, int64_t max_chunk,
                                           uint64_t seed);

}  // namespace tpuperf
