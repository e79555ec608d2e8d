#include "pipeline/synth/tile_gen.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tpuperf::synth {

namespace {

// Sizes as they occur in models: powers of two plus the usual odd ones.
int64_t pick_size(Rng& rng, const std::vector<int64_t>& common) { return rng.pick(common); }

ElemType other_float(ElemType t) { return t == ElemType::F32 ? ElemType::BF16 : ElemType::F32; }

// An element-wise epilogue on y (bias, scale, activation, residual, conversions), as XLA
// fuses it into a convolution or dot. Counts the vector ops and the side inputs.
int epilogue(HloBuilder& h, int y, int steps, Rng& rng, TileProblem& p) {
  const std::vector<int64_t> dims = h.node(y).dims;
  const int64_t last = static_cast<int64_t>(dims.size()) - 1;
  const ElemType t = h.node(y).type;
  for (int s = 0; s < steps; ++s) {
    switch (rng.weighted({3, 2, 2, 1, 1, 1})) {
      case 0: {  // bias
        int b = h.broadcast(h.parameter(h.node(y).type, {dims.back()}), dims, {last});
        y = h.binary(op::kAdd, y, b);
        p.vpu_ops += 1;
        break;
      }
      case 1: {  // scale (batch norm folded)
        int b = h.broadcast(h.parameter(h.node(y).type, {dims.back()}), dims, {last});
        y = h.binary(op::kMultiply, y, b);
        p.vpu_ops += 1;
        break;
      }
      case 2: {  // relu
        int b = h.broadcast(h.constant(h.node(y).type), dims, {});
        y = h.binary(op::kMaximum, y, b);
        p.vpu_ops += 1;
        break;
      }
      case 3: {  // residual
        y = h.binary(op::kAdd, y, h.parameter(h.node(y).type, dims));
        p.side_inputs += 1;
        p.num_inputs += 1;
        p.vpu_ops += 1;
        break;
      }
      case 4: {  // gelu (tanh approximation)
        int cube = h.binary(op::kMultiply, h.binary(op::kMultiply, y, y), y);
        int c = h.broadcast(h.constant(h.node(y).type), dims, {});
        int inner = h.binary(op::kAdd, y, h.binary(op::kMultiply, cube, c));
        int th = h.unary(op::kTanh, inner);
        y = h.binary(op::kMultiply, y, th);
        p.vpu_ops += 8;
        break;
      }
      default: {  // precision round trip
        y = h.convert(h.convert(y, other_float(t)), t);
        p.vpu_ops += 2;
        break;
      }
    }
  }
  return y;
}

void finish_root(HloBuilder& h, int y, Rng& rng) {
  if (rng.chance(0.35)) {
    h.node(h.tuple({y})).is_root = true;
  } else {
    h.node(y).is_root = true;
  }
}

void set_output(TileProblem& p, const HloBuilder& h, int y) {
  p.out_dims = h.node(y).dims;
  p.out_minor_to_major = h.node(y).minor_to_major;
  p.out_bytes = elem_bytes(h.node(y).type);
}

TileKernel conv_kernel(const ModelSpec& m, Rng& rng) {
  TileKernel k;
  HloBuilder& h = k.hlo;
  TileProblem& p = k.problem;
  p.kind = TileKind::Conv;
  const int64_t n = std::min<int64_t>(m.batch, pick_size(rng, {1, 2, 4, 8, 16, 32, 64, 128}));
  const int64_t hw = pick_size(rng, {7, 14, 28, 56, 112});
  const int64_t ci = pick_size(rng, {3, 16, 32, 64, 96, 128, 192, 256, 384, 512, 1024});
  const int64_t co = pick_size(rng, {16, 32, 64, 128, 192, 256, 384, 512, 1024, 2048});
  const int64_t ks = std::vector<int64_t>{1, 3, 5, 7}[rng.weighted({7, 10, 1.5, 1.5})];
  const int64_t stride = rng.chance(0.25) ? 2 : 1;
  const int64_t ho = (hw + stride - 1) / stride;
  int x = h.parameter(m.dtype, {n, hw, hw, ci});
  int w = h.parameter(m.dtype, {ks, ks, ci, co});
  if (rng.chance(0.2)) x = h.convert(h.convert(x, other_float(m.dtype)), m.dtype);
  int y = h.convolution(x, w, square_window(ks, stride), ConvDims{}, {n, ho, ho, co}, m.dtype, 1);
  p.contraction = ci;
  p.window_dims = {ks, ks};
  p.in_bytes = elem_bytes(m.dtype);
  p.num_inputs = 0;
  p.vpu_ops = 0;
  y = epilogue(h, y, static_cast<int>(rng.randint(1, 14)), rng, p);
  set_output(p, h, y);
  finish_root(h, y, rng);
  return k;
}

TileKernel dot_kernel(const ModelSpec& m, Rng& rng) {
  TileKernel k;
  HloBuilder& h = k.hlo;
  TileProblem& p = k.problem;
  p.kind = TileKind::Dot;
  const std::vector<int64_t> sizes = {64, 128, 256, 384, 512, 768, 1000, 1024, 2048, 3072, 4096};
  const int64_t mm = pick_size(rng, {128, 256, 512, 1024, 2048, 4096, 8192});
  const int64_t kk = pick_size(rng, sizes), nn = pick_size(rng, sizes);
  std::vector<int64_t> lhs_dims = {mm, kk}, out = {mm, nn};
  if (rng.chance(0.3)) {
    int64_t b = pick_size(rng, {4, 8, 12, 16, 32});
    lhs_dims.insert(lhs_dims.begin(), b);
    out.insert(out.begin(), b);
  }
  int a = h.parameter(m.dtype, lhs_dims);
  int b;
  if (rng.chance(0.3)) {
    b = h.transpose(h.parameter(m.dtype, {nn, kk}), {1, 0});
  } else {
    b = h.parameter(m.dtype, {kk, nn});
  }
  int y = h.dot(a, b, out, m.dtype);
  p.contraction = kk;
  p.in_bytes = elem_bytes(m.dtype);
  p.num_inputs = 0;
  p.vpu_ops = 0;
  y = epilogue(h, y, static_cast<int>(rng.randint(1, 14)), rng, p);
  set_output(p, h, y);
  finish_root(h, y, rng);
  return k;
}

std::vector<int64_t> activation_dims(Rng& rng) {
  switch (rng.randint(0, 3)) {
    case 0:
      return {pick_size(rng, {1024, 4096, 16384, 65536, 262144, 1000000})};
    case 1:
      return {pick_size(rng, {128, 512, 1024, 4096, 8192}),
              pick_size(rng, {64, 128, 256, 768, 1024, 3072, 4096})};
    case 2:
      return {pick_size(rng, {8, 16, 32, 64}), pick_size(rng, {128, 256, 384, 512}),
              pick_size(rng, {64, 128, 256, 768, 1024})};
    default: {
      int64_t s = pick_size(rng, {7, 14, 28, 56, 112});
      return {pick_size(rng, {8, 16, 32, 64, 128}), s, s, pick_size(rng, {32, 64, 128, 256, 512})};
    }
  }
}

// Appends `ops` element-wise ops over the values in pool (all of shape dims), each
// consuming recent values: chains with some fan-in, like fused element-wise code.
void elementwise_chain(HloBuilder& h, std::vector<int>& pool, int ops, ElemType t, Rng& rng,
                       TileProblem& p) {
  const std::vector<int64_t> dims = h.node(pool.back()).dims;
  const int64_t last = static_cast<int64_t>(dims.size()) - 1;
  auto recent = [&]() {
    int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(pool.size()) - 4);
    return pool[static_cast<size_t>(rng.randint(lo, static_cast<int64_t>(pool.size()) - 1))];
  };
  for (int i = 0; i < ops; ++i) {
    int v;
    switch (rng.weighted({4, 2, 2, 1})) {
      case 0: {
        static const std::vector<uint8_t> bin = {op::kAdd, op::kMultiply, op::kSubtract,
                                                 op::kMaximum, op::kDivide};
        v = h.binary(rng.pick(bin), recent(), recent());
        break;
      }
      case 1: {
        static const std::vector<uint8_t> un = {op::kExp,   op::kTanh, op::kNegate,
                                                op::kRsqrt, op::kLog,  op::kSqrt};
        v = h.unary(rng.pick(un), recent());
        p.vpu_ops += 3;  // transcendental: several VPU ops
        break;
      }
      case 2: {
        int c = rng.chance(0.5) ? h.constant(t) : h.parameter(t, {dims.back()});
        int b = h.broadcast(
            c, dims, h.node(c).dims.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{last});
        v = h.binary(rng.chance(0.5) ? op::kMultiply : op::kAdd, recent(), b);
        break;
      }
      default:
        v = h.convert(h.convert(recent(), other_float(t)), t);
        break;
    }
    p.vpu_ops += 1;
    pool.push_back(v);
  }
}

