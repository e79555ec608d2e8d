#include "pipeline/synth/layout_gen.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "pipeline/synth/tile_gen.h"

namespace tpuperf::synth {

namespace {

// The program under construction plus the bookkeeping of its configurable nodes.
class Net {
 public:
  Net(const ModelSpec& m, int64_t max_config_nodes, const ProgramShape& shape)
      : m_(m), max_cfg_(max_config_nodes), shape_(shape) {}

  HloBuilder h;
  LayoutProblem prob;

  ElemType dt() const { return m_.dtype; }
  int64_t nc() const { return static_cast<int64_t>(prob.nodes.size()); }
  bool full(double fraction = 1.0) const {
    return static_cast<double>(nc()) >= fraction * static_cast<double>(max_cfg_);
  }

  // The scalar reduction computations (add, max) that reduces call, then the entry. The
  // shape may ask for the entry alone (the reductions' bodies are then not in the graph,
  // as when a dump holds only the entry) and for unused entry parameters first.
  void lambdas() {
    if (!shape_.one_computation) {
      for (uint8_t o : {op::kAdd, op::kMaximum}) {
        h.begin_computation();
        int a = h.parameter(ElemType::F32, {}), b = h.parameter(ElemType::F32, {});
        h.node(h.binary(o, a, b)).is_root = true;
      }
    }
    h.begin_computation();
    for (int64_t i = 0; i < shape_.isolated_nodes; ++i) h.parameter(dt(), {8 * (1 + i % 4), 128});
  }

  const std::vector<int64_t>& dims(int id) const { return h.node(id).dims; }

  int scalar(const std::vector<int64_t>& d) { return h.broadcast(h.constant(dt()), d, {}); }
  int vec(int64_t size, const std::vector<int64_t>& d, int64_t dim) {
    return h.broadcast(h.parameter(dt(), {size}), d, {dim});
  }
  int reduce(int x, std::vector<int64_t> reduced) {
    return h.reduce(x, h.constant(h.node(x).type), std::move(reduced));
  }

  int conv(int x, int w, const Window& win, std::vector<int64_t> out, int64_t groups) {
    ConvDims cd;
    int id = h.convolution(x, w, win, cd, std::move(out), dt(), groups);
    LayoutNode n;
    n.flops = 2.0 * static_cast<double>(num_elements(dims(id))) *
              static_cast<double>(dims(w)[2] * dims(w)[0] * dims(w)[1]);
    n.tensors[0] = {dims(id), elem_bytes(dt()), cd.out_feature};
    n.tensors[1] = {dims(x), elem_bytes(dt()), cd.in_feature};
    n.tensors[2] = {dims(w), elem_bytes(dt()), cd.k_out_feature};
    n.has_slot[1] = n.has_slot[2] = true;
    register_node(id, n, std::to_string(win.stride[0]) + "/" + std::to_string(groups));
    return id;
  }

  // out = a . b contracting a's dim ka; pref_b is b's dim that becomes the output's minor.
  int dot(int a, int b, std::vector<int64_t> out, int64_t ka, int64_t pref_b) {
    int id = h.dot(a, b, std::move(out), dt());
    LayoutNode n;
    n.flops = 2.0 * static_cast<double>(num_elements(dims(id))) *
              static_cast<double>(dims(a)[static_cast<size_t>(ka)]);
    n.tensors[0] = {dims(id), elem_bytes(dt()), static_cast<int64_t>(dims(id).size()) - 1};
    n.tensors[1] = {dims(a), elem_bytes(dt()), ka};
    n.tensors[2] = {dims(b), elem_bytes(dt()), pref_b};
    n.has_slot[1] = n.has_slot[2] = true;
    register_node(id, n, "");
    return id;
  }

  int reshape(int x, std::vector<int64_t> out) {
    int id = h.reshape(x, std::move(out));
    LayoutNode n;
    n.is_reshape = true;
    n.tensors[0] = {dims(id), elem_bytes(h.node(id).type), -1};
    n.tensors[1] = {dims(x), elem_bytes(h.node(x).type), -1};
    n.has_slot[1] = true;
    register_node(id, n, "");
    return id;
  }

