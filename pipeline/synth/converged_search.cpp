#include "pipeline/synth/converged_search.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "pipeline/synth/layout_sampling.h"

namespace tpuperf::synth {

ConvergedParams draw_converged_params(Rng& rng) {
  ConvergedParams q;
  q.bound_share = rng.uniform(0.1, 0.25);
  q.free_share = rng.uniform(0.6, 0.7);
  q.restart_share = rng.uniform(0.03, 0.08);
  q.remeasured_share = rng.uniform(0.30, 0.45);
  q.clean_share = rng.uniform(0.4, 0.6);
  q.sigma = rng.uniform(0.001, 0.002);
  return q;
}

std::vector<int> local_search_best(const LayoutProblem& p) {
  const LayoutCostModel model(p);
  std::vector<int> best(p.options.size(), 0);
  double best_ns = model.runtime_ns(best);
  for (int sweep = 0; sweep < 4; ++sweep) {
    bool improved = false;
    for (size_t g = 0; g < p.options.size(); ++g) {
      const int start = best[g];
      int winner = start;
      for (int o = 0; o < static_cast<int>(p.options[g].size()); ++o) {
        if (o == start) continue;
        best[g] = o;
        const double t = model.runtime_ns(best);
        if (t < best_ns) {
          best_ns = t;
          winner = o;
        }
      }
      best[g] = winner;
      improved = improved || winner != start;
    }
    if (!improved) break;
  }
  return best;
}

int64_t converged_measurement(double true_ns, const ConvergedParams& q, Rng& rng) {
  double slowdown = 0;
  if (!rng.chance(q.clean_share)) slowdown = std::min(0.009, q.sigma * std::fabs(rng.normal()));
  return stored_runtime_ns(true_ns * (1.0 + slowdown));
}

namespace {

// The groups a departure may touch: bound ones (the choice reaches the binary) or
// overridden ones (layout assignment replaces it with the incumbent's).
struct GroupSplit {
  std::vector<uint8_t> bound;  // per group
  std::vector<size_t> bound_groups, free_groups;
};

GroupSplit split_groups(const LayoutProblem& p, const ConvergedParams& q, Rng& rng) {
  GroupSplit s;
  const size_t groups = p.options.size();
  s.bound.assign(groups, 0);
  for (size_t g = 0; g < groups; ++g) s.bound[g] = rng.chance(q.bound_share);
  // At least one of each where there are two groups or more.
  if (groups > 0 && std::count(s.bound.begin(), s.bound.end(), 1) == 0)
    s.bound[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(groups) - 1))] = 1;
  if (groups > 1 && std::count(s.bound.begin(), s.bound.end(), 0) == 0)
    s.bound[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(groups) - 1))] = 0;
  for (size_t g = 0; g < groups; ++g) (s.bound[g] ? s.bound_groups : s.free_groups).push_back(g);
  return s;
}

// Sets group g of choice to one of its options other than the incumbent's.
void depart(const LayoutProblem& p, const std::vector<int>& best, size_t g, std::vector<int>& choice,
            Rng& rng) {
  const int64_t n = static_cast<int64_t>(p.options[g].size());
  if (n < 2) return;
  const int64_t o = rng.randint(0, n - 2);
  choice[g] = static_cast<int>(o >= best[g] ? o + 1 : o);
}

size_t pick(const std::vector<size_t>& from, Rng& rng) {
  return from[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(from.size()) - 1))];
}

}  // namespace

LayoutGraph make_converged_layout_graph(const std::string& name, const LayoutProgram& program,
                                        int64_t num_configs, Rng& rng, std::vector<int64_t>* noise_free) {
  const LayoutProblem& p = program.problem;
  const ConvergedParams q = draw_converged_params(rng);
  const std::vector<int> best = local_search_best(p);
  const size_t groups = p.options.size();
  const GroupSplit split = split_groups(p, q, rng);

  const int64_t c = std::max<int64_t>(1, num_configs);
  const int64_t distinct =
      std::max<int64_t>(1, c - std::llround(static_cast<double>(c) * q.remeasured_share));
  const int64_t defaults = std::min<int64_t>(
      c - distinct, std::max<int64_t>(2, std::llround(static_cast<double>(c) * 0.001)));
  // Distinct configs: the incumbent, the random restarts, then departures from the incumbent.
  std::vector<std::vector<int>> rows = {best};
  std::vector<uint8_t> restart = {0};  // per row: a restart, compiled as requested
  std::set<std::vector<int>> seen = {best};
  const int64_t restarts = std::llround(static_cast<double>(distinct) * q.restart_share);
  for (int64_t i = 0; i < restarts && static_cast<int64_t>(rows.size()) < distinct; ++i) {
    rows.push_back(sample_choice(p, "random", rng));
    restart.push_back(1);
    seen.insert(rows.back());
  }
  int64_t departures_min = 1;  // grows when the configs near the incumbent run out
  while (static_cast<int64_t>(rows.size()) < distinct && groups > 0) {
    std::vector<int> choice;
    for (int attempt = 0; attempt < 20; ++attempt) {
      // Free configs depart on overridden groups only (they run as the incumbent does);
      // the others change at least one bound group.
      const bool free = !split.free_groups.empty() && rng.chance(q.free_share);
      int64_t departures = departures_min;
      while (departures < static_cast<int64_t>(groups) && rng.chance(0.5)) ++departures;
      choice = best;
      for (int64_t k = 0; k < departures; ++k) {
        const size_t g = free ? pick(split.free_groups, rng) : k == 0 ? pick(split.bound_groups, rng)
                                                                      : static_cast<size_t>(rng.randint(0, static_cast<int64_t>(groups) - 1));
        depart(p, best, g, choice, rng);
      }
      if (seen.insert(choice).second) break;
      if (attempt == 19) departures_min = std::min<int64_t>(departures_min + 1, static_cast<int64_t>(groups));
    }
    rows.push_back(std::move(choice));
    restart.push_back(0);
  }
  // Re-measurements: the compiler default a few times, then earlier configs drawn uniformly.
  const int64_t made = static_cast<int64_t>(rows.size());
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (int64_t i = 0; i < defaults; ++i) {
    rows.emplace_back(groups, 0);
    restart.push_back(0);
    order.push_back(rows.size() - 1);
  }
  while (static_cast<int64_t>(order.size()) < c)
    order.push_back(static_cast<size_t>(rng.randint(0, made - 1)));
  rng.shuffle(order);

  LayoutGraph g = start_layout_graph(name, program);
  const LayoutCostModel model(p);
  std::vector<double> true_ns(rows.size());
  std::vector<int> effective(groups);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t k = 0; k < groups; ++k) effective[k] = split.bound[k] || restart[r] ? rows[r][k] : best[k];
    true_ns[r] = model.runtime_ns(effective);
  }
  g.node_config_feat.reserve(order.size() * p.nodes.size() * kLayoutConfigDim);
  for (size_t r : order) {
    append_config_rows(p, rows[r], g.node_config_feat);
    g.config_runtime.push_back(converged_measurement(true_ns[r], q, rng));
    if (noise_free) noise_free->push_back(stored_runtime_ns(true_ns[r]));
  }
  return g;
}

}  // namespace tpuperf::synth
