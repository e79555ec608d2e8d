#include "pipeline/synth/layout_sampling.h"

#include <algorithm>
#include <utility>

namespace tpuperf::synth {

namespace {

Perm random_perm(size_t rank, Rng& rng) {
  Perm p = reshape_default_perm(rank);
  rng.shuffle(p);
  return p;
}

// A small departure from a layout: keep the minor-most dim, reorder two of the others;
// for rank 2 swap (rarely) the two dims.
Perm nudge(const Perm& base, Rng& rng) {
  Perm p = base;
  if (p.size() >= 3) {
    size_t i = static_cast<size_t>(rng.randint(1, static_cast<int64_t>(p.size()) - 1));
    size_t j = static_cast<size_t>(rng.randint(1, static_cast<int64_t>(p.size()) - 1));
    std::swap(p[i], p[j]);
  } else if (p.size() == 2 && rng.chance(0.25)) {
    std::swap(p[0], p[1]);
  }
  return p;
}

// What the default search tries for one slot: the default itself, row-major (no copies
// next to row-major neighbours), or a nudge of the default.
Perm near_default(const Perm& def, Rng& rng) {
  switch (rng.weighted({0.5, 0.3, 0.2})) {
    case 0:
      return def;
    case 1:
      return reshape_default_perm(def.size());
    default:
      return nudge(def, rng);
  }
}

LayoutChoice default_choice(const LayoutNode& n) {
  LayoutChoice c;
  c.is_default = true;
  for (int s = 0; s < 3; ++s) {
    if (!n.has_slot[s]) continue;
    c.perm[s] =
        n.is_reshape ? reshape_default_perm(n.tensors[s].dims.size()) : default_perm(n.tensors[s]);
  }
  return c;
}

bool same_perms(const LayoutChoice& a, const LayoutChoice& b) {
  return a.perm[0] == b.perm[0] && a.perm[1] == b.perm[1] && a.perm[2] == b.perm[2];
}

}  // namespace

std::vector<int> sample_choice(const LayoutProblem& p, const std::string& search, Rng& rng) {
  const size_t groups = p.options.size();
  std::vector<int> choice(groups, 0);
  auto pick_other = [&](size_t g) {
    int64_t k = static_cast<int64_t>(p.options[g].size()) - 1;
    return k > 0 ? static_cast<int>(rng.randint(1, k)) : 0;
  };
  if (search == "random") {
    const double keep_default = rng.uniform(0.0, 0.6);
    for (size_t g = 0; g < groups; ++g)
      if (!rng.chance(keep_default)) choice[g] = pick_other(g);
  } else {
    int64_t changes = 1;
    while (changes < static_cast<int64_t>(groups) && rng.chance(0.5)) ++changes;
    for (int64_t i = 0; i < changes; ++i) {
      size_t g = static_cast<size_t>(rng.randint(0, static_cast<int64_t>(groups) - 1));
      choice[g] = pick_other(g);
    }
  }
  return choice;
}

void make_layout_options(LayoutProblem& problem, const std::string& search, Rng& rng) {
  int groups = 0;
  for (const auto& n : problem.nodes) groups = std::max(groups, n.group + 1);
  std::vector<int> rep(static_cast<size_t>(groups), -1);
  for (size_t i = 0; i < problem.nodes.size(); ++i)
    if (rep[static_cast<size_t>(problem.nodes[i].group)] < 0)
      rep[static_cast<size_t>(problem.nodes[i].group)] = static_cast<int>(i);
  problem.options.assign(static_cast<size_t>(groups), {});
  for (int g = 0; g < groups; ++g) {
    const LayoutNode& n = problem.nodes[static_cast<size_t>(rep[static_cast<size_t>(g)])];
    auto& opts = problem.options[static_cast<size_t>(g)];
    opts.push_back(default_choice(n));
    const bool random = search == "random";
    const int64_t extra = random ? rng.randint(3, 7) : rng.randint(1, 3);
    for (int64_t k = 0; k < extra; ++k) {
      LayoutChoice c;
      for (int s = 0; s < 3; ++s) {
        if (!n.has_slot[s]) continue;
        c.perm[s] = random ? random_perm(n.tensors[s].dims.size(), rng)
                           : near_default(opts[0].perm[s], rng);
      }
      bool dup = false;
      for (size_t o = 1; o < opts.size(); ++o) dup = dup || same_perms(opts[o], c);
      if (!dup) opts.push_back(c);
    }
  }
}

}  // namespace tpuperf::synth
