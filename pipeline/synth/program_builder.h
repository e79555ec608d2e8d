// The program under construction (an HloBuilder) and the bookkeeping of its configurable
// nodes (convolution, dot, reshape) for the layout problem: the building blocks the
// program families (program_families.h) compose. Internal to the layout generator.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/synth/hlo.h"
#include "pipeline/synth/layout_gen.h"
#include "pipeline/synth/models.h"
#include "pipeline/synth/simulator.h"

namespace tpuperf::synth {

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
  void lambdas();

  const std::vector<int64_t>& dims(int id) const { return h.node(id).dims; }

  int scalar(const std::vector<int64_t>& d) { return h.broadcast(h.constant(dt()), d, {}); }
  int vec(int64_t size, const std::vector<int64_t>& d, int64_t dim) {
    return h.broadcast(h.parameter(dt(), {size}), d, {dim});
  }
  int reduce(int x, std::vector<int64_t> reduced) {
    return h.reduce(x, h.constant(h.node(x).type), std::move(reduced));
  }

  int conv(int x, int w, const Window& win, std::vector<int64_t> out, int64_t groups);

  // out = a . b contracting a's dim ka; pref_b is b's dim that becomes the output's minor.
  int dot(int a, int b, std::vector<int64_t> out, int64_t ka, int64_t pref_b);

  int reshape(int x, std::vector<int64_t> out);

  // Batch-norm (inference: scale and offset) and relu.
  int bn_act(int y, bool act);

  int layernorm(int x);

  // Makes g the shape of target for the backward pass: a reshape when the sizes agree,
  // select-and-scatter (pool gradient) when the ranks do, else a reduce + broadcast.
  int adapt(int g, int target);

  // Weight update: w - lr * grad (all-reduced first on multi-chip runs).
  // Adam: the moments are optimizer state, written back with the weights.
  int update(int w, int grad);

  std::vector<int> state;  // optimizer state outputs

 private:
  // Nodes with the same signature (op, shapes, MXU preferences) form one group: the
  // search assigns them the same layouts.
  void register_node(int id, LayoutNode n, const std::string& extra);

  const ModelSpec& m_;
  int64_t max_cfg_;
  ProgramShape shape_;
  std::map<std::string, int> group_of_;
};

}  // namespace tpuperf::synth