  // Batch-norm (inference: scale and offset) and relu.
  int bn_act(int y, bool act) {
    const auto d = dims(y);
    const int64_t c = d.back(), last = static_cast<int64_t>(d.size()) - 1;
    if (m_.training) {
      // Batch statistics over (N, H, W): the mean on the flattened activations, the
      // variance of the centred ones, then normalization.
      const std::vector<int64_t> cd = {c};
      int flat = reshape(y, {num_elements(d) / c, c});
      int mean = h.binary(op::kDivide, reduce(flat, {0}), scalar(cd));
      y = h.binary(op::kSubtract, y, h.broadcast(mean, d, {last}));
      int var = h.binary(op::kDivide, reduce(h.binary(op::kMultiply, y, y), {0, 1, 2}), scalar(cd));
      int inv = h.unary(op::kRsqrt, h.binary(op::kAdd, var, scalar(cd)));
      y = h.binary(op::kMultiply, y, h.broadcast(inv, d, {last}));
    }
    y = h.binary(op::kMultiply, y, vec(c, d, last));
    y = h.binary(op::kAdd, y, vec(c, d, last));
    if (act) y = h.binary(op::kMaximum, y, scalar(d));
    return y;
  }

  int layernorm(int x) {
    const auto d = dims(x);
    const int64_t last = static_cast<int64_t>(d.size()) - 1;
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < last; ++i) keep.push_back(i);
    std::vector<int64_t> rd(d.begin(), d.end() - 1);
    int mean = h.binary(op::kDivide, reduce(x, {last}), scalar(rd));
    int xc = h.binary(op::kSubtract, x, h.broadcast(mean, d, keep));
    int var = h.binary(op::kMultiply, reduce(h.binary(op::kMultiply, xc, xc), {last}), scalar(rd));
    int inv = h.unary(op::kRsqrt, h.binary(op::kAdd, var, scalar(rd)));
    int y = h.binary(op::kMultiply, xc, h.broadcast(inv, d, keep));
    y = h.binary(op::kMultiply, y, vec(d.back(), d, last));
    return h.binary(op::kAdd, y, vec(d.back(), d, last));
  }

  // Makes g the shape of target for the backward pass: a reshape when the sizes agree,
  // select-and-scatter (pool gradient) when the ranks do, else a reduce + broadcast.
  int adapt(int g, int target) {
    const std::vector<int64_t> t = dims(target);  // a copy: adding nodes reallocates
    if (dims(g) == t) return g;
    if (num_elements(dims(g)) == num_elements(t)) return reshape(g, t);
    if (dims(g).size() == t.size()) {
      HloNode n;
      n.opcode = op::kSelectAndScatter;
      n.type = h.node(g).type;
      n.dims = t;
      n.operands = {target, g, h.constant(h.node(g).type)};
      n.has_window = true;
      n.window = square_window(3, 2);
      return h.add(std::move(n));
    }
    std::vector<int64_t> all;
    for (size_t i = 0; i < dims(g).size(); ++i) all.push_back(static_cast<int64_t>(i));
    return h.broadcast(reduce(g, all), t, {});
  }

  // Weight update: w - lr * grad (all-reduced first on multi-chip runs).
  // Adam: the moments are optimizer state, written back with the weights.
  int update(int w, int grad) {
    if (m_.sharded) grad = h.unary(op::kAllReduce, grad);
    const std::vector<int64_t> d = dims(w);
    auto mix = [&](int state, int value) {
      return h.binary(op::kAdd, h.binary(op::kMultiply, state, scalar(d)),
                      h.binary(op::kMultiply, value, scalar(d)));
    };
    int m = mix(h.parameter(dt(), d), grad);
    int v = mix(h.parameter(dt(), d), h.binary(op::kMultiply, grad, grad));
    int step = h.binary(op::kDivide, m, h.binary(op::kAdd, h.unary(op::kSqrt, v), scalar(d)));
    state.push_back(m);
    state.push_back(v);
    return h.binary(op::kSubtract, w, h.binary(op::kMultiply, step, scalar(d)));
  }

