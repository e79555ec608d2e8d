#include "trainer/eval/scoring.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include "common/base/error.h"
#include "common/metrics/metrics.h"
#include "common/formats/npz_reader.h"
#include "common/base/random.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();


std::vector<int64_t> random_permutation(size_t n, SplitMix64& rng) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), int64_t{0});
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
  return p;
}

TruthGraph read_truth_file(const Collection& coll, const fs::path& file) {
  TruthGraph t;
  t.collection = coll;
  t.name = file.stem().string();
  NpzReader npz(file.string());
  t.runtimes = npz.read("config_runtime").to_int64();
  if (coll.kind == Kind::Tile) t.normalizers = npz.read("config_runtime_normalizers").to_int64();
  if (t.runtimes.empty()) throw Error("no configs", file.string(), "config_runtime");
  if (std::all_of(t.runtimes.begin(), t.runtimes.end(), [](int64_t r) { return r == 0; }))
    throw Error("runtimes are all zero: hidden test runtimes? (use the truth files)",
                file.string(), "config_runtime");
  if (coll.kind == Kind::Tile && t.normalizers.size() != t.runtimes.size())
    throw Error(std::to_string(t.normalizers.size()) + " normalizers for " +
                    std::to_string(t.runtimes.size()) + " runtimes",
                file.string(), "config_runtime_normalizers");
  return t;
}

std::string list_some(const std::vector<std::string>& ids, size_t max_shown) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < max_shown; ++i) out += (i ? ", " : "") + ids[i];
  if (ids.size() > max_shown) out += " and " + std::to_string(ids.size() - max_shown) + " more";
  return out;
}

// The targets the collection's metric compares: runtime / normalizer for tile, runtime for
// layout.
std::vector<double> targets_of(const TruthGraph& t) {
  if (t.collection.kind == Kind::Tile) return tile_targets(t.runtimes, t.normalizers);
  return std::vector<double>(t.runtimes.begin(), t.runtimes.end());
}

// Per-k means of slowdowns, NaN skipped (a ScoreAverager per k, one collection each).
class SlowdownMeans {
 public:
  void add(const std::string& collection, const Slowdowns& s) {
    for (size_t i = 0; i < s.size(); ++i) by_k_[i].add(collection, s[i]);
  }
  Slowdowns mean(const std::string& collection) const {
    Slowdowns out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = by_k_[i].mean(collection);
    return out;
  }

 private:
  std::array<ScoreAverager, 3> by_k_;
};

double tile_score_of(const std::vector<int64_t>& row, const TruthGraph& t) {
  return tile_slowdown_score(row, t.runtimes, t.normalizers, kTileTopConfigs);
}

double layout_score_of(const std::vector<int64_t>& row, const TruthGraph& t) {
  return layout_kendall_score(positions_as_scores(row, t.runtimes.size()), t.runtimes);
}

}  // namespace

std::vector<TruthGraph> load_truth(const std::string& dir, const std::string& split) {
  const fs::path root = fs::is_directory(fs::path(dir) / "truth") ? fs::path(dir) / "truth"
                                                                   : fs::path(dir);
  if (!fs::is_directory(root)) throw Error("truth directory not found", dir);
  std::vector<TruthGraph> out;
  for (const Collection& coll : Collection::all()) {
    const fs::path sdir = coll.split_dir(root.string(), split);
    if (!fs::is_directory(sdir)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(sdir))
      if (e.is_regular_file() && e.path().extension() == ".npz") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) out.push_back(read_truth_file(coll, f));
  }
  if (out.empty())
    throw Error("no " + split + " truth files below " + root.string() +
                    " (expected <collection>/" + split + "/*.npz, e.g. tile/xla/" + split + ")",
                dir);
  return out;
}

std::vector<double> positions_as_scores(const std::vector<int64_t>& permutation, size_t n) {
  if (permutation.size() != n)
    throw Error("a layout row must rank all " + std::to_string(n) + " configs, this one ranks " +
                std::to_string(permutation.size()));
  std::vector<double> scores(n, kNaN);
  for (size_t pos = 0; pos < n; ++pos) {
    const int64_t c = permutation[pos];
    if (c < 0 || c >= static_cast<int64_t>(n))
      throw Error("config " + std::to_string(c) + " out of range [0, " + std::to_string(n) + ")");
    if (!std::isnan(scores[static_cast<size_t>(c)]))
      throw Error("config " + std::to_string(c) + " ranked twice");
    scores[static_cast<size_t>(c)] = static_cast<double>(pos);
  }
  return scores;
}

double score_row(const std::vector<int64_t>& row, const TruthGraph& truth) {
  try {
    if (truth.collection.kind == Kind::Layout) return layout_score_of(row, truth);
    const size_t need = std::min(truth.runtimes.size(), static_cast<size_t>(kTileTopConfigs));
    if (row.size() < need)
      throw Error("a tile row needs at least " + std::to_string(need) + " configs, this one has " +
                  std::to_string(row.size()));
    return tile_score_of(row, truth);
  } catch (Error& e) {
    throw e.with_key(truth.id());
  }
}

