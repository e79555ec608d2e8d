#include "trainer/eval/ensemble.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "common/base/error.h"
#include "common/graph/collection.h"
#include "common/metrics/metrics.h"

namespace tpuperf {

namespace {

const std::vector<std::pair<std::string, EnsembleMethod>>& method_names() {
  static const std::vector<std::pair<std::string, EnsembleMethod>> names = {
      {"mean_z", EnsembleMethod::MeanZ},
      {"mean_rank", EnsembleMethod::MeanRank},
      {"mean_raw", EnsembleMethod::MeanRaw},
  };
  return names;
}

std::string graph_label(const GraphScores& g) {
  return g.collection + " " + g.split + " graph " + g.name;
}

std::string model_label(const GraphScores& g) {
  return g.model < 0 ? std::string("the ensemble") : "model " + std::to_string(g.model);
}

// Where each config index of `first` sits: the alignment every other member is mapped to.
std::map<int64_t, size_t> config_positions(const GraphScores& first) {
  std::map<int64_t, size_t> pos;
  for (size_t i = 0; i < first.config_index.size(); ++i)
    if (!pos.emplace(first.config_index[i], i).second)
      throw Error(model_label(first) + " scores config " + std::to_string(first.config_index[i]) +
                      " twice",
                  "", graph_label(first));
  return pos;
}

// The member's scores reordered to the positions of members[0]; throws when the sets differ.
std::vector<double> aligned_scores(const GraphScores& m, const GraphScores& first,
                                   const std::map<int64_t, size_t>& pos) {
  if (m.collection != first.collection || m.split != first.split || m.name != first.name)
    throw Error("cannot ensemble different graphs: " + graph_label(m) + " with " +
                graph_label(first));
  if (m.config_index.size() != m.score.size())
    throw Error(model_label(m) + " has " + std::to_string(m.config_index.size()) +
                    " config indices but " + std::to_string(m.score.size()) + " scores",
                "", graph_label(m));
  if (m.config_index.size() != first.config_index.size())
    throw Error("config index sets differ: " + model_label(m) + " scores " +
                    std::to_string(m.config_index.size()) + " configs, " + model_label(first) +
                    " " + std::to_string(first.config_index.size()),
                "", graph_label(m));
  std::vector<double> out(m.score.size());
  std::vector<bool> seen(m.score.size(), false);
  for (size_t i = 0; i < m.score.size(); ++i) {
    auto it = pos.find(m.config_index[i]);
    if (it == pos.end() || seen[it->second])
      throw Error("config index sets differ: " + model_label(m) + " scores config " +
                      std::to_string(m.config_index[i]) +
                      (it == pos.end() ? " which " + model_label(first) + " does not"
                                       : std::string(" twice")),
                  "", graph_label(m));
    if (std::isnan(m.score[i]))
      throw Error(model_label(m) + " gives config " + std::to_string(m.config_index[i]) +
                      " a NaN score",
                  "", graph_label(m));
    seen[it->second] = true;
    out[it->second] = m.score[i];
  }
  return out;
}

std::vector<double> transform(const std::vector<double>& s, EnsembleMethod method) {
  switch (method) {
    case EnsembleMethod::MeanZ: return standardize(s);
    case EnsembleMethod::MeanRank: return average_ranks(s);
    case EnsembleMethod::MeanRaw: return s;
  }
  return s;
}

}  // namespace

EnsembleMethod parse_ensemble_method(const std::string& name) {
  std::string choices;
  for (const auto& [n, m] : method_names()) {
    if (n == name) return m;
    choices += (choices.empty() ? "" : ", ") + n;
  }
  throw Error("unknown ensemble method '" + name + "' (choices: " + choices + ")", "",
              "output.ensemble");
}

std::string ensemble_method_name(EnsembleMethod method) {
  for (const auto& [n, m] : method_names())
    if (m == method) return n;
  return "?";
}

std::vector<double> standardize(const std::vector<double>& scores) {
  std::vector<double> z(scores.size(), 0.0);
  if (scores.empty()) return z;
  const double n = static_cast<double>(scores.size());
  const double mean = std::accumulate(scores.begin(), scores.end(), 0.0) / n;
  double var = 0.0;
  for (double s : scores) var += (s - mean) * (s - mean);
  const double sd = std::sqrt(var / n);
  // A constant (or numerically constant) model carries no ranking information: zeros.
  if (!(sd > 1e-12 * std::max(1.0, std::fabs(mean)))) return z;
  for (size_t i = 0; i < z.size(); ++i) z[i] = (scores[i] - mean) / sd;
  return z;
}

std::vector<double> average_ranks(const std::vector<double>& scores) {
  const std::vector<int64_t> order = ranking_from_scores(scores);
  std::vector<double> rank(scores.size());
  size_t i = 0;
  while (i < order.size()) {
    size_t j = i + 1;
    while (j < order.size() && scores[static_cast<size_t>(order[j])] ==
                                   scores[static_cast<size_t>(order[i])])
      ++j;
    const double avg = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;  // ranks i+1..j
    for (size_t k = i; k < j; ++k) rank[static_cast<size_t>(order[k])] = avg;
    i = j;
  }
  return rank;
}

GraphScores ensemble_graph(const std::vector<GraphScores>& members, EnsembleMethod method,
                           double tile_spread) {
  if (members.empty()) throw Error("ensemble of no models");
  const GraphScores& first = members.front();
  const auto pos = config_positions(first);
  GraphScores out;
  out.collection = first.collection;
  out.split = first.split;
  out.name = first.name;
  out.model = -1;
  out.config_index = first.config_index;
  out.score.assign(first.config_index.size(), 0.0);
  const bool spread = tile_spread != 0 && Collection::parse(first.collection).kind == Kind::Tile;
  std::vector<double> squares(spread ? out.score.size() : 0, 0.0);
  for (const auto& m : members) {
    const std::vector<double> t = transform(aligned_scores(m, first, pos), method);
    for (size_t i = 0; i < t.size(); ++i) out.score[i] += t[i];
    for (size_t i = 0; i < squares.size(); ++i) squares[i] += t[i] * t[i];
  }
  const double n = static_cast<double>(members.size());
  for (double& s : out.score) s /= n;
  for (size_t i = 0; i < squares.size(); ++i)
    out.score[i] += tile_spread * std::sqrt(std::max(0.0, squares[i] / n - out.score[i] * out.score[i]));
  return out;
}

std::vector<GraphScores> ensemble_all(const std::vector<GraphScores>& scores,
                                      EnsembleMethod method, double tile_spread) {
  // graph -> model -> that model's scores of the graph. A model's scores may arrive in
  // several records (configs split across the ranks of a fold group): they are joined,
  // and a config scored twice by one model is caught by ensemble_graph.
  std::map<std::tuple<std::string, std::string, std::string>, std::map<int, GraphScores>> groups;
  for (const auto& g : scores) {
    auto& slot = groups[{g.collection, g.split, g.name}];
    auto [it, fresh] = slot.emplace(g.model, g);
    if (fresh) continue;
    it->second.config_index.insert(it->second.config_index.end(), g.config_index.begin(),
                                   g.config_index.end());
    it->second.score.insert(it->second.score.end(), g.score.begin(), g.score.end());
  }
  std::vector<GraphScores> out;
  out.reserve(groups.size());
  for (auto& [key, by_model] : groups) {
    std::vector<GraphScores> members;  // fold order: independent of the gather order
    for (auto& [model, g] : by_model) members.push_back(std::move(g));
    out.push_back(ensemble_graph(members, method, tile_spread));
  }
  return out;
}

}  // namespace tpuperf
