// The one metrics module: the competition scores and the ranking helpers that training,
// evaluation and the tests all share, so that every number tpuperf reports is computed
// the same way.
//
// SCORE CONVENTION (whole project): a model's score for a configuration is runtime-like:
// LOWER score = predicted FASTER. Rankings sort scores ascending (best first), and the
// layout metric is kendall_tau(predicted scores, true runtimes), which is +1 for a perfect
// model. Every model, loss, ensemble and submission writer follows this convention.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tpuperf {

// Indices 0..n-1 ordered by ascending score (best first); equal scores keep index order,
// so a ranking is reproducible. NaN scores sort last (by index among themselves).
std::vector<int64_t> ranking_from_scores(const std::vector<double>& scores);
std::vector<int64_t> ranking_from_scores(const std::vector<float>& scores);

// Tile target: y = runtime / normalizer, per config. Throws Error on a size mismatch or a
// normalizer <= 0.
std::vector<double> tile_targets(const std::vector<int64_t>& runtimes,
                                 const std::vector<int64_t>& normalizers);

// Tile score of one graph: 2 - min(y[predicted[0..k-1]]) / min(y), in (-inf, 1]; 1 when
// the fastest config is among the first k predicted. Uses min(k, predicted.size())
// entries. Throws Error on an out-of-range index, an empty y or prediction, or y <= 0.
double tile_slowdown_score(const std::vector<int64_t>& predicted, const std::vector<double>& y,
                           int k = 5);
double tile_slowdown_score(const std::vector<int64_t>& predicted,
                           const std::vector<int64_t>& runtimes,
                           const std::vector<int64_t>& normalizers, int k = 5);
// Tile prediction of one graph: the positions of the k best scores (lower = faster), best
// first; all of them when there are fewer than k. With keep >= 0, the position of config 0
// (the compiler default, the file's first config), that config takes the k-th place when
// the ranking leaves it out. The metric keeps the best of the k, so the graph then never
// scores below its default: a kernel the model misjudges costs no more than not tuning it.
std::vector<int64_t> tile_top_k(const std::vector<double>& scores, int k, int64_t keep = -1);
// Score of tile_top_k(scores, k, keep) against the targets.
double tile_slowdown_score_from_scores(const std::vector<double>& scores,
                                       const std::vector<double>& y, int k = 5,
                                       int64_t keep = -1);

// Top-k slowdown of one graph, what an autotuner that measures the model's k best configs
// gets: the least target among the first k predicted configs over the least target of all
// (1 when the best config is among them; 1.25 when the best of the k is 25% slower). The
// targets are the collection's: y = runtime / normalizer for tile (tile_targets), the
// runtime for layout. NaN when the prediction holds fewer than min(k, y.size()) configs (a
// tile submission row holds 5, so its top-10 is unknown). Throws Error as
// tile_slowdown_score does.
double top_k_slowdown(const std::vector<int64_t>& predicted, const std::vector<double>& y, int k);
// The k the reports give: top-1, top-5 and top-10 slowdown.
constexpr int kSlowdownKs[] = {1, 5, 10};

// Kendall's tau-b with ties in either input, in O(n log n); returns exactly what
// scipy.stats.kendalltau(a, b) (variant 'b') returns, including NaN when n < 2, when
// either input is constant, or when any value is NaN. Throws Error on a size mismatch.
double kendall_tau(const double* a, const double* b, size_t n);
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// Layout score of one graph: kendall_tau(scores, runtimes).
double layout_kendall_score(const std::vector<double>& scores,
                            const std::vector<int64_t>& runtimes);

// Deterministic subset of at most max_configs config indices (sorted ascending) for
// evaluating one graph: the same (seed, graph_key, num_configs, max_configs) gives the same
// subset on every epoch, rank and machine (own PRNG, no std:: distributions). All indices
// when num_configs <= max_configs. graph_key names the graph, e.g. its submission id.
std::vector<int64_t> sample_eval_configs(int64_t num_configs, int64_t max_configs, uint64_t seed,
                                         const std::string& graph_key);
constexpr int64_t kLayoutEvalConfigs = 1000;

// Per-collection averages of per-graph scores. NaN scores (e.g. tau of a constant
// prediction or of constant runtimes) are not averaged but counted as skipped, so they
// show up in reports instead of silently turning a mean into NaN.
struct CollectionSummary {
  std::string collection;
  double mean = 0.0;    // NaN when no finite score was added
  int64_t graphs = 0;   // finite scores averaged
  int64_t skipped = 0;  // NaN scores
};

class ScoreAverager {
 public:
  void add(const std::string& collection, double score);
  // One entry per collection seen, sorted by collection id.
  std::vector<CollectionSummary> summary() const;
  // Mean of the collection means that have at least one finite score (NaN if none):
  // the competition's overall score.
  double overall() const;
  double mean(const std::string& collection) const;  // NaN when unknown

 private:
  struct Acc {
    double sum = 0.0;
    int64_t graphs = 0, skipped = 0;
  };
  std::map<std::string, Acc> acc_;
};

}  // namespace tpuperf
