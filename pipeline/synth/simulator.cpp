#include "pipeline/synth/simulator.h"

#include <algorithm>
#include <cmath>

namespace tpuperf::synth {

const TpuCore& tpu_core() {
  static const TpuCore core;
  return core;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t a, int64_t g) { return ceil_div(a, g) * g; }

// ---------------------------------------------------------------------------------------
// Tile kernels

// The logical dims that are minor-most and second-minor in the output's layout (-1: none).
static void minor_dims(const TileProblem& p, int& minor, int& second) {
  const size_t r = p.out_dims.size();
  minor = second = -1;
  if (r == 0) return;
  if (p.out_minor_to_major.size() == r) {
    minor = static_cast<int>(p.out_minor_to_major[0]);
    if (r >= 2) second = static_cast<int>(p.out_minor_to_major[1]);
  } else {
    minor = static_cast<int>(r - 1);
    if (r >= 2) second = static_cast<int>(r - 2);
  }
}

// What one grid step moves and computes.
struct StepWork {
  double in_bytes = 0, out_bytes = 0, mxu_flops = 0, vpu_flops = 0, working_set = 0;
  int64_t steps = 1;
};

static StepWork step_work(const TileProblem& p, const TileConfig& c) {
  const TpuCore& hw = tpu_core();
  int minor, second;
  minor_dims(p, minor, second);
  StepWork w;
  double padded = 1, padded_transposed = 1;  // output tile elements incl. (8 x 128) padding
  for (size_t i = 0; i < p.out_dims.size(); ++i) {
    int64_t t = std::min(c.out_tile[i], p.out_dims[i]);
    w.steps *= ceil_div(p.out_dims[i], t);
    int d = static_cast<int>(i);
    padded *= static_cast<double>(d == minor    ? round_up(t, hw.lanes)
                                  : d == second ? round_up(t, hw.sublanes)
                                                : t);
    // A transposed read sees the two minor dims swapped.
    padded_transposed *= static_cast<double>(d == second  ? round_up(t, hw.lanes)
                                             : d == minor ? round_up(t, hw.sublanes)
                                                          : t);
  }
  const int64_t k = std::max<int64_t>(1, p.contraction);
  const int64_t tk = std::clamp<int64_t>(c.k_tile, 1, k);
  const int64_t k_steps = ceil_div(k, tk);
  w.steps *= k_steps;
  const double out_tile = padded * p.out_bytes * p.num_outputs;
  const double acc = k_steps > 1 ? padded * 4.0 : 0.0;  // f32 partial sums stay in VMEM
  double in_tile = 0;
  switch (p.kind) {
    case TileKind::Dot:
    case TileKind::Conv: {
      double win = 1;
      for (int64_t x : p.window_dims) win *= static_cast<double>(x);
      const double tk_eff = static_cast<double>(round_up(tk, hw.lanes));
      const double cols = minor >= 0
                              ? static_cast<double>(round_up(
                                    std::min(c.out_tile[minor], p.out_dims[minor]), hw.lanes))
                              : 1.0;
      const double rows = padded / cols;
      in_tile = (rows * tk_eff * win + tk_eff * win * cols) * p.in_bytes;
      w.mxu_flops = 2.0 * padded * tk_eff * win;
      w.vpu_flops = padded * p.vpu_ops;
      w.in_bytes = in_tile + padded * p.in_bytes * p.side_inputs / static_cast<double>(k_steps);
      break;
    }
    case TileKind::Reduce:
      in_tile = padded * static_cast<double>(tk) * p.in_bytes * p.num_inputs;
      w.vpu_flops = padded * static_cast<double>(tk) * p.vpu_ops;
      w.in_bytes = in_tile;
      break;
    case TileKind::Loop:
      in_tile = (p.transposed ? padded_transposed : padded) * p.in_bytes * p.num_inputs;
      w.vpu_flops = padded * p.vpu_ops;
      w.in_bytes = in_tile;
      break;
  }
  w.out_bytes = out_tile / static_cast<double>(k_steps);
  w.working_set = 2.0 * in_tile + 2.0 * out_tile + acc;
  return w;
}

double tile_working_set_bytes(const TileProblem& p, const TileConfig& c) {
  return step_work(p, c).working_set;
}

double tile_runtime_ns(const TileProblem& p, const TileConfig& c) {
  const TpuCore& hw = tpu_core();
  StepWork w = step_work(p, c);
  double memory = (w.in_bytes + w.out_bytes) / hw.hbm_bytes_per_ns;
  double compute = w.mxu_flops / hw.mxu_flops_per_ns + w.vpu_flops / hw.vpu_flops_per_ns;
  double step = std::max(memory, compute) + hw.step_overhead_ns;
  if (w.working_set > hw.vmem_bytes) {
    // Spilling: tiles no longer stay resident, every step re-streams them through HBM.
    step *= 2.0 + 2.0 * (w.working_set / hw.vmem_bytes - 1.0);
  }
  return hw.launch_ns + static_cast<double>(w.steps) * step;
}

// Multiples of the granule in roughly geometric steps (1, 2, 3, 4, 6, 8, 12, 16, 24, ...
// granules) below the extent, plus the full extent.
static std::vector<int64_t> aligned_candidates(int64_t extent, int64_t granule) {
  std::vector<int64_t> v;
  for (int64_t m = 1; m * granule < extent;
       m = m < 4 ? m + 1 : (m % 3 == 0 ? m / 3 * 4 : m / 2 * 3))
    v.push_back(m * granule);
  v.push_back(extent);
  return v;
}

std::vector<int64_t> tile_candidates(const TileProblem& p, size_t dim) {
  int minor, second;
  minor_dims(p, minor, second);
  const int d = static_cast<int>(dim);
  const int64_t g = d == minor ? tpu_core().lanes : d == second ? tpu_core().sublanes : 1;
  return aligned_candidates(p.out_dims[dim], g);
}

std::vector<int64_t> k_tile_candidates(const TileProblem& p) {
  switch (p.kind) {
    case TileKind::Dot:
    case TileKind::Conv:
      return aligned_candidates(std::max<int64_t>(1, p.contraction), 128);
    case TileKind::Reduce:
      return aligned_candidates(std::max<int64_t>(1, p.contraction), 8);
    case TileKind::Loop:
      break;
  }
  return {1};
}

static int64_t next_up(const std::vector<int64_t>& cands, int64_t cur) {
  for (int64_t x : cands)
    if (x > cur) return x;
  return cur;
}

TileConfig default_tile_config(const TileProblem& p) {
  const size_t r = p.out_dims.size();
  TileConfig c;
  for (size_t i = 0; i < r; ++i) c.out_tile.push_back(tile_candidates(p, i).front());
  const auto kc = k_tile_candidates(p);
  c.k_tile = kc.front();
  // Greedy: double the one extent (or the contraction tile) that helps most, while the
  // step fits half of VMEM and something still helps.
  const double budget = tpu_core().vmem_bytes / 2;
  double current = tile_runtime_ns(p, c);
  for (;;) {
    TileConfig best = c;
    double best_t = current;
    for (size_t j = 0; j <= r; ++j) {
      TileConfig t = c;
      if (j < r) {
        t.out_tile[j] = next_up(tile_candidates(p, j), c.out_tile[j]);
        if (t.out_tile[j] == c.out_tile[j]) continue;
      } else {
        t.k_tile = next_up(kc, c.k_tile);
        if (t.k_tile == c.k_tile) continue;
      }
      if (tile_working_set_bytes(p, t) > budget) continue;
      double tt = tile_runtime_ns(p, t);
      if (tt < best_t) {
        best = t;
        best_t = tt;
      }
    }
    if (best == c) return c;
    c = best;
    current = best_t;
  }
}

// 6 values + sum + product; an empty list gives zeros and product 0 (as in the release).
static void put_bounds(std::vector<float>& f, size_t base, const std::vector<int64_t>& v) {
  double sum = 0, prod = v.empty() ? 0 : 1;
  for (size_t i = 0; i < v.size() && i < 6; ++i) {
    f[base + i] = static_cast<float>(v[i]);
    sum += static_cast<double>(v[i]);
    prod *= static_cast<double>(v[i]);
  }
  f[base + 6] = static_cast<float>(sum);
  f[base + 7] = static_cast<float>(prod);
}

std::vector<float> tile_config_features(const TileProblem& p, const TileConfig& c) {
  int minor, second;
  minor_dims(p, minor, second);
  std::vector<int64_t> out = c.out_tile, kernel, input;
  const int64_t n_tile = minor >= 0 ? out[static_cast<size_t>(minor)] : 1;
  switch (p.kind) {
    case TileKind::Dot:
      kernel = {c.k_tile, n_tile};
      break;
    case TileKind::Conv:
      kernel = p.window_dims;
      kernel.push_back(c.k_tile);
      kernel.push_back(n_tile);
      break;
    case TileKind::Reduce:
      kernel = out;
      kernel.push_back(c.k_tile);
      break;
    case TileKind::Loop:
      kernel = out;
      if (p.transposed && minor >= 0 && second >= 0) {
        input = out;
        std::swap(input[static_cast<size_t>(minor)], input[static_cast<size_t>(second)]);
      }
      break;
  }
  if (kernel.size() > 6) kernel.resize(6);
  std::vector<float> f(24, 0.f);
  put_bounds(f, 0, kernel);
  put_bounds(f, 8, out);
  put_bounds(f, 16, input);
  return f;
}

// ---------------------------------------------------------------------------------------
// Layout programs

Perm reshape_default_perm(size_t rank) {
  Perm p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = static_cast<int64_t>(rank - 1 - i);
  return p;
}

Perm default_perm(const LayoutTensor& t) {
  const int64_t r = static_cast<int64_t>(t.dims.size());
  if (r == 0) return {};
  // Ties go to the higher (more minor in row-major) dim.
  auto largest = [&](const Perm& among, bool sublane_multiple) {
    int64_t best = -1;
    for (int64_t i : among) {
      if (sublane_multiple && t.dims[i] % 8 != 0) continue;
      if (best < 0 || t.dims[i] > t.dims[best] || (t.dims[i] == t.dims[best] && i > best)) best = i;
    }
    return best;
  };
  Perm all = reshape_default_perm(t.dims.size());
  Perm p = {t.preferred_minor >= 0 && t.dims[t.preferred_minor] >= 64 ? t.preferred_minor
                                                                      : largest(all, false)};
  for (int64_t i : all)
    if (i != p[0]) p.push_back(i);
  if (r >= 3) {
    // Second-minor: the largest dim that fills whole sublane tiles (batch, typically).
    Perm rest(p.begin() + 1, p.end());
    int64_t s = largest(rest, true);
    if (s < 0) s = largest(rest, false);
    auto it = std::find(p.begin() + 1, p.end(), s);
    std::rotate(p.begin() + 1, it, it + 1);
  }
  return p;
}

double pad_factor(const std::vector<int64_t>& dims, const Perm& perm) {
  if (dims.empty() || perm.empty()) return 1.0;
  const TpuCore& hw = tpu_core();
  double m = static_cast<double>(dims[perm[0]]);
  double f = static_cast<double>(round_up(dims[perm[0]], hw.lanes)) / m;
  if (perm.size() >= 2) {
    double s = static_cast<double>(dims[perm[1]]);
    f *= static_cast<double>(round_up(dims[perm[1]], hw.sublanes)) / s;
  }
  return std::min(f, 32.0);
}

static double tensor_bytes(const std::vector<int64_t>& dims, int bytes) {
  double e = 1;
  for (int64_t d : dims) e *= static_cast<double>(d);
  return e * bytes;
}

static bool is_row_major(const Perm& p) { return p == reshape_default_perm(p.size()); }

double layout_node_cost_ns(const LayoutNode& n, const LayoutChoice& c) {
  const TpuCore& hw = tpu_core();
  if (n.is_reshape) {
    const auto& out = n.tensors[0];
    if (is_row_major(c.perm[0]) && is_row_major(c.perm[1])) return 50.0;  // a bitcast
    double pad =
        std::max(pad_factor(out.dims, c.perm[0]), pad_factor(n.tensors[1].dims, c.perm[1]));
    return 500.0 + 2.0 * tensor_bytes(out.dims, out.bytes) * pad / hw.hbm_bytes_per_ns;
  }
  double traffic = 0, relayout = 1;
  for (int s = 0; s < 3; ++s) {
    if (!n.has_slot[s]) continue;
    const LayoutTensor& t = n.tensors[s];
    traffic += tensor_bytes(t.dims, t.bytes) * pad_factor(t.dims, c.perm[s]);
    // The MXU is fed along the preferred dim; any other minor dim means an in-core
    // relayout of that operand.
    if (s > 0 && t.preferred_minor >= 0 && !c.perm[s].empty() && c.perm[s][0] != t.preferred_minor)
      relayout *= 2.0;
  }
  double memory = traffic / hw.hbm_bytes_per_ns;
  double compute = n.flops / hw.mxu_flops_per_ns * relayout;
  return 1000.0 + std::max(memory, compute);
}

LayoutCostModel::LayoutCostModel(const LayoutProblem& p) : p_(p) {
  node_cost_.resize(p.nodes.size());
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& opts = p.options[static_cast<size_t>(p.nodes[i].group)];
    for (const auto& o : opts) node_cost_[i].push_back(layout_node_cost_ns(p.nodes[i], o));
  }
  const TpuCore& hw = tpu_core();
  for (const auto& l : p.links) {
    // A transpose reads and writes the tensor once with strided accesses: ~3x the
    // bandwidth cost of a plain copy, so 6 bytes of traffic per byte of tensor.
    link_copy_ns_.push_back(400.0 +
                            6.0 * static_cast<double>(l.elements) * l.bytes / hw.hbm_bytes_per_ns);
    fixed_perm_.push_back(reshape_default_perm(l.dims.size()));
  }
}