Slowdowns row_slowdowns(const std::vector<int64_t>& row, const TruthGraph& truth) {
  static_assert(std::size(kSlowdownKs) == std::tuple_size<Slowdowns>::value);
  try {
    const std::vector<double> y = targets_of(truth);
    Slowdowns out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = top_k_slowdown(row, y, kSlowdownKs[i]);
    return out;
  } catch (Error& e) {
    throw e.with_key(truth.id());
  }
}

namespace {

std::vector<int64_t> default_first_order(const TruthGraph& truth) {
  std::vector<int64_t> row(truth.runtimes.size());
  std::iota(row.begin(), row.end(), int64_t{0});
  return row;
}

}  // namespace

RandomOrders random_orders(const TruthGraph& truth, uint64_t seed, int draws) {
  // Each draw is scored once for the score and the slowdowns; NaN values are skipped.
  SplitMix64 rng(mix_seed(seed, truth.id()));
  std::array<double, 4> sum{};
  std::array<int, 4> finite{};
  for (int d = 0; d < draws; ++d) {
    const std::vector<int64_t> row = random_permutation(truth.runtimes.size(), rng);
    const Slowdowns s = row_slowdowns(row, truth);
    const std::array<double, 4> v = {score_row(row, truth), s[0], s[1], s[2]};
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isnan(v[i])) sum[i] += v[i], ++finite[i];
  }
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = finite[i] > 0 ? sum[i] / finite[i] : kNaN;
  return {sum[0], {sum[1], sum[2], sum[3]}};
}

double random_baseline(const TruthGraph& truth, uint64_t seed, int draws) {
  return random_orders(truth, seed, draws).score;
}

double default_first_baseline(const TruthGraph& truth) {
  if (truth.collection.kind == Kind::Layout) return kNaN;
  return score_row(default_first_order(truth), truth);
}

Slowdowns default_first_slowdowns(const TruthGraph& truth) {
  if (truth.collection.kind == Kind::Layout) return {kNaN, kNaN, kNaN};
  return row_slowdowns(default_first_order(truth), truth);
}

SubmissionScore score_submission(const Submission& submission,
                                 const std::vector<TruthGraph>& truth,
                                 const ScoreOptions& options) {
  std::vector<std::string> missing;
  std::map<std::string, bool> known;
  for (const auto& t : truth) {
    known[t.id()] = true;
    if (!submission.count(t.id())) missing.push_back(t.id());
  }
  if (!missing.empty())
    throw Error("submission lacks " + std::to_string(missing.size()) + " of " +
                std::to_string(truth.size()) + " graphs: " + list_some(missing, 5));

  SubmissionScore out;
  ScoreAverager scores, randoms, defaults;
  SlowdownMeans slowdowns, random_slow, default_slow;
  std::map<std::string, CollectionScore> per;
  for (const auto& t : truth) {
    const std::string cid = t.collection.id();
    CollectionScore& c = per[cid];
    c.collection = cid;
    c.kind = t.collection.kind;
    ++c.graphs;
    const std::vector<int64_t>& row = submission.at(t.id());
    const GraphScore g{t.id(), cid, score_row(row, t), row_slowdowns(row, t)};
    out.graphs.push_back(g);
    scores.add(cid, g.score);
    slowdowns.add(cid, g.slowdown);
    const RandomOrders random = random_orders(t, options.seed, options.random_draws);
    randoms.add(cid, random.score);
    random_slow.add(cid, random.slowdown);
    if (t.collection.kind == Kind::Tile) {
      defaults.add(cid, default_first_baseline(t));
      default_slow.add(cid, default_first_slowdowns(t));
    }
  }

  bool default_everywhere = true;
  for (auto& [cid, c] : per) {
    c.score = scores.mean(cid);
    c.random = randoms.mean(cid);
    c.default_first = c.kind == Kind::Tile ? defaults.mean(cid) : kNaN;
    c.slowdown = slowdowns.mean(cid);
    c.random_slowdown = random_slow.mean(cid);
    c.default_first_slowdown =
        c.kind == Kind::Tile ? default_slow.mean(cid) : Slowdowns{kNaN, kNaN, kNaN};
    default_everywhere = default_everywhere && c.kind == Kind::Tile;
    for (const auto& s : scores.summary())
      if (s.collection == cid) c.skipped = s.skipped;
    out.collections.push_back(c);
  }
  out.overall = scores.overall();
  out.overall_random = randoms.overall();
  out.overall_default_first = default_everywhere ? defaults.overall() : kNaN;
  for (const auto& [id, row] : submission)
    if (!known.count(id)) out.extra_ids.push_back(id);
  if (!out.extra_ids.empty())
    spdlog::warn("submission has {} rows for graphs not in the truth (ignored): {}",
                 out.extra_ids.size(), list_some(out.extra_ids, 5));
  return out;
}

}  // namespace tpuperf
