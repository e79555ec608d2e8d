// The slate sampler (training draws, the deal of a step's graphs to ranks, batches by
// slate width, the cost model's batch overhead) and evaluation plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "common/base/error.h"
#include "common/metrics/metrics.h"
#include "trainer/train/cost_model.h"
#include "trainer/fit/sampler.h"

namespace tpuperf {
namespace {

std::vector<int64_t> config_counts() {
  std::vector<int64_t> c;
  for (int g = 0; g < 23; ++g) c.push_back(g % 5 == 0 ? 3 : 10 + 7 * g);
  c[7] = 100000;  // a layout-sized graph
  return c;
}

SamplerOptions options(int fold = 1) {
  SamplerOptions o;
  o.seed = 42;
  o.fold = fold;
  o.graphs_per_step = 6;
  o.slate = 8;
  return o;
}

bool same(const std::vector<SlateDraw>& a, const std::vector<SlateDraw>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].graph != b[i].graph || a[i].position != b[i].position || a[i].configs != b[i].configs)
      return false;
  return true;
}

TEST(ShareOf, PartitionsEvenly) {
  for (int64_t n : {0, 1, 5, 6, 7, 100})
    for (int p : {1, 2, 3, 8}) {
      int64_t next = 0;
      for (int r = 0; r < p; ++r) {
        auto [first, last] = share_of(n, r, p);
        EXPECT_EQ(first, next);
        EXPECT_TRUE(last - first == n / p || last - first == n / p + 1);
        next = last;
      }
      EXPECT_EQ(next, n);
    }
  EXPECT_THROW(share_of(5, 2, 2), Error);
}