  std::vector<int> state;  // optimizer state outputs

 private:
  // Nodes with the same signature (op, shapes, MXU preferences) form one group: the
  // search assigns them the same layouts.
  void register_node(int id, LayoutNode n, const std::string& extra) {
    n.node_id = id;
    std::string key = std::to_string(h.node(id).opcode) + "|" + extra;
    for (int s = 0; s < 3; ++s) {
      if (!n.has_slot[s]) continue;
      key += "|";
      for (int64_t d : n.tensors[s].dims) key += std::to_string(d) + ",";
      key += ":" + std::to_string(n.tensors[s].preferred_minor);
    }
    auto it = group_of_.find(key);
    if (it == group_of_.end())
      it = group_of_.emplace(key, static_cast<int>(group_of_.size())).first;
    n.group = it->second;
    prob.nodes.push_back(n);
  }

  const ModelSpec& m_;
  int64_t max_cfg_;
  ProgramShape shape_;
  std::map<std::string, int> group_of_;
};

// ------------------------------------------------------------------- convolution networks

struct ConvRecord {
  int x, w, y;
  int64_t k, stride, groups;
};

class ConvNet {
 public:
  ConvNet(Net& net, const ModelSpec& m, Rng& rng) : n_(net), m_(m), rng_(rng) {}

  int conv_bn(int x, int64_t cout, int64_t k, int64_t stride, int64_t groups, bool act) {
    const auto d = n_.dims(x);
    const int64_t ho = (d[1] + stride - 1) / stride;
    int w = n_.h.parameter(n_.dt(), {k, k, d[3] / groups, cout});
    int y = n_.conv(x, w, square_window(k, stride), {d[0], ho, ho, cout}, groups);
    records.push_back({x, w, y, k, stride, groups});
    return n_.bn_act(y, act);
  }

  int pool(int x, int64_t stride) {
    auto d = n_.dims(x);
    d[1] = (d[1] + stride - 1) / stride;
    d[2] = d[1];
    return n_.h.reduce_window(x, n_.h.constant(n_.dt()), square_window(3, stride), d);
  }

  int concat(const std::vector<int>& parts) {
    HloNode c;
    c.opcode = op::kConcatenate;
    c.type = n_.dt();
    c.dims = n_.dims(parts[0]);
    c.dims[3] = 0;
    for (int p : parts) c.dims[3] += n_.dims(p)[3];
    c.operands = parts;
    c.dimensions = {3};
    return n_.h.add(std::move(c));
  }

  int block(int x, int64_t cout, int64_t stride) {
    const int64_t cin = n_.dims(x)[3];
    switch (m_.arch) {
      case Arch::Bottleneck: {
        int y = conv_bn(x, std::max<int64_t>(16, cout / 4), 1, 1, 1, true);
        y = conv_bn(y, std::max<int64_t>(16, cout / 4), 3, stride, 1, true);
        y = conv_bn(y, cout, 1, 1, 1, false);
        int skip = (cin != cout || stride != 1) ? conv_bn(x, cout, 1, stride, 1, false) : x;
        int s = n_.h.binary(op::kAdd, y, skip);
        return n_.h.binary(op::kMaximum, s, n_.scalar(n_.dims(s)));
      }
      case Arch::Depthwise: {
        const int64_t mid = cin * 4;
        int y = conv_bn(x, mid, 1, 1, 1, true);
        y = conv_bn(y, mid, 3, stride, mid, true);
        y = conv_bn(y, cout, 1, 1, 1, false);
        if (cin == cout && stride == 1) y = n_.h.binary(op::kAdd, y, x);
        return y;
      }
      case Arch::Inception: {
        const int64_t c4 = std::max<int64_t>(16, cout / 4);
        int b1 = conv_bn(x, c4, 1, stride, 1, true);
        int b2 = conv_bn(conv_bn(x, c4, 1, 1, 1, true), c4, 3, stride, 1, true);
        int b3 = conv_bn(conv_bn(conv_bn(x, c4, 1, 1, 1, true), c4, 3, 1, 1, true), c4, 3, stride,
                         1, true);
        int b4 = conv_bn(pool(x, stride), cout - 3 * c4, 1, 1, 1, true);
        return concat({b1, b2, b3, b4});
      }
      case Arch::Dense: {
        if (stride != 1 || cin >= 1024) {  // transition: halve the channels, pool
          int y = conv_bn(x, std::max<int64_t>(32, cin / 2), 1, 1, 1, true);
          return stride != 1 ? pool(y, stride) : y;
        }
        int y = conv_bn(conv_bn(x, 128, 1, 1, 1, true), 32, 3, 1, 1, true);
        return concat({x, y});
      }
      default:
        return conv_bn(x, cout, 3, stride, 1, true);
    }
  }

