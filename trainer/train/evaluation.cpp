#include "trainer/train/evaluation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common/metrics/metrics.h"
#include "trainer/eval/submission.h"
#include "trainer/rank/graph_scoring.h"
#include "trainer/train/distributed.h"
#include "trainer/train/sampler.h"

namespace tpuperf {

double ScoreSum::mean() const { return count > 0 ? sum / count : std::nan(""); }

ScoreSum metric_of(const GraphSet& set, const std::vector<GraphScores>& scores, bool keep_default) {
  std::map<std::string, int64_t> index;
  for (int64_t i = 0; i < set.size(); ++i) index[set.entry(i).name] = i;
  ScoreSum out;
  for (const auto& gs : scores) {
    const ProcessedGraph& g = set.graph(index.at(gs.name));
    std::vector<int64_t> rt;
    for (int64_t c : gs.config_index) rt.push_back(g.config_runtime[c]);
    double v;
    if (set.kind() == Kind::Tile) {
      std::vector<int64_t> norm;
      for (int64_t c : gs.config_index) norm.push_back(g.config_runtime_normalizers[c]);
      const auto at = std::find(gs.config_index.begin(), gs.config_index.end(), 0);
      const int64_t keep = keep_default && at != gs.config_index.end() ? at - gs.config_index.begin() : -1;
      v = tile_slowdown_score_from_scores(gs.score, tile_targets(rt, norm), kTileTopConfigs, keep);
    } else {
      v = layout_kendall_score(gs.score, rt);
    }
    if (std::isfinite(v)) out.sum += v, out.count += 1;
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
  if (all_configs) {  // prediction: the one prediction path of trainer/rank/graph_scoring.h
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
  torch::NoGradGuard no_grad;
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
  std::vector<double> v = {local.sum, local.count};
  allreduce_doubles(v, group);
  return {v[0], v[1]};
}

}  // namespace tpuperf