TEST(Sampler, WithoutReplacementIsDistinctSortedAndUniform) {
  EXPECT_EQ(sample_without_replacement(4, 8, 1), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(sample_without_replacement(4, 4, 1), (std::vector<int64_t>{0, 1, 2, 3}));
  const auto big = sample_without_replacement(100000, 16, 99);
  ASSERT_EQ(big.size(), 16u);
  EXPECT_TRUE(std::is_sorted(big.begin(), big.end()));
  EXPECT_EQ(std::set<int64_t>(big.begin(), big.end()).size(), 16u);
  EXPECT_GE(big.front(), 0);
  EXPECT_LT(big.back(), 100000);
  EXPECT_EQ(big, sample_without_replacement(100000, 16, 99));
  EXPECT_NE(big, sample_without_replacement(100000, 16, 100));
  // Each of 10 values is picked with probability 3/10; 20000 draws put the frequency
  // within +-0.02 of it far beyond any reasonable doubt (sd 0.0032).
  std::vector<int> hits(10, 0);
  const int trials = 20000;
  for (int t = 0; t < trials; ++t) {
    const auto s = sample_without_replacement(10, 3, static_cast<uint64_t>(t) * 7919);
    ASSERT_EQ(s.size(), 3u);
    ASSERT_EQ(std::set<int64_t>(s.begin(), s.end()).size(), 3u);
    for (int64_t v : s) ++hits[static_cast<size_t>(v)];
  }
  for (int v = 0; v < 10; ++v) EXPECT_NEAR(hits[static_cast<size_t>(v)] / double(trials), 0.3, 0.02) << v;
}

TEST(Sampler, IsDeterministicAndSlatesAreValid) {
  const auto counts = config_counts();
  SlateSampler a(counts, options()), b(counts, options());
  EXPECT_EQ(a.steps_per_pass(), 4);  // ceil(23 / 6)
  for (int64_t step = 0; step < 5; ++step) {
    const auto d = a.draw(0, step, 0, 1);
    EXPECT_TRUE(same(d, b.draw(0, step, 0, 1)));
    ASSERT_EQ(d.size(), 6u);
    for (const SlateDraw& x : d) {
      const int64_t n = counts[static_cast<size_t>(x.graph)];
      EXPECT_EQ(static_cast<int64_t>(x.configs.size()), std::min<int64_t>(n, 8));
      EXPECT_TRUE(std::is_sorted(x.configs.begin(), x.configs.end()));
      EXPECT_EQ(std::set<int64_t>(x.configs.begin(), x.configs.end()).size(), x.configs.size());
      EXPECT_GE(x.configs.front(), 0);
      EXPECT_LT(x.configs.back(), n);
    }
  }
  // Other epochs, folds and seeds draw differently.
  EXPECT_FALSE(same(a.draw(0, 0, 0, 1), a.draw(1, 0, 0, 1)));
  EXPECT_FALSE(same(a.draw(0, 0, 0, 1), SlateSampler(counts, options(2)).draw(0, 0, 0, 1)));
  SamplerOptions o = options();
  o.seed = 43;
  EXPECT_FALSE(same(a.draw(0, 0, 0, 1), SlateSampler(counts, o).draw(0, 0, 0, 1)));
}

TEST(Sampler, OnePassVisitsEveryGraphOnce) {
  const auto counts = config_counts();
  SlateSampler s(counts, options());
  std::vector<int> seen(counts.size(), 0);
  for (int64_t p = 0; p < static_cast<int64_t>(counts.size()); ++p) ++seen[static_cast<size_t>(s.graph_at(3, p))];
  for (int v : seen) EXPECT_EQ(v, 1);
  // The next pass is another permutation of all graphs.
  std::fill(seen.begin(), seen.end(), 0);
  bool differs = false;
  for (int64_t p = 0; p < 23; ++p) {
    ++seen[static_cast<size_t>(s.graph_at(3, 23 + p))];
    differs |= s.graph_at(3, 23 + p) != s.graph_at(3, p);
  }
  for (int v : seen) EXPECT_EQ(v, 1);
  EXPECT_TRUE(differs);
}

TEST(Sampler, RanksDrawDisjointSharesOfTheGroupStep) {
  const auto counts = config_counts();
  SlateSampler s(counts, options());
  for (int p : {2, 3, 4}) {
    for (int64_t step = 0; step < 3; ++step) {  // steps inside the first pass
      std::vector<SlateDraw> joined;
      std::set<int64_t> graphs;
      for (int r = 0; r < p; ++r) {
        const auto mine = s.draw(2, step, r, p);
        EXPECT_FALSE(mine.empty()) << "rank " << r << " of " << p << " idle with 6 graphs to deal";
        for (const SlateDraw& d : mine) {
          EXPECT_TRUE(graphs.insert(d.graph).second) << "graph drawn twice in one step";
          joined.push_back(d);
        }
      }
      // The union over ranks is the single-rank step, whatever the group size.
      std::sort(joined.begin(), joined.end(),
                [](const SlateDraw& a, const SlateDraw& b) { return a.position < b.position; });
      EXPECT_TRUE(same(joined, s.draw(2, step, 0, 1))) << p << " ranks, step " << step;
    }
  }
  // More ranks than graphs in a step: the extra ranks draw nothing.
  EXPECT_TRUE(s.draw(0, 0, 7, 8).empty());
  // Equal costs and full slates everywhere: the shares differ by at most one graph,
  // earlier ranks larger.
  SlateSampler full(std::vector<int64_t>(23, 50), options());
  for (int p : {2, 3, 4})
    for (int r = 0; r < p; ++r) {
      const auto [first, last] = share_of(6, r, p);
      EXPECT_EQ(static_cast<int64_t>(full.draw(2, 1, r, p).size()), last - first) << r << " of " << p;
    }
}

// What given batches (indices into width and cost) cost: overhead + widest x summed cost each.
int64_t cost_of(const std::vector<std::vector<size_t>>& batches, const std::vector<int64_t>& width,
                const std::vector<int64_t>& cost, int64_t overhead) {
  int64_t sum = 0;
  for (const auto& b : batches) {
    int64_t widest = 0, c = 0;
    for (size_t i : b) widest = std::max(widest, width[i]), c += cost[i];
    sum += overhead + widest * c;
  }
  return sum;
}

// Least total cost of graphs (width, cost) over every split into batches, by brute force
// (each batch: overhead + widest x summed cost): the independent check of batches_by_width.
int64_t cheapest_split(const std::vector<std::pair<int64_t, int64_t>>& graphs, int64_t overhead) {
  int64_t best = INT64_MAX;
  std::vector<int> batch_of(graphs.size(), 0);
  // Restricted growth strings enumerate every set partition once.
  std::function<void(size_t, int)> visit = [&](size_t i, int used) {
    if (i == graphs.size()) {
      std::vector<int64_t> widest(static_cast<size_t>(used), 0), sum(static_cast<size_t>(used), 0);
      for (size_t k = 0; k < graphs.size(); ++k) {
        auto b = static_cast<size_t>(batch_of[k]);
        widest[b] = std::max(widest[b], graphs[k].first);
        sum[b] += graphs[k].second;
      }
      int64_t total = 0;
      for (size_t b = 0; b < widest.size(); ++b) total += overhead + widest[b] * sum[b];
      best = std::min(best, total);
      return;
    }
    for (int b = 0; b <= used; ++b) {
      batch_of[i] = b;
      visit(i + 1, std::max(used, b + 1));
    }
  };
  if (graphs.empty()) return 0;
  visit(0, 0);
  return best;
}

// A rank's work: its draws' cheapest split into batches.
int64_t batched_work(const std::vector<SlateDraw>& draws, const std::vector<int64_t>& cost, int64_t overhead) {
  std::vector<std::pair<int64_t, int64_t>> graphs;
  for (const auto& d : draws) graphs.emplace_back(d.configs.size(), cost[static_cast<size_t>(d.graph)]);
  return cheapest_split(graphs, overhead);
}

TEST(Sampler, BatchesByWidthFindTheCheapestSplit) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 6;
    const int64_t overhead = static_cast<int64_t>(rng() % 4) * 40;
    std::vector<int64_t> width(n), cost(n);
    std::vector<std::pair<int64_t, int64_t>> graphs;
    for (size_t i = 0; i < n; ++i) {
      width[i] = 1 + static_cast<int64_t>(rng() % 8);
      cost[i] = 1 + static_cast<int64_t>(rng() % 30);
      graphs.emplace_back(width[i], cost[i]);
    }
    int64_t total = -1;
    const auto batches = batches_by_width(width, cost, overhead, &total);
    EXPECT_EQ(total, cheapest_split(graphs, overhead)) << "trial " << trial;
    // The batches partition the graphs, each ascending, and cost what the total says.
    std::vector<int> seen(n, 0);
    for (const auto& b : batches) {
      ASSERT_FALSE(b.empty());
      EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
      for (size_t i : b) ++seen[i];
    }
    EXPECT_EQ(cost_of(batches, width, cost, overhead), total);
    for (int v : seen) EXPECT_EQ(v, 1);
    // Graphs of one width share a batch.
    std::map<int64_t, size_t> batch_of_width;
    for (size_t b = 0; b < batches.size(); ++b)
      for (size_t i : batches[b]) EXPECT_EQ(batch_of_width.emplace(width[i], b).first->second, b);
  }
  // No overhead: each width its own batch; a large one: a single batch.
  EXPECT_EQ(batches_by_width({8, 2, 8, 2}, {5, 5, 5, 5}, 0).size(), 2u);
  EXPECT_EQ(batches_by_width({8, 2, 8, 2}, {5, 5, 5, 5}, 1000).size(), 1u);
  EXPECT_TRUE(batches_by_width({}, {}, 7).empty());
  EXPECT_THROW(batches_by_width({1}, {}, 0), Error);
}