  // Forward network until the node or configurable-node budget is used.
  int forward(int image, int64_t target_nodes) {
    int x = conv_bn(image, rng_.chance(0.5) ? 32 : 64, rng_.chance(0.5) ? 7 : 3, 2, 1, true);
    x = pool(x, 2);
    int64_t channels = n_.dims(x)[3] * 2;
    const int64_t per_stage = rng_.randint(2, 5);
    for (int64_t b = 0; n_.h.size() < target_nodes || n_.nc() < 20; ++b) {
      if (n_.full(m_.training ? 0.3 : 0.9)) break;
      bool down = b > 0 && b % per_stage == 0 && n_.dims(x)[1] > 7;
      if (down) channels = std::min<int64_t>(2048, channels * 2);
      x = block(x, channels, down ? 2 : 1);
    }
    return x;
  }

  // Global pool, classifier, loss.
  int head(int x, int& logits_w, int& gap_out) {
    const auto d = n_.dims(x);
    int flat = n_.reshape(x, {d[0], d[1] * d[2], d[3]});
    int gap = n_.h.binary(op::kDivide, n_.reduce(flat, {1}), n_.scalar({d[0], d[3]}));
    gap_out = gap;
    logits_w = n_.h.parameter(n_.dt(), {d[3], 1000});
    int logits = n_.dot(gap, logits_w, {d[0], 1000}, 1, 1);
    return n_.h.binary(op::kAdd, logits, n_.vec(1000, {d[0], 1000}, 1));
  }

  // Backward pass along the recorded convolutions (a chain approximation of the real
  // gradient graph) plus weight updates; returns the updated weights.
  std::vector<int> backward(int logits, int gap, int logits_w, int image, int features) {
    auto& h = n_.h;
    const auto ld = n_.dims(logits);
    int mx = n_.reduce(logits, {1});
    int e = h.unary(op::kExp, h.binary(op::kSubtract, logits, h.broadcast(mx, ld, {0})));
    int s = n_.reduce(e, {1});
    int g = h.binary(op::kSubtract, h.binary(op::kDivide, e, h.broadcast(s, ld, {0})),
                     h.parameter(n_.dt(), ld));
    std::vector<int> outs = {h.unary(op::kLog, s)};
    int d_gap = n_.dot(g, logits_w, n_.dims(gap), 1, 0);
    int d_w = n_.dot(gap, g, n_.dims(logits_w), 0, 1);
    outs.push_back(n_.update(logits_w, d_w));
    g = h.broadcast(d_gap, n_.dims(features), {0, 3});
    for (size_t i = records.size(); i-- > 0;) {
      const ConvRecord& r = records[i];
      g = n_.adapt(g, r.y);
      int zero = n_.scalar(n_.dims(r.y));
      g = h.add([&] {
        HloNode sel;
        sel.opcode = op::kSelect;
        sel.type = n_.dt();
        sel.dims = n_.dims(r.y);
        sel.operands = {h.binary(op::kCompare, r.y, zero), g, zero};
        return sel;
      }());
      // Batch-norm gradient: scale, minus the per-channel mean of the gradient.
      const std::vector<int64_t> yd = n_.dims(r.y);
      const std::vector<int64_t> cd = {yd.back()};
      g = h.binary(op::kMultiply, g, n_.vec(yd.back(), yd, 3));
      int mean = h.binary(op::kDivide, n_.reduce(g, {0, 1, 2}), n_.scalar(cd));
      g = h.binary(op::kSubtract, g, h.broadcast(mean, yd, {3}));
      Window wgrad = square_window(r.k, 1);
      int dw = n_.conv(r.x, g, wgrad, n_.dims(r.w), r.groups);
      outs.push_back(n_.update(r.w, dw));
      if (r.x == image) continue;
      Window wdata = square_window(r.k, 1, true);
      wdata.base_dilation = {r.stride, r.stride};
      g = n_.conv(g, r.w, wdata, n_.dims(r.x), r.groups);
    }
    return outs;
  }