// A loop fusion: a random element-wise DAG over same-shaped inputs; chain_ops element-wise
// ops (0: a random count, 4..150).
TileKernel loop_kernel(const ModelSpec& m, Rng& rng, int chain_ops = 0) {
  TileKernel k;
  HloBuilder& h = k.hlo;
  TileProblem& p = k.problem;
  p.kind = TileKind::Loop;
  const std::vector<int64_t> dims = activation_dims(rng);
  const int inputs = static_cast<int>(rng.randint(1, 6));
  std::vector<int> pool;
  for (int i = 0; i < inputs; ++i) pool.push_back(h.parameter(m.dtype, dims));
  p.num_inputs = inputs;
  p.vpu_ops = 0;
  const int ops = chain_ops > 0 ? chain_ops : static_cast<int>(rng.log_uniform(4, 150));
  elementwise_chain(h, pool, ops, m.dtype, rng, p);
  int y = pool.back();
  if (dims.size() >= 2 && rng.chance(0.15)) {
    std::vector<int64_t> perm = row_major(dims.size());
    std::reverse(perm.begin(), perm.end());
    std::swap(perm[dims.size() - 1], perm[dims.size() - 2]);
    y = h.transpose(y, perm);
    p.transposed = true;
  }
  p.in_bytes = elem_bytes(m.dtype);
  set_output(p, h, y);
  if (rng.chance(0.3) && pool.size() > 2 && !p.transposed) {
    int second = pool[pool.size() - 2];
    h.node(h.tuple({y, second})).is_root = true;
    p.num_outputs = 2;
  } else {
    finish_root(h, y, rng);
  }
  return k;
}