TEST(Sampler, DealsGraphsByBatchedWork) {
  const auto counts = config_counts();  // every 5th graph has 3 configs, the rest >= 8
  std::vector<int64_t> cost(counts.size());
  for (size_t g = 0; g < cost.size(); ++g) cost[g] = 1 + static_cast<int64_t>((g * 37) % 200);
  for (int64_t overhead : {0, 300}) {
    SamplerOptions o = options();
    o.batch_overhead = overhead;
    SlateSampler s(counts, o, cost);
    for (int64_t epoch = 0; epoch < 4; ++epoch)
      for (int64_t step = 0; step < 3; ++step) {
        const auto all = s.draw(epoch, step, 0, 1);
        int64_t alone = 0, largest = 0;
        for (const auto& d : all) {
          const int64_t w = cost[static_cast<size_t>(d.graph)] * static_cast<int64_t>(d.configs.size());
          alone += overhead + w;
          largest = std::max(largest, w);
        }
        const auto r0 = s.draw(epoch, step, 0, 2), r1 = s.draw(epoch, step, 1, 2);
        const int64_t worst = std::max(batched_work(r0, cost, overhead), batched_work(r1, cost, overhead));
        EXPECT_EQ(r0.size() + r1.size(), all.size());
        // Greedy bound: the last graph put on the busiest rank went where the work after it
        // was least, at most the least loaded rank's (<= half of every graph alone) plus
        // that graph alone.
        EXPECT_LE(worst, alone / 2 + overhead + largest) << "epoch " << epoch << " step " << step;
        for (const auto* r : {&r0, &r1})
          for (size_t i = 1; i < r->size(); ++i) EXPECT_LT((*r)[i - 1].position, (*r)[i].position);
        // A rank's batches are the cheapest split of its draws.
        for (const auto* r : {&r0, &r1}) {
          std::vector<int64_t> width_r, cost_r;
          for (const auto& d : *r)
            width_r.push_back(static_cast<int64_t>(d.configs.size())), cost_r.push_back(cost[static_cast<size_t>(d.graph)]);
          EXPECT_EQ(cost_of(s.batches(*r), width_r, cost_r, overhead), batched_work(*r, cost, overhead));
        }
      }
  }
  EXPECT_THROW(SlateSampler(counts, options(), {1, 2}), Error);
  EXPECT_THROW(SlateSampler({3, 4}, options(), {1, 0}), Error);
}

