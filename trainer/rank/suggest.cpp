#include "trainer/rank/suggest.h"

#include <cmath>
#include <string_view>
#include <unordered_set>

#include "common/base/error.h"

namespace tpuperf {

namespace {

std::string_view row_bytes(const ConfigRows& rows, int64_t c) {
  return {reinterpret_cast<const char*>(rows.row(c)), static_cast<size_t>(rows.width) * sizeof(float)};
}

// Candidates that may be suggested: not excluded, not a copy of an excluded config, and the
// first of identical candidates (measuring one measures its copies).
std::vector<char> eligible(const ConfigRows& rows, const std::vector<int64_t>& exclude) {
  const int64_t n = rows.size();
  std::unordered_set<std::string_view> measured, seen;
  for (int64_t c : exclude) measured.insert(row_bytes(rows, c));
  std::vector<char> ok(static_cast<size_t>(n), 0);
  for (int64_t c = 0; c < n; ++c) {
    const std::string_view b = row_bytes(rows, c);
    ok[static_cast<size_t>(c)] = !measured.count(b) && seen.insert(b).second;
  }
  return ok;
}

// The columns whose value differs between some candidates: similarity is the share of
// these that two configs have in common.
std::vector<int64_t> varying_columns(const ConfigRows& rows) {
  std::vector<int64_t> cols;
  for (int64_t j = 0; j < rows.width; ++j)
    for (int64_t c = 1; c < rows.size(); ++c)
      if (rows.row(c)[j] != rows.row(0)[j]) {
        cols.push_back(j);
        break;
      }
  return cols;
}

}  // namespace

void check_suggest_options(const SuggestOptions& options, int64_t candidates, const std::string& graph) {
  if (options.count < 1) throw Error("must be at least 1, is " + std::to_string(options.count), graph, "count");
  if (!(options.exploration >= 0) || !std::isfinite(options.exploration))
    throw Error("must be finite and >= 0", graph, "exploration");
  if (!(options.diversity >= 0) || !std::isfinite(options.diversity))
    throw Error("must be finite and >= 0", graph, "diversity");
  for (int64_t c : options.exclude)
    if (c < 0 || c >= candidates)
      throw Error("index " + std::to_string(c) + " is not one of the " + std::to_string(candidates) + " candidates",
                  graph, "exclude");
}

Suggestion suggest_configs(const std::vector<double>& score, const std::vector<double>& spread, const ConfigRows& rows,
                           const SuggestOptions& options, int64_t first) {
  const int64_t n = rows.size();
  if (static_cast<int64_t>(score.size()) != n || static_cast<int64_t>(spread.size()) != n)
    throw Error(std::to_string(score.size()) + " scores and " + std::to_string(spread.size()) + " spreads for " +
                std::to_string(n) + " candidates");
  // Scores in units of their spread over the candidates, so that the weights mean the same
  // on every graph.
  double mean = 0, ss = 0;
  for (double s : score) mean += s / static_cast<double>(n);
  for (double s : score) ss += (s - mean) * (s - mean);
  const double sd = n > 1 && ss > 0 ? std::sqrt(ss / static_cast<double>(n)) : 1.0;
  std::vector<char> ok = eligible(rows, options.exclude);
  const std::vector<int64_t> cols = varying_columns(rows);
  std::vector<double> similarity(static_cast<size_t>(n), 0.0);  // to the closest config picked so far
  Suggestion out;
  // Adds candidate `pick` to the batch; the others' similarity to the batch follows.
  auto take = [&](int64_t pick) {
    ok[static_cast<size_t>(pick)] = 0;
    out.configs.push_back(pick);
    out.score.push_back((score[pick] - mean) / sd);
    out.uncertainty.push_back(spread[pick] / sd);
    for (int64_t c = 0; c < n && !cols.empty(); ++c) {
      if (!ok[static_cast<size_t>(c)]) continue;
      int64_t same = 0;
      for (int64_t j : cols) same += rows.row(c)[j] == rows.row(pick)[j];
      similarity[static_cast<size_t>(c)] =
          std::max(similarity[static_cast<size_t>(c)], static_cast<double>(same) / static_cast<double>(cols.size()));
    }
  };
  if (first >= 0 && first < n && ok[static_cast<size_t>(first)] && options.count > 0) take(first);
  while (static_cast<int64_t>(out.configs.size()) < options.count) {
    int64_t best = -1;
    double best_value = 0;
    for (int64_t c = 0; c < n; ++c) {
      if (!ok[static_cast<size_t>(c)]) continue;
      const double value = ((score[c] - mean) - options.exploration * spread[c]) / sd +
                           options.diversity * similarity[static_cast<size_t>(c)];
      if (best < 0 || value < best_value) best = c, best_value = value;  // ties: the lower index
    }
    if (best < 0) break;  // every candidate is measured or picked
    take(best);
  }
  return out;
}

}  // namespace tpuperf