  std::vector<ConvRecord> records;

 private:
  Net& n_;
  const ModelSpec& m_;
  Rng& rng_;
};

void build_convnet(Net& net, const ModelSpec& m, int64_t target_nodes, Rng& rng) {
  net.lambdas();
  ConvNet cn(net, m, rng);
  int image = net.h.parameter(m.dtype, {m.batch, m.image, m.image, 3});
  int x = cn.forward(image, m.training ? target_nodes * 2 / 5 : target_nodes);
  int logits_w = 0, gap = 0;
  int logits = cn.head(x, logits_w, gap);
  std::vector<int> outs = {logits};
  if (m.training) outs = cn.backward(logits, gap, logits_w, image, x);
  outs.insert(outs.end(), net.state.begin(), net.state.end());
  net.h.node(net.h.tuple(outs)).is_root = true;
}

// ---------------------------------------------------------------------------- transformers

struct DotRecord {
  int a, b, y;
  int64_t ka, pref_b;
  bool weight;  // b is a parameter (gets an update)
};

class Transformer {
 public:
  Transformer(Net& net, const ModelSpec& m) : n_(net), m_(m) {
    b_ = m.batch;
    s_ = m.seq;
    hd_ = m.hidden;
    a_ = m.heads;
    d_ = m.hidden / m.heads;
  }

  int dense(int x, int64_t out) {
    const int64_t in = n_.dims(x).back();
    int w = n_.h.parameter(n_.dt(), {in, out});
    std::vector<int64_t> od = n_.dims(x);
    od.back() = out;
    int y = n_.dot(x, w, od, static_cast<int64_t>(od.size()) - 1, 1);
    dots.push_back({x, w, y, static_cast<int64_t>(od.size()) - 1, 1, true});
    return n_.h.binary(op::kAdd, y, n_.vec(out, od, static_cast<int64_t>(od.size()) - 1));
  }

  int heads(int flat) {
    int r = n_.reshape(flat, {b_, s_, a_, d_});
    return n_.h.transpose(r, {0, 2, 1, 3});
  }

  int attention(int x) {
    auto& h = n_.h;
    int flat = n_.reshape(x, {b_ * s_, hd_});
    int q = heads(dense(flat, hd_)), k = heads(dense(flat, hd_)), v = heads(dense(flat, hd_));
    std::vector<int64_t> sd = {b_, a_, s_, s_};
    int sc = n_.dot(q, k, sd, 3, 2);
    dots.push_back({q, k, sc, 3, 2, false});
    sc = h.binary(op::kMultiply, sc, n_.scalar(sd));
    sc = h.binary(op::kAdd, sc, h.broadcast(h.parameter(n_.dt(), {b_, s_}), sd, {0, 3}));
    int mx = n_.reduce(sc, {3});
    int e = h.unary(op::kExp, h.binary(op::kSubtract, sc, h.broadcast(mx, sd, {0, 1, 2})));
    int p = h.binary(op::kDivide, e, h.broadcast(n_.reduce(e, {3}), sd, {0, 1, 2}));
    int ctx = n_.dot(p, v, {b_, a_, s_, d_}, 3, 3);
    dots.push_back({p, v, ctx, 3, 3, false});
    ctx = n_.reshape(h.transpose(ctx, {0, 2, 1, 3}), {b_ * s_, hd_});
    int o = n_.reshape(dense(ctx, hd_), {b_, s_, hd_});
    return n_.layernorm(h.binary(op::kAdd, x, o));
  }