TEST(Sampler, BatchOverheadFollowsTheModelSize) {
  ModelOptions m;
  m.hidden = 32, m.layers = 2;  // the calibration point
  EXPECT_EQ(batch_overhead_in_node_slots(m), 2000);
  m.layers = 4;
  EXPECT_EQ(batch_overhead_in_node_slots(m), 1000);
  m.hidden = 64, m.layers = 2;
  EXPECT_EQ(batch_overhead_in_node_slots(m), 500);
  m.hidden = 32, m.layers = 0;  // no SAGE block: still a finite overhead
  EXPECT_EQ(batch_overhead_in_node_slots(m), 4000);
  EXPECT_EQ(batch_overhead_in_node_slots(ModelOptions{}), 333);  // hidden 64, 3 layers
  // Slates of 32 and 8 configs on graphs of cost 50: the small model pads the narrow one
  // into one batch (2000 + 32 x 100 < 2 x 2000 + 32 x 50 + 8 x 50); the default model's
  // lower overhead gives it a batch of its own (2 x 333 + 2000 < 333 + 3200).
  m.hidden = 32, m.layers = 2;
  EXPECT_EQ(batches_by_width({32, 8}, {50, 50}, batch_overhead_in_node_slots(m)).size(), 1u);
  EXPECT_EQ(batches_by_width({32, 8}, {50, 50}, batch_overhead_in_node_slots(ModelOptions{})).size(), 2u);
}

TEST(Sampler, DealImprovesOnTheGreedyPassBySwaps) {
  // Costs 3, 3, 2, 2, 2 of width 1, no overhead, 2 ranks: the greedy pass ends with
  // {3, 2, 2} (7) and {3, 2} (5); swapping a 3 for a 2 gives 6 and 6, the best split.
  SamplerOptions o = options();
  o.graphs_per_step = 5;
  o.batch_overhead = 0;
  const std::vector<int64_t> cost = {3, 3, 2, 2, 2};
  SlateSampler s({1, 1, 1, 1, 1}, o, cost);
  for (int64_t step = 0; step < 3; ++step) {  // every step deals all five graphs
    const auto r0 = s.draw(0, step, 0, 2), r1 = s.draw(0, step, 1, 2);
    EXPECT_EQ(batched_work(r0, cost, 0), 6) << step;
    EXPECT_EQ(batched_work(r1, cost, 0), 6) << step;
  }
}

