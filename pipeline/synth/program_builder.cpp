#include "pipeline/synth/program_builder.h"

#include <utility>

namespace tpuperf::synth {

void Net::lambdas() {
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

int Net::conv(int x, int w, const Window& win, std::vector<int64_t> out, int64_t groups) {
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

int Net::dot(int a, int b, std::vector<int64_t> out, int64_t ka, int64_t pref_b) {
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

int Net::reshape(int x, std::vector<int64_t> out) {
  int id = h.reshape(x, std::move(out));
  LayoutNode n;
  n.is_reshape = true;
  n.tensors[0] = {dims(id), elem_bytes(h.node(id).type), -1};
  n.tensors[1] = {dims(x), elem_bytes(h.node(x).type), -1};
  n.has_slot[1] = true;
  register_node(id, n, "");
  return id;
}

int Net::bn_act(int y, bool act) {
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

int Net::layernorm(int x) {
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

int Net::adapt(int g, int target) {
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

int Net::update(int w, int grad) {
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

void Net::register_node(int id, LayoutNode n, const std::string& extra) {
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

}  // namespace tpuperf::synth
