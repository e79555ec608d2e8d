// Adapting a run's fold models to one graph from measured configs (Ranker::adapted): what
// identifies the graph, copies of the models, and the fine-tuning loop each copy runs.
// The loop is training's step (trainer/train/fold_training.cpp: the run's loss through
// backward_joint_loss, FusedAdamW with the run's gradient clipping, dropout seeded through
// LibTorch's generator) on one graph's measured configs, without MPI or a processed tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/graph/graph.h"
#include "common/graph/processed_graph.h"
#include "tpuperf/ranker.h"
#include "trainer/losses/registry.h"
#include "trainer/models/registry.h"
#include "trainer/predict/run_dir.h"

namespace tpuperf {

// A hash of what makes a graph that graph: its node count, node features, opcodes, edges
// and, for layout (node_config_ids given), its configurable nodes. Neither its name nor
// its configs enter.
uint64_t graph_fingerprint(const GraphBase& graph, const std::vector<int64_t>* node_config_ids);

// How one adaptation fine-tunes: AdaptOptions with the run's defaults filled in, and the
// run's loss and gradient clipping for the collection.
struct FineTuning {
  int64_t steps = 0;
  int64_t slate = 0;
  double lr = 0;
  double grad_clip = 0;
  uint64_t seed = 0;
  LossOptions loss;
};

// Throws Error naming the option when it is out of range (negative steps, lr or slate, a
// slate of 1).
FineTuning fine_tuning(const RunDir& run, const std::string& collection, const AdaptOptions& options);

// Throws Error naming the graph and "runtimes" unless there is one runtime per measured
// config, each finite and > 0, and at least two of them (a ranking loss needs a pair).
void check_runtimes(const std::vector<double>& runtimes, int64_t configs, const std::string& graph);

// A new model of the same architecture holding a copy of model's parameters and buffers.
ModelPtr copy_model(RankingModel& model, const ModelSpec& spec);

// The loss of a fine-tuning's first and last steps.
struct StepLosses {
  double first = 0, last = 0;
};

// Fine-tunes model for f.steps steps on slates of graph's configs (every config of graph
// is a measured one: target[c] is config c's runtime), then leaves it in evaluation mode.
// stream seeds this model's slates and its dropout.
StepLosses fine_tune(RankingModel& model, const ProcessedGraph& graph, Kind kind, const std::vector<double>& target,
                     const FineTuning& f, uint64_t stream);

}  // namespace tpuperf
