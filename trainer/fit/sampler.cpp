#include "trainer/fit/sampler.h"

#include <algorithm>
#include <climits>
#include <numeric>
#include <unordered_set>

#include "common/base/error.h"
#include "common/metrics/metrics.h"
#include "common/base/random.h"

namespace tpuperf {

namespace {


// Chains values into one well-mixed key; order matters.
uint64_t mix(uint64_t key, uint64_t value) { return splitmix64(key ^ splitmix64(value)); }

// Domain tags keep permutation and slate streams apart even for equal numbers.
constexpr uint64_t kPermutationTag = 0x7065726dULL;  // "perm"
constexpr uint64_t kSlateTag = 0x736c6174ULL;        // "slat"


uint64_t step_key(const SamplerOptions& o, int64_t epoch, uint64_t tag) {
  uint64_t k = mix(o.seed, tag);
  k = mix(k, static_cast<uint64_t>(static_cast<int64_t>(o.fold)));
  return mix(k, static_cast<uint64_t>(epoch));
}

}  // namespace

std::pair<int64_t, int64_t> share_of(int64_t n, int part, int parts) {
  if (parts < 1 || part < 0 || part >= parts || n < 0)
    throw Error("share_of: part " + std::to_string(part) + " of " + std::to_string(parts) +
                " of " + std::to_string(n));
  const int64_t base = n / parts, extra = n % parts;
  const int64_t first = part * base + std::min<int64_t>(part, extra);
  return {first, first + base + (part < extra ? 1 : 0)};
}

std::vector<int64_t> sample_without_replacement(int64_t n, int64_t k, uint64_t key) {
  if (n < 0 || k < 0) throw Error("sample_without_replacement: negative count");
  std::vector<int64_t> out;
  if (n <= k) {
    out.resize(static_cast<size_t>(n));
    std::iota(out.begin(), out.end(), int64_t{0});
    return out;
  }
  // Floyd: for j = n-k..n-1 pick t in [0, j]; take t, or j if t is taken already.
  SplitMix64 rng(key);
  std::unordered_set<int64_t> taken;
  taken.reserve(static_cast<size_t>(2 * k));
  out.reserve(static_cast<size_t>(k));
  for (int64_t j = n - k; j < n; ++j) {
    const auto t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    const int64_t pick = taken.count(t) ? j : t;
    taken.insert(pick);
    out.push_back(pick);
  }
  std::sort(out.begin(), out.end());
  return out;
}

SlateSampler::SlateSampler(std::vector<int64_t> num_configs, const SamplerOptions& options,
                           std::vector<int64_t> cost)
    : num_configs_(std::move(num_configs)), options_(options), cost_(std::move(cost)) {
  if (cost_.empty()) cost_.assign(num_configs_.size(), 1);
  if (cost_.size() != num_configs_.size())
    throw Error("slate sampler: " + std::to_string(cost_.size()) + " costs for " +
                std::to_string(num_configs_.size()) + " graphs");
  for (int64_t c : cost_)
    if (c < 1) throw Error("slate sampler: a graph's cost must be >= 1, not " + std::to_string(c));
  if (num_configs_.empty()) throw Error("slate sampler: no train graphs");
  if (options_.graphs_per_step < 1 || options_.slate < 1)
    throw Error("slate sampler: graphs_per_step and slate must be >= 1");
  if (options_.batch_overhead < 0) throw Error("slate sampler: batch_overhead must be >= 0");
  for (size_t g = 0; g < num_configs_.size(); ++g)
    if (num_configs_[g] < 1)
      throw Error("slate sampler: train graph " + std::to_string(g) + " has no configs");
}

int64_t SlateSampler::steps_per_pass() const {
  return (num_graphs() + options_.graphs_per_step - 1) / options_.graphs_per_step;
}

const std::vector<int64_t>& SlateSampler::permutation(int64_t epoch, int64_t cycle) const {
  if (epoch == cached_epoch_ && cycle == cached_cycle_) return cached_perm_;
  std::vector<int64_t> perm(num_configs_.size());
  std::iota(perm.begin(), perm.end(), int64_t{0});
  SplitMix64 rng(mix(step_key(options_, epoch, kPermutationTag), static_cast<uint64_t>(cycle)));
  for (size_t i = perm.size(); i > 1; --i)
    std::swap(perm[i - 1], perm[static_cast<size_t>(rng.below(i))]);
  cached_perm_ = std::move(perm);
  cached_epoch_ = epoch;
  cached_cycle_ = cycle;
  return cached_perm_;
}

int64_t SlateSampler::graph_at(int64_t epoch, int64_t position) const {
  if (epoch < 0 || position < 0) throw Error("slate sampler: negative epoch or position");
  const int64_t n = num_graphs();
  return permutation(epoch, position / n)[static_cast<size_t>(position % n)];
}

std::vector<int64_t> SlateSampler::slate_at(int64_t epoch, int64_t position, int64_t graph) const {
  if (graph < 0 || graph >= num_graphs())
    throw Error("slate sampler: graph " + std::to_string(graph) + " out of range");
  const uint64_t key = mix(step_key(options_, epoch, kSlateTag), static_cast<uint64_t>(position));
  return sample_without_replacement(num_configs_[static_cast<size_t>(graph)], options_.slate,
                                    key);
}

namespace {

// The dynamic program of batches_by_width, without building the batches: the deal only
// needs the total, once per graph and rank on every step.
struct WidthPlan {
  std::vector<size_t> order;  // graph indices by width, stable
  std::vector<size_t> start;  // start[k]: where the k-th distinct width begins in order; end sentinel
  std::vector<size_t> cut;    // cut[j]: the first width of the last batch of the first j widths
  int64_t total = 0;
};

WidthPlan plan_by_width(const std::vector<int64_t>& width, const std::vector<int64_t>& cost, int64_t overhead) {
  if (width.size() != cost.size()) throw Error("batches_by_width: widths and costs differ in number");
  WidthPlan p;
  p.order.resize(width.size());
  std::iota(p.order.begin(), p.order.end(), size_t{0});
  std::stable_sort(p.order.begin(), p.order.end(), [&](size_t a, size_t b) { return width[a] < width[b]; });
  // Graphs of one width always share a batch (splitting them saves nothing), so the
  // program runs over the distinct widths; summed[k + 1]: the cost of all graphs up to width k.
  std::vector<int64_t> summed = {0};
  for (size_t j = 0; j < p.order.size(); ++j) {
    if (j == 0 || width[p.order[j]] != width[p.order[j - 1]]) p.start.push_back(j), summed.push_back(summed.back());
    summed.back() += cost[p.order[j]];
  }
  const size_t k = p.start.size();
  p.start.push_back(p.order.size());
  // best[j]: least cost of the first j widths.
  std::vector<int64_t> best(k + 1, 0);
  p.cut.assign(k + 1, 0);
  for (size_t j = 1; j <= k; ++j) {
    best[j] = INT64_MAX;
    const int64_t widest = width[p.order[p.start[j - 1]]];
    for (size_t i = 0; i < j; ++i) {
      const int64_t c = best[i] + overhead + widest * (summed[j] - summed[i]);
      if (c < best[j]) best[j] = c, p.cut[j] = i;
    }
  }
  p.total = best[k];
  return p;
}

}  // namespace

std::vector<std::vector<size_t>> batches_by_width(const std::vector<int64_t>& width,
                                                  const std::vector<int64_t>& cost, int64_t overhead,
                                                  int64_t* total) {
  const WidthPlan p = plan_by_width(width, cost, overhead);
  if (total) *total = p.total;
  std::vector<std::vector<size_t>> out;
  for (size_t j = p.start.size() - 1; j > 0; j = p.cut[j]) {
    std::vector<size_t> run(p.order.begin() + static_cast<std::ptrdiff_t>(p.start[p.cut[j]]),
                            p.order.begin() + static_cast<std::ptrdiff_t>(p.start[j]));
    std::sort(run.begin(), run.end());
    out.push_back(std::move(run));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<int> SlateSampler::deal(int64_t epoch, int64_t step, int group_size) const {
  const int64_t G = options_.graphs_per_step;
  if (group_size == 1) return std::vector<int>(static_cast<size_t>(G), 0);
  std::vector<int64_t> cost(static_cast<size_t>(G)), width(static_cast<size_t>(G)), order(static_cast<size_t>(G));
  for (int64_t j = 0; j < G; ++j) {
    const auto g = static_cast<size_t>(graph_at(epoch, step * G + j));
    cost[static_cast<size_t>(j)] = cost_[g];
    width[static_cast<size_t>(j)] = std::min(num_configs_[g], options_.slate);
  }
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    return cost[ua] * width[ua] > cost[ub] * width[ub];
  });
  // Each rank's widths and costs so far; a rank's work is the cost of its batches.
  std::vector<std::vector<int64_t>> widths(static_cast<size_t>(group_size)), costs(widths.size());
  std::vector<int> owner(static_cast<size_t>(G));
  for (int64_t j : order) {
    const auto uj = static_cast<size_t>(j);
    size_t best = 0;
    int64_t best_work = INT64_MAX;
    for (size_t r = 0; r < widths.size(); ++r) {
      widths[r].push_back(width[uj]);
      costs[r].push_back(cost[uj]);
      const int64_t work = plan_by_width(widths[r], costs[r], options_.batch_overhead).total;
      widths[r].pop_back();
      costs[r].pop_back();
      if (work < best_work) best = r, best_work = work;
    }
    owner[uj] = static_cast<int>(best);
    widths[best].push_back(width[uj]);
    costs[best].push_back(cost[uj]);
  }
  improve_deal(width, cost, group_size, owner);
  return owner;
}

void SlateSampler::improve_deal(const std::vector<int64_t>& width, const std::vector<int64_t>& cost,
                                int group_size, std::vector<int>& owner) const {
  const auto work_of = [&](int r) {
    std::vector<int64_t> w, c;
    for (size_t j = 0; j < owner.size(); ++j)
      if (owner[j] == r) w.push_back(width[j]), c.push_back(cost[j]);
    return plan_by_width(w, c, options_.batch_overhead).total;
  };
  // owner[j] = r, then the larger work of ranks a and b; undone unless it beats `limit`.
  const auto try_change = [&](const std::vector<std::pair<size_t, int>>& moves, int a, int b, int64_t limit) {
    std::vector<int> before;
    for (const auto& [j, r] : moves) before.push_back(owner[j]), owner[j] = r;
    if (std::max(work_of(a), work_of(b)) < limit) return true;
    for (size_t i = 0; i < moves.size(); ++i) owner[moves[i].first] = before[i];
    return false;
  };
  const auto count_of = [&](int r) { return std::count(owner.begin(), owner.end(), r); };
  // At most G changes: a few suffice in practice, and the search is the costly part of a
  // draw (a full pass that finds no change tries every move and swap of the busiest rank).
  for (size_t round = 0; round < owner.size(); ++round) {
    int busiest = 0;
    int64_t most = -1;
    for (int r = 0; r < group_size; ++r)
      if (const int64_t w = work_of(r); w > most) busiest = r, most = w;
    bool improved = false;
    for (size_t j = 0; j < owner.size() && !improved; ++j) {
      if (owner[j] != busiest) continue;
      for (int r = 0; r < group_size && !improved; ++r) {
        if (r == busiest) continue;
        if (count_of(busiest) > 1) improved = try_change({{j, r}}, busiest, r, most);
        for (size_t k = 0; k < owner.size() && !improved; ++k)
          if (owner[k] == r) improved = try_change({{j, r}, {k, busiest}}, busiest, r, most);
      }
    }
    if (!improved) return;
  }
}

std::vector<std::vector<size_t>> SlateSampler::batches(const std::vector<SlateDraw>& draws) const {
  std::vector<int64_t> width, cost;
  for (const SlateDraw& d : draws) {
    width.push_back(static_cast<int64_t>(d.configs.size()));
    cost.push_back(cost_[static_cast<size_t>(d.graph)]);
  }
  return batches_by_width(width, cost, options_.batch_overhead);
}

std::vector<SlateDraw> SlateSampler::draw(int64_t epoch, int64_t step, int rank,
                                          int group_size) const {
  if (step < 0) throw Error("slate sampler: negative step");
  if (group_size < 1 || rank < 0 || rank >= group_size)
    throw Error("slate sampler: rank " + std::to_string(rank) + " of a group of " + std::to_string(group_size));
  const std::vector<int> owner = deal(epoch, step, group_size);
  std::vector<SlateDraw> out;
  for (int64_t j = 0; j < options_.graphs_per_step; ++j) {
    if (owner[static_cast<size_t>(j)] != rank) continue;
    SlateDraw d;
    d.position = step * options_.graphs_per_step + j;
    d.graph = graph_at(epoch, d.position);
    d.configs = slate_at(epoch, d.position, d.graph);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<EvalGraphPlan> make_eval_plans(Kind kind, const std::vector<int64_t>& num_configs,
                                           const std::vector<std::string>& keys,
                                           int64_t eval_max_configs, int64_t max_chunk,
                                           uint64_t seed) {
  if (num_configs.size() != keys.size())
    throw Error("eval plans: " + std::to_string(num_configs.size()) + " config counts but " +
                std::to_string(keys.size()) + " keys");
  if (max_chunk < 1) throw Error("eval plans: chunk size must be >= 1");
  std::vector<EvalGraphPlan> plans(num_configs.size());
  for (size_t g = 0; g < num_configs.size(); ++g) {
    EvalGraphPlan& p = plans[g];
    p.graph = static_cast<int64_t>(g);
    p.key = keys[g];
    const int64_t n = num_configs[g];
    if (kind == Kind::Layout) {
      p.configs = sample_eval_configs(n, eval_max_configs, seed, p.key);
    } else {
      p.configs.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
      std::iota(p.configs.begin(), p.configs.end(), int64_t{0});
    }
    for (size_t at = 0; at < p.configs.size(); at += static_cast<size_t>(max_chunk)) {
      const size_t end = std::min(p.configs.size(), at + static_cast<size_t>(max_chunk));
      p.chunks.emplace_back(p.configs.begin() + static_cast<std::ptrdiff_t>(at),
                            p.configs.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  return plans;
}

}  // namespace tpuperf
