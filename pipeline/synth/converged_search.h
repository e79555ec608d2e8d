// Layout files measured by an autotuner that has converged, the runtime shape of real TPU
// data (issue 20): one real layout graph (372 nodes, 26 configurable) held 47,712 measured
// configs, 37% of them re-measurements; its median config is within 0.2% of the best and
// the 10th percentile equals the best, with a tail up to 5.4x; re-measured configs' first
// and second measurements agree only at Kendall tau 0.66. The random search's classic
// files (layout_gen.h) spread 1.4-3x with the median 1.3-2x the best instead.
//
// How the file comes about (the runtime model is documented in simulator.h):
//  - the tuner's incumbent is the best config a greedy local search over the groups'
//    options finds from the compiler default (coordinate descent on the cost model);
//  - layout assignment overrides the requested layout of most groups (the layout their
//    neighbours' constraints propagate wins): only the bound groups' (10-25%) choices reach
//    the binary;
//  - a measured config is the incumbent with 1 + Geometric(1/2) departures (a group set to
//    another of its options), not measured before (more departures when the configs near
//    the incumbent run out). 60-70% of them depart on overridden groups only and compile
//    to the incumbent's program; the others change at least one bound group;
//  - 3-8% of the distinct configs are the tuner's random restarts: drawn as the random
//    search draws (layout_sampling.h sample_choice), far from the incumbent, and compiled as
//    requested (every group bound): the slow tail;
//  - a TPU runs a program deterministically: an undisturbed measurement (40-60%) repeats
//    exactly, a disturbed one (host, DMA contention) is slower by sigma * |N(0,1)|,
//    sigma 0.1-0.2%, at most 0.9%;
//  - 30-45% of the rows re-measure an earlier config (drawn uniformly), with their own
//    noise; the compiler default is among them a few times (0.1% of the rows, at least 2).
// Near-ties of the runtime are therefore measurement noise, as on real data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/graph.h"
#include "pipeline/synth/layout_gen.h"
#include "pipeline/synth/rng.h"

namespace tpuperf::synth {

// The per-file parameters of the shape, drawn from the file's stream.
struct ConvergedParams {
  double bound_share = 0.2;      // groups whose requested layout reaches the binary
  double free_share = 0.6;       // departing configs that touch overridden groups only
  double restart_share = 0.05;   // distinct configs from random restarts
  double remeasured_share = 0.37;
  double clean_share = 0.5;      // measurements not disturbed at all
  double sigma = 0.0015;         // relative slowdown scale of a disturbed measurement
};
ConvergedParams draw_converged_params(Rng& rng);

// The incumbent: greedy coordinate descent over the groups' options from the default,
// sweeps until nothing improves (at most 4). Returns one option index per group.
std::vector<int> local_search_best(const LayoutProblem& p);

// One measurement of a program whose noise-free runtime is true_ns.
int64_t converged_measurement(double true_ns, const ConvergedParams& q, Rng& rng);

// The file: num_configs rows as described above. The problem's options must come from the
// random search (make_layout_options(problem, "random", ...)). noise_free, when given,
// receives each row's noise-free runtime (what an undisturbed run measures).
LayoutGraph make_converged_layout_graph(const std::string& name, const LayoutProgram& program,
                                        int64_t num_configs, Rng& rng,
                                        std::vector<int64_t>* noise_free = nullptr);

}  // namespace tpuperf::synth