  int ffn(int x) {
    auto& h = n_.h;
    int f = dense(n_.reshape(x, {b_ * s_, hd_}), 4 * hd_);
    const auto fd = n_.dims(f);
    int cube = h.binary(op::kMultiply, h.binary(op::kMultiply, f, f), f);
    int inner = h.binary(op::kAdd, f, h.binary(op::kMultiply, cube, n_.scalar(fd)));
    int th = h.binary(op::kAdd, h.unary(op::kTanh, inner), n_.scalar(fd));
    f = h.binary(op::kMultiply, h.binary(op::kMultiply, f, th), n_.scalar(fd));
    f = n_.reshape(dense(f, hd_), {b_, s_, hd_});
    return n_.layernorm(h.binary(op::kAdd, x, f));
  }

  int forward() {
    auto& h = n_.h;
    int ids = h.parameter(ElemType::S32, {b_, s_});
    int table = h.parameter(n_.dt(), {30522, hd_});
    HloNode g;
    g.opcode = op::kGather;
    g.type = n_.dt();
    g.dims = {b_, s_, hd_};
    g.operands = {table, ids};
    int x = h.add(std::move(g));
    x = h.binary(op::kAdd, x, h.broadcast(h.parameter(n_.dt(), {s_, hd_}), {b_, s_, hd_}, {1, 2}));
    x = n_.layernorm(x);
    for (int64_t l = 0; l < m_.layers; ++l) x = ffn(attention(x));
    int pooled = n_.h.binary(op::kDivide, n_.reduce(x, {1}), n_.scalar({b_, hd_}));
    return dense(pooled, 2);
  }

  std::vector<int> backward(int logits) {
    auto& h = n_.h;
    int g = h.binary(op::kSubtract, logits, h.parameter(n_.dt(), n_.dims(logits)));
    std::vector<int> outs = {n_.reduce(h.binary(op::kMultiply, g, g), {0, 1})};
    for (size_t i = dots.size(); i-- > 0;) {
      const DotRecord r = dots[i];
      g = n_.adapt(g, r.y);
      // Copies: adding nodes reallocates the node list.
      const std::vector<int64_t> ad = n_.dims(r.a), bd = n_.dims(r.b);
      const int64_t last = static_cast<int64_t>(ad.size()) - 1;
      int db = n_.dot(r.a, g, bd, last - 1 == r.ka ? last : last - 1, last);
      if (r.weight) outs.push_back(n_.update(r.b, db));
      g = n_.dot(g, r.b, ad, last, r.pref_b == last ? last - 1 : last);
    }
    return outs;
  }

  std::vector<DotRecord> dots;

