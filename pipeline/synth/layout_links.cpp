#include "pipeline/synth/layout_links.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace tpuperf::synth {

namespace {

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

}  // namespace

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

}  // namespace tpuperf::synth