double LayoutCostModel::node_cost_ns(size_t node, int option) const {
  return node_cost_[node][static_cast<size_t>(option)];
}

double LayoutCostModel::runtime_ns(const std::vector<int>& choice) const {
  double t = p_.base_ns;
  for (size_t i = 0; i < p_.nodes.size(); ++i)
    t += node_cost_[i][static_cast<size_t>(choice[static_cast<size_t>(p_.nodes[i].group)])];
  for (size_t k = 0; k < p_.links.size(); ++k) {
    const LayoutLink& l = p_.links[k];
    const Perm* a;
    const Perm* b;
    const Perm& fixed = fixed_perm_[k];
    if (l.producer >= 0) {
      const auto& n = p_.nodes[static_cast<size_t>(l.producer)];
      a = &p_.options[static_cast<size_t>(n.group)]
                     [static_cast<size_t>(choice[static_cast<size_t>(n.group)])]
                         .perm[0];
    } else {
      a = &fixed;
    }
    if (l.consumer >= 0) {
      const auto& n = p_.nodes[static_cast<size_t>(l.consumer)];
      b = &p_.options[static_cast<size_t>(n.group)]
                     [static_cast<size_t>(choice[static_cast<size_t>(n.group)])]
                         .perm[l.slot];
    } else {
      b = &fixed;
    }
    if (*a != *b) t += link_copy_ns_[k];
  }
  return t;
}

}  // namespace tpuperf::synth
