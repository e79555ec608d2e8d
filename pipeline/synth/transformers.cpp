// The "nlp" collection's programs: BERT-style transformer encoders (embedding, attention,
// feed-forward, layer norm), forward and, when training, a backward pass with weight updates.
#include "pipeline/synth/program_families.h"

#include <vector>

namespace tpuperf::synth {

namespace {

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

}  // namespace

void build_transformer(Net& net, const ModelSpec& m) {
  net.lambdas();
  Transformer t(net, m);
  int logits = t.forward();
  std::vector<int> outs = {logits};
  if (m.training) outs = t.backward(logits);
  outs.insert(outs.end(), net.state.begin(), net.state.end());
  net.h.node(net.h.tuple(outs)).is_root = true;
}

}  // namespace tpuperf::synth