TEST(Sampler, DealCountsThePaddingOfNarrowSlates) {
  // (cost, slate width): g0 (10, 8), g1 (10, 1), g2 (10, 2), g3 (30, 2); a batch's
  // overhead of 1000 keeps every rank at one batch. Dealt by cost x width alone (80, 10, 20,
  // 60), g0 and g1 would share a rank and g1 would be padded to width 8: 8 x 20 = 160
  // against 2 x 40 = 80. Counting the padding, g0 stays alone (8 x 10 = 80) and the narrow
  // graphs go together (2 x 50 = 100), the best split.
  SamplerOptions o = options();
  o.graphs_per_step = 4;
  o.batch_overhead = 1000;
  const std::vector<int64_t> cost = {10, 10, 10, 30};
  SlateSampler s({50, 1, 2, 2}, o, cost);
  for (int64_t step = 0; step < 3; ++step) {  // every step deals the same four graphs
    const auto r0 = s.draw(0, step, 0, 2), r1 = s.draw(0, step, 1, 2);
    ASSERT_EQ(r0.size(), 1u) << step;
    EXPECT_EQ(r0[0].graph, 0) << step;
    EXPECT_EQ(batched_work(r0, cost, 1000), 1080) << step;
    EXPECT_EQ(batched_work(r1, cost, 1000), 1100) << step;
    EXPECT_EQ(s.batches(r1).size(), 1u);
  }
}

TEST(Sampler, ResumedRunDrawsTheSameSlates) {
  const auto counts = config_counts();
  SlateSampler run(counts, options());
  std::map<std::pair<int64_t, int64_t>, std::vector<SlateDraw>> first_run;
  for (int64_t epoch = 0; epoch < 3; ++epoch)
    for (int64_t step = 0; step < 5; ++step) first_run[{epoch, step}] = run.draw(epoch, step, 1, 2);
  // A fresh sampler (as after a restart) jumps straight to any step, in any order.
  for (int64_t epoch = 2; epoch >= 0; --epoch)
    for (int64_t step = 4; step >= 0; --step) {
      SlateSampler resumed(counts, options());
      EXPECT_TRUE(same(resumed.draw(epoch, step, 1, 2), first_run[{epoch, step}]))
          << "epoch " << epoch << " step " << step;
      EXPECT_TRUE(same(run.draw(epoch, step, 1, 2), first_run[{epoch, step}]));
    }
}

TEST(Sampler, RejectsBadInput) {
  EXPECT_THROW(SlateSampler({}, options()), Error);
  EXPECT_THROW(SlateSampler({3, 0, 2}, options()), Error);
  SamplerOptions o = options();
  o.graphs_per_step = 0;
  EXPECT_THROW(SlateSampler({3}, o), Error);
  o = options();
  o.batch_overhead = -1;
  EXPECT_THROW(SlateSampler({3}, o), Error);
}

// ---------------------------------------------------------------------------------------
// Eval plans

TEST(EvalPlans, TileScoresEveryConfigInChunks) {
  const auto plans = make_eval_plans(Kind::Tile, {7, 3, 1}, {"tile:xla:a", "tile:xla:b", "tile:xla:c"},
                                     2, 3, 0);
  ASSERT_EQ(plans.size(), 3u);
  EXPECT_EQ(plans[0].configs, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(plans[0].chunks.size(), 3u);
  EXPECT_EQ(plans[0].chunks[0], (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(plans[0].chunks[2], (std::vector<int64_t>{6}));
  EXPECT_EQ(plans[1].chunks.size(), 1u);
  EXPECT_EQ(plans[2].configs, (std::vector<int64_t>{0}));
  EXPECT_EQ(plans[1].graph, 1);
  EXPECT_EQ(plans[1].key, "tile:xla:b");
}

TEST(EvalPlans, LayoutUsesTheSharedDeterministicSubset) {
  const std::vector<std::string> keys = {"layout:nlp:random:x", "layout:nlp:random:y"};
  const auto plans = make_eval_plans(Kind::Layout, {50000, 20}, keys, 1000, 256, 5);
  EXPECT_EQ(plans[0].configs, sample_eval_configs(50000, 1000, 5, keys[0]));
  EXPECT_EQ(plans[0].configs.size(), 1000u);
  std::vector<int64_t> rejoined;
  for (const auto& c : plans[0].chunks) {
    EXPECT_LE(c.size(), 256u);
    rejoined.insert(rejoined.end(), c.begin(), c.end());
  }
  EXPECT_EQ(rejoined, plans[0].configs);
  EXPECT_EQ(plans[0].chunks.size(), 4u);
  EXPECT_EQ(plans[1].configs.size(), 20u);  // fewer than the cap: all
  EXPECT_THROW(make_eval_plans(Kind::Layout, {5}, {}, 10, 4, 0), Error);
}

}  // namespace
}  // namespace tpuperf
