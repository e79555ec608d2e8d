// Scoring a submission against the true runtimes, as the competition does: per graph the
// tile top-5 slowdown score or the layout Kendall tau, averaged per collection, and the
// overall score = mean of the collection scores. Baselines on the same graphs put the
// numbers in context: a random order and, for tile, "compiler default first". Beside each
// score, what an autotuner reads: the top-1, top-5 and top-10 slowdown (common/metrics).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/collection.h"
#include "trainer/eval/submission.h"

namespace tpuperf {

// The measured runtimes of one graph.
struct TruthGraph {
  Collection collection;
  std::string name;                  // file stem
  std::vector<int64_t> runtimes;     // config_runtime
  std::vector<int64_t> normalizers;  // config_runtime_normalizers (tile); empty for layout
  std::string id() const { return collection.submission_id(name); }
};

// Reads the runtimes of every graph of `split` below dir: dir/truth/<collection>/<split>/
// when dir/truth exists (a tpuperf-synth output root), else dir/<collection>/<split>/
// (a truth tree itself, or a raw npz root for the train/valid splits). Collections without
// a directory are skipped; no graph at all, a missing key or all-zero runtimes (the hidden
// runtimes of a public test split) is an Error naming the file.
std::vector<TruthGraph> load_truth(const std::string& dir, const std::string& split = "test");

// A permutation of 0..n-1 (best first) as scores: score[config] = position. Throws Error
// unless it is a permutation of exactly 0..n-1.
std::vector<double> positions_as_scores(const std::vector<int64_t>& permutation, size_t n);

// Score of one submission row. Tile: top-5 slowdown score; the row must hold at least
// min(5, c) distinct configs in range. Layout: Kendall tau between positions and runtimes
// (NaN when the runtimes are constant); the row must be a permutation. Throws Error
// naming the graph when the row is invalid.
double score_row(const std::vector<int64_t>& row, const TruthGraph& truth);

// Top-1, top-5 and top-10 slowdown of one row (kSlowdownKs), NaN where the row is too short
// to tell (a tile row of 5 configs has no top-10). Throws Error naming the graph when the
// row holds a config out of range.
using Slowdowns = std::array<double, 3>;
Slowdowns row_slowdowns(const std::vector<int64_t>& row, const TruthGraph& truth);

// Mean score of `draws` uniformly random orders (NaN draws skipped; NaN if all are).
// Deterministic: the draws depend only on seed and truth.id().
double random_baseline(const TruthGraph& truth, uint64_t seed, int draws = 5);
// The same draws' mean score and mean slowdowns, each draw scored once.
struct RandomOrders {
  double score = 0.0;
  Slowdowns slowdown{};
};
RandomOrders random_orders(const TruthGraph& truth, uint64_t seed, int draws = 5);
// Tile: the score of config 0 first, then the rest in index order. Layout: not defined,
// NaN ("n/a").
double default_first_baseline(const TruthGraph& truth);
// The slowdowns of that order (tile); NaN for layout.
Slowdowns default_first_slowdowns(const TruthGraph& truth);

// One graph's score and slowdowns, as the submission ranks it.
struct GraphScore {
  std::string id;
  std::string collection;
  double score = 0.0;
  Slowdowns slowdown{};
};

struct CollectionScore {
  std::string collection;
  Kind kind = Kind::Tile;
  int64_t graphs = 0;            // truth graphs of the collection
  int64_t skipped = 0;           // graphs whose score is NaN (not averaged)
  double score = 0.0;            // mean over the finite graph scores
  double random = 0.0;           // random baseline on the same graphs
  double default_first = 0.0;    // NaN for layout
  // Means over the graphs where each is defined (NaN where none is).
  Slowdowns slowdown{}, random_slowdown{}, default_first_slowdown{};
};

struct SubmissionScore {
  std::vector<CollectionScore> collections;  // sorted by collection id
  double overall = 0.0;          // mean of the collection scores
  double overall_random = 0.0;
  double overall_default_first = 0.0;  // NaN unless defined for every collection present
  std::vector<std::string> extra_ids;  // submission rows for graphs not in the truth
  std::vector<GraphScore> graphs;      // in truth order
};

struct ScoreOptions {
  uint64_t seed = 0;       // random baseline seed
  int random_draws = 5;
};

// Every truth graph must have a row (Error listing the missing ones otherwise); rows of
// graphs not in the truth are reported in extra_ids and ignored.
SubmissionScore score_submission(const Submission& submission,
                                 const std::vector<TruthGraph>& truth,
                                 const ScoreOptions& options = {});

}  // namespace tpuperf
