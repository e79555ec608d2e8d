#include "common/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/base/error.h"
#include "common/base/random.h"

namespace tpuperf {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
std::vector<int64_t> ascending_order(const std::vector<T>& scores) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  // NaN is treated as larger than everything so that a broken score cannot win.
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    const T a = scores[static_cast<size_t>(i)], b = scores[static_cast<size_t>(j)];
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a < b;
  });
  return order;
}

// Pairs among tied runs of a sorted sequence: sum of t(t-1)/2 over runs of equal values.
template <typename Equal>
int64_t tied_pairs(size_t n, Equal equal) {
  int64_t pairs = 0, run = 1;
  for (size_t i = 1; i <= n; ++i) {
    if (i < n && equal(i - 1, i)) {
      ++run;
    } else {
      pairs += run * (run - 1) / 2;
      run = 1;
    }
  }
  return pairs;
}

// Sorts v ascending and returns the number of pairs i < j with v[i] > v[j].
int64_t sort_counting_inversions(std::vector<double>& v) {
  std::vector<double> buf(v.size());
  int64_t inversions = 0;
  for (size_t width = 1; width < v.size(); width *= 2) {
    for (size_t lo = 0; lo < v.size(); lo += 2 * width) {
      const size_t mid = std::min(lo + width, v.size()), hi = std::min(lo + 2 * width, v.size());
      size_t i = lo, j = mid, out = lo;
      while (i < mid && j < hi) {
        if (v[j] < v[i]) {
          inversions += static_cast<int64_t>(mid - i);  // v[j] is below every left rest
          buf[out++] = v[j++];
        } else {
          buf[out++] = v[i++];
        }
      }
      while (i < mid) buf[out++] = v[i++];
      while (j < hi) buf[out++] = v[j++];
    }
    v.swap(buf);
  }
  return inversions;
}


}  // namespace

std::vector<int64_t> ranking_from_scores(const std::vector<double>& scores) {
  return ascending_order(scores);
}

std::vector<int64_t> ranking_from_scores(const std::vector<float>& scores) {
  return ascending_order(scores);
}

std::vector<double> tile_targets(const std::vector<int64_t>& runtimes,
                                 const std::vector<int64_t>& normalizers) {
  if (runtimes.size() != normalizers.size())
    throw Error("tile targets: " + std::to_string(runtimes.size()) + " runtimes but " +
                std::to_string(normalizers.size()) + " normalizers");
  std::vector<double> y(runtimes.size());
  for (size_t i = 0; i < y.size(); ++i) {
    if (normalizers[i] <= 0)
      throw Error("tile targets: normalizer " + std::to_string(normalizers[i]) + " of config " +
                  std::to_string(i) + " is not positive");
    y[i] = static_cast<double>(runtimes[i]) / static_cast<double>(normalizers[i]);
  }
  return y;
}

namespace {

// The least target among the first min(k, predicted.size()) predicted configs, over the
// least target of all: 1 when the best config is among them.
double best_of_first_k_over_best(const std::vector<int64_t>& predicted, const std::vector<double>& y,
                                 int k, const char* what) {
  if (y.empty()) throw Error(std::string(what) + ": no configs");
  if (predicted.empty() || k < 1) throw Error(std::string(what) + ": empty prediction");
  const double best = *std::min_element(y.begin(), y.end());
  if (!(best > 0)) throw Error(std::string(what) + ": targets must be positive");
  const size_t take = std::min(predicted.size(), static_cast<size_t>(k));
  double best_predicted = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < take; ++i) {
    const int64_t c = predicted[i];
    if (c < 0 || c >= static_cast<int64_t>(y.size()))
      throw Error(std::string(what) + ": predicted config " + std::to_string(c) +
                  " out of range [0, " + std::to_string(y.size()) + ")");
    best_predicted = std::min(best_predicted, y[static_cast<size_t>(c)]);
  }
  return best_predicted / best;
}

}  // namespace

double tile_slowdown_score(const std::vector<int64_t>& predicted, const std::vector<double>& y,
                           int k) {
  return 2.0 - best_of_first_k_over_best(predicted, y, k, "tile score");
}

double top_k_slowdown(const std::vector<int64_t>& predicted, const std::vector<double>& y, int k) {
  if (!y.empty() && k >= 1 && predicted.size() < std::min(y.size(), static_cast<size_t>(k)))
    return std::numeric_limits<double>::quiet_NaN();
  return best_of_first_k_over_best(predicted, y, k, "top-k slowdown");
}

double tile_slowdown_score(const std::vector<int64_t>& predicted,
                           const std::vector<int64_t>& runtimes,
                           const std::vector<int64_t>& normalizers, int k) {
  return tile_slowdown_score(predicted, tile_targets(runtimes, normalizers), k);
}

