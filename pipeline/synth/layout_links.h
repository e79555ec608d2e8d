// What a built program adds to its layout problem beyond the configurable nodes: the links
// between nodes that must agree on a layout (through layout-transparent element-wise ops)
// and the cost of everything not configurable. Internal to the layout generator.
#pragma once

#include "pipeline/synth/hlo.h"
#include "pipeline/synth/simulator.h"

namespace tpuperf::synth {

// Appends to p.links every producer -> consumer pair whose tensor crosses between
// configurable nodes, or between a configurable node and a fixed row-major one (-1).
void add_links(const HloBuilder& h, LayoutProblem& p);

// The work of everything that is not configurable: each op reads its operands and
// writes its result once.
double base_cost_ns(const HloBuilder& h, const LayoutProblem& p);

}  // namespace tpuperf::synth
