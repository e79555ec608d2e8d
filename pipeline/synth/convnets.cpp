// The "xla" collection's programs: convolution networks (bottleneck, depthwise, inception,
// plain, dense blocks), forward and, when training, a backward pass with weight updates.
#include "pipeline/synth/program_families.h"

#include <algorithm>
#include <vector>

namespace tpuperf::synth {

namespace {

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

}  // namespace

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

}  // namespace tpuperf::synth
