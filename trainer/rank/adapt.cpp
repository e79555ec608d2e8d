#include "trainer/rank/adapt.h"

#include <torch/torch.h>

#include <cmath>

#include "common/base/error.h"
#include "common/base/hash.h"
#include "common/base/random.h"
#include "trainer/models/batch.h"
#include "trainer/fit/optimizer.h"
#include "trainer/fit/sampler.h"

namespace tpuperf {

namespace {

template <typename T>
void hash_array(Hasher& h, const std::vector<T>& values) {
  const uint64_t n = values.size();
  h.update(&n, sizeof n);  // arrays of different lengths never run into each other
  h.update(values.data(), values.size() * sizeof(T));
}

// The batch's targets from the measured runtimes: the slots' configs' runtimes, 0 for
// padding (as make_batch leaves unlabelled slots).
torch::Tensor slate_targets(const Batch& b, const torch::Tensor& runtimes) {
  const torch::Tensor t = runtimes.index_select(0, b.config_index.flatten()).view(b.config_index.sizes());
  return torch::where(b.config_mask, t, torch::zeros_like(t));
}

}  // namespace

uint64_t graph_fingerprint(const GraphBase& graph, const std::vector<int64_t>* node_config_ids) {
  Hasher h;
  h.update(&graph.num_nodes, sizeof graph.num_nodes);
  hash_array(h, graph.node_feat);
  hash_array(h, graph.node_opcode);
  hash_array(h, graph.edge_index);
  if (node_config_ids) hash_array(h, *node_config_ids);
  return h.digest();
}

FineTuning fine_tuning(const RunDir& run, const std::string& collection, const AdaptOptions& options) {
  const Config cfg = run.config.for_collection(collection);
  const bool tile = Collection::parse(collection).kind == Kind::Tile;
  if (options.steps < 0) throw Error("must be >= 0 (0: " + std::to_string(kDefaultAdaptSteps) + ")", "", "steps");
  if (!(options.lr >= 0) || !std::isfinite(options.lr)) throw Error("must be finite and >= 0 (0: the default)", "", "lr");
  if (options.slate < 0 || options.slate == 1)
    throw Error("must be 0 (the run's) or at least 2: a ranking loss compares configs", "", "slate");
  FineTuning f;
  f.steps = options.steps > 0 ? options.steps : kDefaultAdaptSteps;
  f.lr = options.lr > 0 ? options.lr : cfg.get_float("train.lr") * kDefaultAdaptLrFraction;
  f.slate = options.slate > 0 ? options.slate : cfg.get_int(tile ? "train.tile_slate" : "train.layout_slate");
  f.grad_clip = cfg.get_float("train.grad_clip");
  f.seed = options.seed;
  f.loss = configured_loss(cfg, tile ? "train.tile_loss" : "train.layout_loss");  // a run's config names a known loss
  return f;
}

void check_runtimes(const std::vector<double>& runtimes, int64_t configs, const std::string& graph) {
  if (static_cast<int64_t>(runtimes.size()) != configs)
    throw Error(std::to_string(runtimes.size()) + " runtimes for " + std::to_string(configs) + " measured configs",
                graph, "runtimes");
  for (size_t i = 0; i < runtimes.size(); ++i)
    if (!std::isfinite(runtimes[i]) || runtimes[i] <= 0)
      throw Error("runtime of config " + std::to_string(i) + " is " + std::to_string(runtimes[i]) +
                      " (each must be finite and > 0)",
                  graph, "runtimes");
  if (configs < 2) throw Error("adapting needs at least two measured configs (a ranking compares them)", graph, "runtimes");
}

ModelPtr copy_model(RankingModel& model, const ModelSpec& spec) {
  ModelPtr copy = make_model(spec);
  torch::NoGradGuard no_grad;
  auto params = copy->named_parameters(true);
  for (const auto& p : model.named_parameters(true)) params[p.key()].copy_(p.value());
  auto buffers = copy->named_buffers(true);
  for (const auto& b : model.named_buffers(true)) buffers[b.key()].copy_(b.value());
  copy->eval();
  return copy;
}

StepLosses fine_tune(RankingModel& model, const ProcessedGraph& graph, Kind kind, const std::vector<double>& target,
                     const FineTuning& f, uint64_t stream) {
  // Dropout draws its seeds from LibTorch's generator, as in training.
  torch::manual_seed(mix_seed(stream, "dropout"));
  model.train();
  FusedAdamW opt(model.parameters(), torch::optim::AdamWOptions(f.lr).weight_decay(0));
  const torch::Tensor runtimes = torch::tensor(target, torch::kFloat64);
  const auto forward = [&model](const Batch& b) { return model.forward(b); };
  StepLosses losses;
  for (int64_t step = 0; step < f.steps; ++step) {
    const std::vector<int64_t> slate =
        sample_without_replacement(graph.num_configs(), f.slate, mix_seed(stream, static_cast<uint64_t>(step)));
    std::vector<Batch> batch{make_batch(kind, {&graph}, {slate})};
    batch[0].target = slate_targets(batch[0], runtimes);
    opt.zero_grad();
    const double loss = backward_joint_loss(f.loss, batch, forward, 1.0);
    opt.clip_and_step(f.grad_clip);
    if (step == 0) losses.first = loss;
    losses.last = loss;
  }
  model.eval();
  return losses;
}

}  // namespace tpuperf
