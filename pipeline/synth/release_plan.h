// The release scale: the real collections' graph counts and size distributions
// (docs/tpugraphs.md), for runs at the real data's scale without the real data.
//
// Documented facts it follows:
//  - graphs per split: tile 5,709 / 676 / 844; layout xla 69 / 7 / 8 (random) and 61 / 7 / 8
//    (default); nlp 207 / 20 / 17 and 198 / 20 / 17 (the default collection's graphs are
//    the first of the random collection's, as the two searches ran over the same models);
//  - tile kernels 2..394 nodes, median ~37 (what the kernel builder gives: tile_gen.h),
//    8..~7000 configs, drawn log-uniformly (the docs give no median);
//  - layout nodes two-piece log-uniform (plan.h draw_around_median): xla 372..43,615,
//    median 12,000; nlp 876..21,919, median 3,300; configurable nodes at most 3,143;
//  - no file holds more than ~0.9 GB of node_config_feat (the release's largest), which
//    bounds configs x configurable nodes; configs at most 100,040; layout test files hold
//    exactly 1000 configs, two of them (the first test graph of each nlp collection) 1001.
// Assumed (the docs give only the maximum): layout train/valid configs two-piece log-uniform,
// random search 1,000..100,040 with median 15,000, default search 1,000..40,000 with median
// 10,000.
// Issue 20's runtime shape: every third random-search graph (index % 3 == 1, in every split)
// is measured by a converged autotuner (converged_search.h).
//
// --fraction F < 1 writes a systematic sample: per (collection, split) the graphs sorted by
// estimated decompressed size, then round(n F) of them (at least one) at evenly spaced
// ranks (the (j + 1/2) n / m-th for j < m). The sample keeps the size distribution, so
// totals over it scale to the release by the ratios in <out>/release_plan.tsv (one line per
// planned graph: collection, split, name, planned nodes, configs, estimated bytes, written).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/synth/plan.h"

namespace tpuperf::synth {

// Every graph of the collection in the release (nothing is written from this alone).
CollectionPlan plan_release(const Collection& c, uint64_t seed);

// Indices into plan.graphs that a fraction in (0, 1] writes, in plan order.
std::vector<size_t> select_fraction(const CollectionPlan& plan, double fraction);

// The listing of <out>/release_plan.tsv for these collections (header line first).
std::string release_plan_listing(const std::vector<CollectionPlan>& plans,
                                 const std::vector<std::vector<size_t>>& selected);

}  // namespace tpuperf::synth