// An optimizer update (Adam) over many same-shaped weights: the big multi-output fusions.
TileKernel optimizer_kernel(const ModelSpec& m, Rng& rng) {
  TileKernel k;
  HloBuilder& h = k.hlo;
  TileProblem& p = k.problem;
  p.kind = TileKind::Loop;
  const std::vector<int64_t> dims = {pick_size(rng, {64, 128, 256, 512, 768, 1024}),
                                     pick_size(rng, {128, 256, 512, 768, 1024, 3072})};
  const int groups = static_cast<int>(rng.randint(2, 12));
  auto scalar = [&]() { return h.broadcast(h.constant(ElemType::F32), dims, {}); };
  std::vector<int> outs;
  for (int g = 0; g < groups; ++g) {
    int w = h.parameter(ElemType::F32, dims), grad = h.parameter(m.dtype, dims);
    int mom = h.parameter(ElemType::F32, dims), vel = h.parameter(ElemType::F32, dims);
    int gf = h.convert(grad, ElemType::F32);
    int m2 = h.binary(op::kAdd, h.binary(op::kMultiply, mom, scalar()),
                      h.binary(op::kMultiply, gf, scalar()));
    int v2 = h.binary(op::kAdd, h.binary(op::kMultiply, vel, scalar()),
                      h.binary(op::kMultiply, h.binary(op::kMultiply, gf, gf), scalar()));
    int denom = h.binary(op::kAdd, h.unary(op::kSqrt, v2), scalar());
    int w2 = h.binary(op::kSubtract, w,
                      h.binary(op::kMultiply, h.binary(op::kDivide, m2, denom), scalar()));
    outs.insert(outs.end(), {w2, m2, v2});
  }
  h.node(h.tuple(outs)).is_root = true;
  p.out_dims = dims;
  p.out_minor_to_major = row_major(dims.size());
  p.out_bytes = 4;
  p.in_bytes = 4;
  p.num_inputs = 4 * groups;
  p.num_outputs = 3 * groups;
  p.vpu_ops = 14.0 * groups;
  return k;
}

TileKernel reduce_kernel(const ModelSpec& m, Rng& rng) {
  TileKernel k;
  HloBuilder& h = k.hlo;
  TileProblem& p = k.problem;
  p.kind = TileKind::Reduce;
  std::vector<int64_t> dims = activation_dims(rng);
  if (dims.size() == 1) dims.insert(dims.begin(), pick_size(rng, {8, 32, 128}));
  const int64_t r = static_cast<int64_t>(dims.size());
  // Reduce the minor dim (layer norm, softmax) or all but the minor (batch-norm stats).
  std::vector<int64_t> reduced;
  if (rng.chance(0.5)) {
    reduced = {r - 1};
  } else {
    for (int64_t i = 0; i + 1 < r; ++i) reduced.push_back(i);
  }
  int64_t extent = 1;
  for (int64_t d : reduced) extent *= dims[static_cast<size_t>(d)];
  int x = h.parameter(m.dtype, dims);
  p.num_inputs = 1;
  p.vpu_ops = 1;
  if (rng.chance(0.5)) {
    x = h.convert(x, ElemType::F32);
    p.vpu_ops += 1;
  }
  if (rng.chance(0.3)) {
    x = h.binary(op::kSubtract, x, h.parameter(h.node(x).type, dims));
    p.num_inputs += 1;
    p.vpu_ops += 1;
  }
  std::vector<int> pool = {x};
  elementwise_chain(h, pool, static_cast<int>(rng.randint(0, 30)), h.node(x).type, rng, p);
  x = pool.back();
  int y = h.reduce(x, h.constant(h.node(x).type), reduced);
  p.contraction = extent;
  p.in_bytes = elem_bytes(m.dtype);
  TileProblem tail;  // the epilogue runs once per output element: negligible, not counted
  tail.num_inputs = 0;
  y = epilogue(h, y, static_cast<int>(rng.randint(0, 3)), rng, tail);
  p.num_inputs += tail.num_inputs;
  set_output(p, h, y);
  finish_root(h, y, rng);
  return k;
}