std::vector<int64_t> tile_top_k(const std::vector<double>& scores, int k, int64_t keep) {
  if (k < 1) throw Error("tile top-k: k must be at least 1, not " + std::to_string(k));
  if (keep >= static_cast<int64_t>(scores.size()))
    throw Error("tile top-k: config position " + std::to_string(keep) + " to keep, but only " +
                std::to_string(scores.size()) + " scores");
  std::vector<int64_t> top = ranking_from_scores(scores);
  top.resize(std::min(top.size(), static_cast<size_t>(k)));
  if (keep >= 0 && std::find(top.begin(), top.end(), keep) == top.end()) top.back() = keep;
  return top;
}

double tile_slowdown_score_from_scores(const std::vector<double>& scores,
                                       const std::vector<double>& y, int k, int64_t keep) {
  if (scores.size() != y.size())
    throw Error("tile score: " + std::to_string(scores.size()) + " scores but " +
                std::to_string(y.size()) + " targets");
  return tile_slowdown_score(tile_top_k(scores, k, keep), y, k);
}

// Knight's algorithm: sort by (a, b); then every inversion left in b is a discordant pair,
// and ties are counted on runs of the sorted sequences.
double kendall_tau(const double* a, const double* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::isnan(a[i]) || std::isnan(b[i])) return kNaN;
  if (n < 2) return kNaN;

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t i, size_t j) { return a[i] < a[j] || (a[i] == a[j] && b[i] < b[j]); });
  const int64_t a_ties =
      tied_pairs(n, [&](size_t i, size_t j) { return a[order[i]] == a[order[j]]; });
  const int64_t joint_ties = tied_pairs(n, [&](size_t i, size_t j) {
    return a[order[i]] == a[order[j]] && b[order[i]] == b[order[j]];
  });

  std::vector<double> bs(n);
  for (size_t i = 0; i < n; ++i) bs[i] = b[order[i]];
  const int64_t discordant = sort_counting_inversions(bs);
  const int64_t b_ties = tied_pairs(n, [&](size_t i, size_t j) { return bs[i] == bs[j]; });

  const int64_t total = static_cast<int64_t>(n) * static_cast<int64_t>(n - 1) / 2;
  if (a_ties == total || b_ties == total) return kNaN;
  const int64_t con_minus_dis = total - a_ties - b_ties + joint_ties - 2 * discordant;
  const double tau = static_cast<double>(con_minus_dis) /
                     std::sqrt(static_cast<double>(total - a_ties)) /
                     std::sqrt(static_cast<double>(total - b_ties));
  return std::min(1.0, std::max(-1.0, tau));
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw Error("kendall tau: sizes " + std::to_string(a.size()) + " and " +
                std::to_string(b.size()) + " differ");
  return kendall_tau(a.data(), b.data(), a.size());
}

double layout_kendall_score(const std::vector<double>& scores,
                            const std::vector<int64_t>& runtimes) {
  std::vector<double> r(runtimes.begin(), runtimes.end());
  return kendall_tau(scores, r);
}

std::vector<int64_t> sample_eval_configs(int64_t num_configs, int64_t max_configs, uint64_t seed,
                                         const std::string& graph_key) {
  if (num_configs < 0 || max_configs < 0)
    throw Error("config sampling: negative count", "", graph_key);
  std::vector<int64_t> idx(static_cast<size_t>(num_configs));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  if (num_configs <= max_configs) return idx;

  SplitMix64 rng(mix_seed(seed, graph_key));
  // Partial Fisher-Yates: the first max_configs slots end up a uniform random subset.
  for (int64_t i = 0; i < max_configs; ++i) {
    const auto j =
        i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(num_configs - i)));
    std::swap(idx[static_cast<size_t>(i)], idx[static_cast<size_t>(j)]);
  }
  idx.resize(static_cast<size_t>(max_configs));
  std::sort(idx.begin(), idx.end());
  return idx;
}

void ScoreAverager::add(const std::string& collection, double score) {
  Acc& a = acc_[collection];
  if (std::isnan(score)) {
    ++a.skipped;
  } else {
    a.sum += score;
    ++a.graphs;
  }
}

std::vector<CollectionSummary> ScoreAverager::summary() const {
  std::vector<CollectionSummary> out;
  for (const auto& [id, a] : acc_) {
    CollectionSummary s;
    s.collection = id;
    s.mean = a.graphs > 0 ? a.sum / static_cast<double>(a.graphs) : kNaN;
    s.graphs = a.graphs;
    s.skipped = a.skipped;
    out.push_back(s);
  }
  return out;
}

double ScoreAverager::overall() const {
  double sum = 0.0;
  int64_t count = 0;
  for (const auto& s : summary()) {
    if (s.graphs == 0) continue;
    sum += s.mean;
    ++count;
  }
  return count > 0 ? sum / static_cast<double>(count) : kNaN;
}

double ScoreAverager::mean(const std::string& collection) const {
  auto it = acc_.find(collection);
  if (it == acc_.end() || it->second.graphs == 0) return kNaN;
  return it->second.sum / static_cast<double>(it->second.graphs);
}

}  // namespace tpuperf
