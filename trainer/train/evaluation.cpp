#include "trainer/train/evaluation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "common/metrics/metrics.h"
#include "trainer/eval/submission.h"
#include "trainer/predict/graph_scoring.h"
#include "trainer/train/distributed.h"
#include "trainer/fit/sampler.h"

namespace tpuperf {

double ScoreSum::mean() const { return count > 0 ? sum / count : std::nan(""); }

std::array<double, 3> ScoreSum::slowdowns() const {
  std::array<double, 3> out{};
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = slowdown_count[k] > 0 ? slowdown_sum[k] / slowdown_count[k] : std::nan("");
  return out;
}

double ScoreSum::own_slowdown_5() const { return own5_count > 0 ? own5_sum / own5_count : std::nan(""); }

std::vector<double> ScoreSum::to_vector() const {
  std::vector<double> v = {sum, count};
  for (size_t k = 0; k < slowdown_sum.size(); ++k) v.push_back(slowdown_sum[k]), v.push_back(slowdown_count[k]);
  v.push_back(own5_sum), v.push_back(own5_count);
  return v;
}

ScoreSum ScoreSum::from_vector(const std::vector<double>& v) {
  ScoreSum s;
  s.sum = v.at(0), s.count = v.at(1);
  for (size_t k = 0; k < s.slowdown_sum.size(); ++k) s.slowdown_sum[k] = v.at(2 + 2 * k), s.slowdown_count[k] = v.at(3 + 2 * k);
  const size_t own = 2 + 2 * s.slowdown_sum.size();
  s.own5_sum = v.at(own), s.own5_count = v.at(own + 1);
  return s;
}

namespace {

// The graph's scored configs as positions 0..n-1 of its scores, best first as a
// submission ranks them: with keep >= 0 (tile, keep_default) tile_top_k's first
// kTileTopConfigs, config 0 at position `keep` kept among them, then the rest by score.
std::vector<int64_t> predicted_positions(const std::vector<double>& score, int64_t keep) {
  std::vector<int64_t> order(score.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] < score[b]; });
  if (keep < 0) return order;
  std::vector<int64_t> top = tile_top_k(score, kTileTopConfigs, keep);
  std::vector<bool> taken(score.size(), false);
  for (int64_t c : top) taken[static_cast<size_t>(c)] = true;
  for (int64_t c : order)
    if (!taken[static_cast<size_t>(c)]) top.push_back(c);
  return top;
}

void add_slowdowns(ScoreSum& out, const std::vector<int64_t>& order, const std::vector<double>& y) {
  for (size_t k = 0; k < std::size(kSlowdownKs); ++k) {
    const double v = top_k_slowdown(order, y, kSlowdownKs[k]);
    if (std::isfinite(v)) out.slowdown_sum[k] += v, out.slowdown_count[k] += 1;
  }
}

}  // namespace

ScoreSum metric_of(const GraphSet& set, const std::vector<GraphScores>& scores, bool keep_default) {
  std::map<std::string, int64_t> index;
  for (int64_t i = 0; i < set.size(); ++i) index[set.entry(i).name] = i;
  ScoreSum out;
  for (const auto& gs : scores) {
    const ProcessedGraph& g = set.graph(index.at(gs.name));
    std::vector<int64_t> rt;
    for (int64_t c : gs.config_index) rt.push_back(g.config_runtime[c]);
    double v;
    std::vector<double> y;
    int64_t keep = -1;
    if (set.kind() == Kind::Tile) {
      std::vector<int64_t> norm;
      for (int64_t c : gs.config_index) norm.push_back(g.config_runtime_normalizers[c]);
      const auto at = std::find(gs.config_index.begin(), gs.config_index.end(), 0);
      keep = keep_default && at != gs.config_index.end() ? at - gs.config_index.begin() : -1;
      y = tile_targets(rt, norm);
      v = tile_slowdown_score_from_scores(gs.score, y, kTileTopConfigs, keep);
    } else {
      v = layout_kendall_score(gs.score, rt);
      y.assign(rt.begin(), rt.end());
    }
    if (std::isfinite(v)) out.sum += v, out.count += 1;
    add_slowdowns(out, predicted_positions(gs.score, keep), y);
    // The model's own top 5: its scores' order, config 0 not put in.
    const double own5 = top_k_slowdown(predicted_positions(gs.score, -1), y, kTileTopConfigs);
    if (std::isfinite(own5)) out.own5_sum += own5, out.own5_count += 1;
  }
  return out;
}

ConfigSource source_of(const GraphSet& set, int64_t i) {
  ConfigSource src;
  src.kind = set.kind();
  src.num_configs = set.graph(i).num_configs();
  src.slate = [&set, i](const std::vector<int64_t>& configs) { return set.slate(i, configs); };
  return src;
}

std::vector<GraphScores> score_set(const TrainSettings& settings, RankingModel& model, const GraphSet& set,
                                   const std::string& split, int fold, bool all_configs, MPI_Comm group) {
  const TrainSettings& s = settings.of(set.collection());  // with the collection's own train.*
  int rank = 0, size = 1;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &size);
  if (all_configs) {  // prediction: the one prediction path of trainer/predict/graph_scoring.h
    std::vector<GraphScores> out;
    for (int64_t i = rank; i < set.size(); i += size) {
      GraphScores gs = score_every_config(model, source_of(set, i), s.eval_chunk(set.kind()));
      gs.collection = set.collection();
      gs.split = split;
      gs.name = set.entry(i).name;
      gs.model = fold;
      out.push_back(std::move(gs));
    }
    model.train();
    return out;
  }
  std::vector<std::string> keys;
  for (int64_t i = 0; i < set.size(); ++i) keys.push_back(set.key(i));
  auto plans = make_eval_plans(set.kind(), set.num_configs(), keys, s.eval_max_configs, s.eval_chunk(set.kind()), s.seed);
  // No autograd state at all (no graph, no version counters): scores only.
  c10::InferenceMode inference;
  model.eval();
  std::vector<GraphScores> out;
  for (size_t p = 0; p < plans.size(); ++p) {
    if (static_cast<int>(p % size) != rank) continue;
    const EvalGraphPlan& plan = plans[p];
    GraphScores gs;
    gs.collection = set.collection();
    gs.split = split;
    gs.name = set.entry(plan.graph).name;
    gs.model = fold;
    for (const auto& c : plan.chunks) {
      GraphSlate slate = set.slate(plan.graph, c);
      Batch batch = make_batch(set.kind(), {slate.graph}, {slate.batch_configs});
      torch::Tensor scores = model.forward(batch).to(torch::kFloat64).contiguous();
      const double* p0 = scores.data_ptr<double>();
      gs.config_index.insert(gs.config_index.end(), slate.configs.begin(), slate.configs.end());
      gs.score.insert(gs.score.end(), p0, p0 + slate.configs.size());
    }
    out.push_back(std::move(gs));
  }
  model.train();
  return out;
}

ScoreSum group_metric(const TrainSettings& s, RankingModel& model, const GraphSet* set, const std::string& split,
                      int fold, MPI_Comm group) {
  if (!set || set->size() == 0) return {};
  const ScoreSum local = metric_of(*set, score_set(s, model, *set, split, fold, false, group), s.tile_keep_default);
  std::vector<double> v = local.to_vector();
  allreduce_doubles(v, group);
  return ScoreSum::from_vector(v);
}

}  // namespace tpuperf