// An iota fusion: one node that only writes its output (no operand, so no edge).
TileKernel iota_kernel(const ModelSpec& m, Rng& rng) {
  TileKernel k;
  HloNode n;
  n.opcode = op::kIota;
  n.type = rng.chance(0.5) ? ElemType::S32 : m.dtype;
  n.dims = activation_dims(rng);
  n.dimensions = {static_cast<int64_t>(n.dims.size()) - 1};  // the iota dimension
  n.is_root = true;
  const int id = k.hlo.add(std::move(n));
  TileProblem& p = k.problem;
  p.kind = TileKind::Loop;
  p.num_inputs = 0;
  p.vpu_ops = 1;
  set_output(p, k.hlo, id);
  return k;
}

TileKernel any_kernel(const ModelSpec& model, Rng& rng) {
  switch (rng.weighted({25, 25, 30, 6, 14})) {
    case 0:
      return conv_kernel(model, rng);
    case 1:
      return dot_kernel(model, rng);
    case 2:
      return loop_kernel(model, rng);
    case 3:
      return optimizer_kernel(model, rng);
    default:
      return reduce_kernel(model, rng);
  }
}

}  // namespace

double measurement_noise(Rng& rng) { return std::clamp(0.001 * rng.normal(), -0.009, 0.009); }

namespace {

// Index of value in the sorted candidate list (the nearest one not above it).
size_t index_of(const std::vector<int64_t>& cands, int64_t value) {
  size_t best = 0;
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i] <= value) best = i;
  return best;
}

// Draws one extent: near the default (the autotuner's neighbourhood) or anywhere.
// The autotuner explores around the default: mostly a step or two per dim, further out
// (up to max_reach candidate steps) when it measures many configs.
int64_t draw_extent(const std::vector<int64_t>& cands, int64_t def, int64_t max_reach, Rng& rng) {
  const double u = rng.uniform();
  const int64_t reach = 1 + static_cast<int64_t>(static_cast<double>(max_reach) * u * u * u);
  int64_t i = static_cast<int64_t>(index_of(cands, def)) + rng.randint(-reach, reach);
  i = std::clamp<int64_t>(i, 0, static_cast<int64_t>(cands.size()) - 1);
  return cands[static_cast<size_t>(i)];
}

double space_size(const TileProblem& p) {
  double s = static_cast<double>(k_tile_candidates(p).size());
  for (size_t i = 0; i < p.out_dims.size(); ++i)
    s *= static_cast<double>(tile_candidates(p, i).size());
  return s;
}