 private:
  Net& n_;
  const ModelSpec& m_;
  int64_t b_, s_, hd_, a_, d_;
};

void build_transformer(Net& net, const ModelSpec& m) {
  net.lambdas();
  Transformer t(net, m);
  int logits = t.forward();
  std::vector<int> outs = {logits};
  if (m.training) outs = t.backward(logits);
  outs.insert(outs.end(), net.state.begin(), net.state.end());
  net.h.node(net.h.tuple(outs)).is_root = true;
}

// ----------------------------------------------------------------------- links and costs

bool layout_transparent(uint8_t opcode) {
  switch (opcode) {
    case op::kAdd:
    case op::kMultiply:
    case op::kSubtract:
    case op::kMaximum:
    case op::kMinimum:
    case op::kDivide:
    case op::kConvert:
    case op::kExp:
    case op::kTanh:
    case op::kNegate:
    case op::kRsqrt:
    case op::kSqrt:
    case op::kLog:
    case op::kSelect:
    case op::kCompare:
    case op::kAllReduce:
    case op::kCopy:
      return true;
    default:
      return false;
  }
}

// For every node, the configurable nodes (or -1: a fixed row-major tensor) whose output
// reaches it through element-wise ops of the same shape: those must agree on a layout.
std::vector<std::vector<int>> layout_sources(const HloBuilder& h, const std::vector<int>& cfg_of) {
  std::vector<std::vector<int>> src(static_cast<size_t>(h.size()));
  for (int v = 0; v < h.size(); ++v) {
    auto& s = src[static_cast<size_t>(v)];
    const HloNode& n = h.node(v);
    if (cfg_of[static_cast<size_t>(v)] >= 0) {
      s = {cfg_of[static_cast<size_t>(v)]};
      continue;
    }
    if (layout_transparent(n.opcode)) {
      for (int u : n.operands)
        if (h.node(u).dims == n.dims && h.node(u).type != ElemType::Tuple)
          for (int x : src[static_cast<size_t>(u)]) s.push_back(x);
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
      if (s.size() > 4) s.resize(4);  // bound the fan-in of long residual chains
    }
    if (s.empty()) s = {-1};
  }
  return src;
}

void add_links(const HloBuilder& h, LayoutProblem& p) {
  std::vector<int> cfg_of(static_cast<size_t>(h.size()), -1);
  for (size_t i = 0; i < p.nodes.size(); ++i)
    cfg_of[static_cast<size_t>(p.nodes[i].node_id)] = static_cast<int>(i);
  const auto src = layout_sources(h, cfg_of);
  std::set<std::tuple<int, int, int>> seen;
  auto link = [&](int producer, int consumer, int slot, const std::vector<int64_t>& dims,
                  int bytes) {
    if (dims.size() < 2 || !seen.insert({producer, consumer, slot}).second) return;
    LayoutLink l;
    l.producer = producer;
    l.consumer = consumer;
    l.slot = slot;
    l.dims = dims;
    l.elements = num_elements(dims);
    l.bytes = bytes;
    p.links.push_back(l);
  };
  for (size_t ci = 0; ci < p.nodes.size(); ++ci) {
    const LayoutNode& c = p.nodes[ci];
    const HloNode& n = h.node(c.node_id);
    for (int s = 1; s < 3; ++s) {
      if (!c.has_slot[s]) continue;
      for (int x : src[static_cast<size_t>(n.operands[static_cast<size_t>(s - 1)])])
        link(x, static_cast<int>(ci), s, c.tensors[s].dims, c.tensors[s].bytes);
    }
  }
  for (int v = 0; v < h.size(); ++v) {
    const HloNode& n = h.node(v);
    if (cfg_of[static_cast<size_t>(v)] >= 0 || layout_transparent(n.opcode)) continue;
    for (int u : n.operands)
      for (int x : src[static_cast<size_t>(u)])
        if (x >= 0) link(x, -1, 0, h.node(u).dims, elem_bytes(h.node(u).type));
  }
}

// The work of everything that is not configurable: each op reads its operands and
// writes its result once.
double base_cost_ns(const HloBuilder& h, const LayoutProblem& p) {
  std::vector<bool> cfg(static_cast<size_t>(h.size()), false);
  for (const auto& n : p.nodes) cfg[static_cast<size_t>(n.node_id)] = true;
  const TpuCore& hw = tpu_core();
  double t = 0;
  for (int v = 0; v < h.size(); ++v) {
    const HloNode& n = h.node(v);
    if (cfg[static_cast<size_t>(v)] || n.opcode == op::kParameter || n.opcode == op::kConstant ||
        n.opcode == op::kTuple || n.opcode == op::kBroadcast)
      continue;
    double bytes = static_cast<double>(num_elements(n.dims)) * elem_bytes(n.type);
    for (int u : n.operands)
      bytes += static_cast<double>(num_elements(h.node(u).dims)) * elem_bytes(h.node(u).type);
    t += 150.0 + bytes / hw.hbm_bytes_per_ns;
  }
  return t;
}

// ------------------------------------------------------------------------ options, configs

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

void append_config_rows(const LayoutProblem& p, const std::vector<int>& choice,
                        std::vector<int8_t>& out) {
  for (const auto& n : p.nodes) {
    const LayoutChoice& c = p.options[static_cast<size_t>(n.group)]
                                     [static_cast<size_t>(choice[static_cast<size_t>(n.group)])];
    for (int s = 0; s < 3; ++s)
      for (size_t k = 0; k < 6; ++k)
        out.push_back(!c.is_default && k < c.perm[s].size() ? static_cast<int8_t>(c.perm[s][k])
                                                            : int8_t{-1});
  }
}

LayoutGraph start_layout_graph(const std::string& name, const LayoutProgram& program) {
  LayoutGraph g;
  g.name = name;
  program.hlo.fill(g);
  g.node_splits = program.hlo.splits();
  for (const auto& n : program.problem.nodes) g.node_config_ids.push_back(n.node_id);
  return g;
}

LayoutProgram build_layout_program(const ModelSpec& model, int64_t target_nodes,
                                   int64_t max_config_nodes, Rng& rng, const ProgramShape& shape) {
  LayoutProgram prog;
  Net net(model, max_config_nodes, shape);
  if (model.arch == Arch::Transformer) {
    build_transformer(net, model);
  } else {
    build_convnet(net, model, target_nodes, rng);
  }
  add_links(net.h, net.prob);
  net.prob.base_ns = base_cost_ns(net.h, net.prob);
  prog.hlo = std::move(net.h);
  prog.problem = std::move(net.prob);
  return prog;
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

namespace {

// Appends the configs' rows and their measured runtimes (~0.1% measurement noise), and
// to noise_free (when given) the runtimes without the noise.
void measure_choices(const LayoutProblem& p, const std::vector<std::vector<int>>& choices,
                     LayoutGraph& g, Rng& rng, std::vector<int64_t>* noise_free) {
  LayoutCostModel model(p);
  g.node_config_feat.reserve(choices.size() * p.nodes.size() * kLayoutConfigDim);
  for (const auto& c : choices) {
    append_config_rows(p, c, g.node_config_feat);
    const double exact = model.runtime_ns(c);
    g.config_runtime.push_back(stored_runtime_ns(exact * (1.0 + measurement_noise(rng))));
    if (noise_free) noise_free->push_back(stored_runtime_ns(exact));
  }
}

}  // namespace

LayoutGraph make_layout_graph(const std::string& name, const LayoutProgram& program,
                              const std::string& search, int64_t num_configs, Rng& rng,
                              std::vector<int64_t>* noise_free) {
  LayoutGraph g = start_layout_graph(name, program);
  const LayoutProblem& p = program.problem;

  // The default configuration measured many times, some others re-measured.
  const int64_t defaults = std::max<int64_t>(
      2, std::llround(static_cast<double>(num_configs) * rng.uniform(0.01, 0.04)));
  const int64_t remeasured =
      std::llround(static_cast<double>(num_configs) * rng.uniform(0.01, 0.05));
  const int64_t fresh = std::max<int64_t>(1, num_configs - defaults - remeasured);
  std::vector<std::vector<int>> choices;
  for (int64_t i = 0; i < fresh; ++i) choices.push_back(sample_choice(p, search, rng));
  for (int64_t i = 0; i < defaults; ++i) choices.emplace_back(p.options.size(), 0);
  for (int64_t i = 0; static_cast<int64_t>(choices.size()) < num_configs; ++i)
    choices.push_back(choices[static_cast<size_t>(rng.randint(0, fresh - 1))]);
  choices.resize(static_cast<size_t>(num_configs));
  rng.shuffle(choices);
  measure_choices(p, choices, g, rng, noise_free);
  return g;
}

LayoutGraph make_remeasured_layout_graph(const std::string& name, const LayoutProgram& program,
                                         const std::string& search, int64_t copies, Rng& rng,
                                         std::vector<int64_t>* noise_free) {
  LayoutGraph g = start_layout_graph(name, program);
  const std::vector<int> one = sample_choice(program.problem, search, rng);
  measure_choices(program.problem,
                  std::vector<std::vector<int>>(static_cast<size_t>(std::max<int64_t>(1, copies)), one),
                  g, rng, noise_free);
  return g;
}

}  // namespace tpuperf::synth