std::vector<TileConfig> sample_tilings(const TileProblem& p, int64_t max_configs, Rng& rng) {
  const TileConfig def = default_tile_config(p);
  std::vector<TileConfig> configs = {def};
  std::set<TileConfig> seen = {def};
  const auto kc = k_tile_candidates(p);
  std::vector<std::vector<int64_t>> oc;
  for (size_t i = 0; i < p.out_dims.size(); ++i) oc.push_back(tile_candidates(p, i));
  const int64_t want =
      std::min<int64_t>(max_configs, static_cast<int64_t>(std::min(space_size(p), 1e9)));
  // A neighbourhood of reach r holds (2r + 1)^dims configs: big enough for ~3x what we
  // want, but at most 4 steps out (further out lie only hopeless tilings).
  int64_t max_reach = 1;
  while (std::pow(2.0 * static_cast<double>(max_reach) + 1, static_cast<double>(oc.size() + 1)) <
             3.0 * static_cast<double>(want) &&
         max_reach < 4)
    ++max_reach;
  for (int64_t attempts = 0; static_cast<int64_t>(configs.size()) < want && attempts < 20 * want;
       ++attempts) {
    TileConfig c;
    for (size_t i = 0; i < oc.size(); ++i)
      c.out_tile.push_back(draw_extent(oc[i], def.out_tile[i], max_reach, rng));
    c.k_tile = draw_extent(kc, def.k_tile, max_reach, rng);
    if (seen.insert(c).second) configs.push_back(c);
  }
  // Small neighbourhoods: at least 8 configs (when the space has them), reaching further
  // out the longer it takes.
  const int64_t floor_count = std::min<int64_t>(want, 8);
  for (int64_t attempts = 0; static_cast<int64_t>(configs.size()) < floor_count && attempts < 2000;
       ++attempts) {
    const int64_t reach = 2 + attempts / 100;
    auto near = [&](const std::vector<int64_t>& cands, int64_t d) {
      int64_t i = static_cast<int64_t>(index_of(cands, d)) + rng.randint(-reach, reach);
      return cands[static_cast<size_t>(
          std::clamp<int64_t>(i, 0, static_cast<int64_t>(cands.size()) - 1))];
    };
    TileConfig c;
    for (size_t i = 0; i < oc.size(); ++i) c.out_tile.push_back(near(oc[i], def.out_tile[i]));
    c.k_tile = near(kc, def.k_tile);
    if (seen.insert(c).second) configs.push_back(c);
  }
  // The autotuner measured some configs twice: re-measured duplicates.
  if (configs.size() > 4 && rng.chance(0.3)) {
    int64_t copies = rng.randint(1, 3);
    for (int64_t i = 0; i < copies; ++i)
      configs.push_back(
          configs[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(configs.size()) - 1))]);
  }
  // Config 0 stays the default; the rest in no particular order.
  std::vector<TileConfig> rest(configs.begin() + 1, configs.end());
  rng.shuffle(rest);
  std::copy(rest.begin(), rest.end(), configs.begin() + 1);
  return configs;
}

int64_t round_significant(double x, int digits) {
  if (x <= 0) return 1;
  double scale = std::pow(10.0, std::floor(std::log10(x)) - (digits - 1));
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::round(x / scale) * scale)));
}

}  // namespace

TileKernel build_tile_kernel(const ModelSpec& model, Rng& rng) {
  // Kernels with fewer than 8 possible tilings are not worth autotuning (the release's
  // smallest files hold 8 configs): draw another.
  TileKernel k = any_kernel(model, rng);
  for (int i = 0; i < 20 && space_size(k.problem) < 8; ++i) k = any_kernel(model, rng);
  return k;
}

TileKernel build_single_node_kernel(const ModelSpec& model, Rng& rng) {
  return iota_kernel(model, rng);
}

TileKernel build_chain_kernel(const ModelSpec& model, int chain_ops, Rng& rng) {
  return loop_kernel(model, rng, chain_ops);
}

namespace {

// The file of a kernel whose tilings configs[] (config 0 the default) were measured.
TileGraph measure_tilings(const std::string& name, const TileKernel& kernel,
                          const std::vector<TileConfig>& configs, Rng& rng, std::vector<int64_t>* noise_free) {
  TileGraph g;
  g.name = name;
  kernel.hlo.fill(g);
  const TileProblem& p = kernel.problem;
  const int64_t normalizer = round_significant(tile_runtime_ns(p, configs[0]), 2);
  for (const auto& c : configs) {
    auto f = tile_config_features(p, c);
    g.config_feat.insert(g.config_feat.end(), f.begin(), f.end());
    const double exact = tile_runtime_ns(p, c);
    g.config_runtime.push_back(stored_runtime_ns(exact * (1.0 + measurement_noise(rng))));
    if (noise_free) noise_free->push_back(stored_runtime_ns(exact));
    g.config_runtime_normalizers.push_back(normalizer);
  }
  return g;
}

}  // namespace

TileGraph make_tile_graph(const std::string& name, const TileKernel& kernel, int64_t max_configs,
                          Rng& rng, std::vector<int64_t>* noise_free) {
  const auto configs = sample_tilings(kernel.problem, max_configs, rng);
  return measure_tilings(name, kernel, configs, rng, noise_free);
}

TileGraph make_remeasured_tile_graph(const std::string& name, const TileKernel& kernel,
                                     int64_t copies, Rng& rng, std::vector<int64_t>* noise_free) {
  const std::vector<TileConfig> configs(static_cast<size_t>(std::max<int64_t>(1, copies)),
                                        default_tile_config(kernel.problem));
  return measure_tilings(name, kernel, configs, rng, noise_free);
}

}  // namespace tpuperf::synth
