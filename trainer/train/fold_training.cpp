#include "trainer/train/fold_training.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "common/base/error.h"
#include "common/base/fault.h"
#include "common/base/files.h"
#include "common/base/log.h"
#include "common/base/progress.h"
#include "common/base/random.h"
#include "trainer/eval/report.h"
#include "trainer/models/allocator.h"
#include "trainer/models/registry.h"
#include "trainer/models/checkpoint.h"
#include "trainer/train/cost_model.h"
#include "trainer/train/distributed.h"
#include "trainer/train/evaluation.h"
#include "trainer/train/gradient_reducer.h"
#include "trainer/fit/optimizer.h"
#include "trainer/fit/sampler.h"
#include "trainer/train/weight_average.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

// Linear warm-up, then cosine decay to 5% of the peak.
double learning_rate(const TrainSettings& s, int64_t step, int64_t total) {
  int64_t warm = static_cast<int64_t>(s.warmup_fraction * total);
  if (step < warm) return s.lr * (step + 1) / warm;
  double t = total > warm ? double(step - warm) / double(total - warm) : 1.0;
  return s.lr * (0.05 + 0.95 * 0.5 * (1 + std::cos(M_PI * std::min(1.0, t))));
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Where a rank's step time goes, summed over an epoch's steps and logged at debug level:
// the trace behind the scaling bench's analysis (what a second rank cannot halve).
struct StepPhases {
  double build_s = 0, forward_backward_s = 0, allreduce_s = 0, optimizer_s = 0;
  int64_t batches = 0;
  // Node slots (nodes x slate width) the batches ran, and those of real configs: the rest
  // is padding to a batch's widest slate, the work ragged batches would save.
  int64_t run_slots = 0, real_slots = 0;

  void count(const Batch& b, const std::vector<SlateDraw>& draws, const std::vector<size_t>& part);
  std::string summary(int64_t steps) const;
};

void StepPhases::count(const Batch& b, const std::vector<SlateDraw>& draws, const std::vector<size_t>& part) {
  ++batches;
  run_slots += b.num_nodes * b.slate;
  for (size_t g = 0; g < part.size(); ++g)
    real_slots += (b.node_offsets[g + 1] - b.node_offsets[g]) * static_cast<int64_t>(draws[part[g]].configs.size());
}

std::string StepPhases::summary(int64_t steps) const {
  const double n = static_cast<double>(std::max<int64_t>(steps, 1));
  const double padded = run_slots > 0 ? 100.0 * static_cast<double>(run_slots - real_slots) / run_slots : 0.0;
  return fmt::format(
      "per step: batch building {:.2f} ms, forward+backward {:.2f} ms, all-reduce {:.2f} ms, optimizer {:.2f} ms; "
      "{:.2f} batches, {:.0f} node slots, {:.1f}% of them padding",
      1e3 * build_s / n, 1e3 * forward_backward_s / n, 1e3 * allreduce_s / n, 1e3 * optimizer_s / n,
      static_cast<double>(batches) / n, static_cast<double>(run_slots) / n, padded);
}

// One optimizer step of this rank's share; returns (loss sum over graphs, graphs, configs)
// and adds its phases' times to `phases` (the all-reduce's: mostly waiting for the group's
// slowest rank).
std::array<double, 3> train_step(const TrainSettings& s, RankingModel& model, const GraphSet& train,
                                 const SlateSampler& sampler, int64_t epoch, int64_t step, int rank, int size,
                                 GradientReducer& reducer, FusedAdamW& opt, StepPhases& phases) {
  opt.zero_grad();
  const auto build_start = Clock::now();
  const std::vector<SlateDraw> draws = sampler.draw(epoch, step, rank, size);
  std::array<double, 3> stats{0, 0, 0};
  // One forward and backward per batch of graphs of similar slate width (a batch pads
  // every graph to its widest slate); the gradients add up to those of the rank's loss.
  std::vector<Batch> batches;
  for (const std::vector<size_t>& part : sampler.batches(draws)) {
    std::vector<GraphSlate> slates;
    std::vector<const ProcessedGraph*> graphs;
    std::vector<std::vector<int64_t>> configs;
    for (size_t i : part) {
      slates.push_back(train.slate(draws[i].graph, draws[i].configs));
      graphs.push_back(slates.back().graph);
      configs.push_back(slates.back().batch_configs);
      stats[2] += static_cast<double>(draws[i].configs.size());
    }
    batches.push_back(make_batch(train.kind(), graphs, configs));
    phases.count(batches.back(), draws, part);
  }
  phases.build_s += seconds_since(build_start);
  // The rank's loss is a mean over its n graphs; the all-reduce averages over ranks.
  // Weighting by n * P / G makes the step's gradient the mean over all G graphs.
  const double n = static_cast<double>(draws.size());
  const auto forward = [&model](const Batch& b) { return model.forward(b); };
  const double scale = n * size / static_cast<double>(s.graphs_per_step);
  const auto compute_start = Clock::now();
  stats[0] = backward_joint_loss(s.loss(train.kind()), batches, forward, scale) * n;
  stats[1] = n;
  phases.forward_backward_s += seconds_since(compute_start);
  fault_point("train.step");
  const auto sync_start = Clock::now();
  reducer.allreduce();
  phases.allreduce_s += seconds_since(sync_start);
  const auto opt_start = Clock::now();
  opt.clip_and_step(s.grad_clip);
  phases.optimizer_s += seconds_since(opt_start);
  return stats;
}

// A run killed between writing an epoch's metrics and its checkpoint replays that epoch
// on resume: its rows are dropped first so that every epoch is recorded once.
void drop_metrics_after(const std::string& path, int64_t epochs_done) {
  if (!fs::exists(path)) return;
  std::vector<MetricsRow> kept;
  for (const auto& r : read_metrics(path))
    if (r.epoch <= epochs_done) kept.push_back(r);
  std::string tmp = path + ".resume";
  std::remove(tmp.c_str());
  append_metrics(tmp, kept);
  rename_durable(tmp, path);
}

// What one step costs a rank of a group of `ranks`, in node-configs: the mean train
// graph's nodes times the configs of a step's slates, shared by the group (the cap of
// train.max_node_configs_per_epoch).
double rank_node_configs_per_step(const TrainSettings& s, const GraphSet& train, int ranks) {
  if (train.size() == 0) return 0.0;
  double nodes = 0.0;
  for (int64_t i = 0; i < train.size(); ++i) nodes += static_cast<double>(train.entry(i).num_nodes);
  const double configs = static_cast<double>(s.graphs_per_step * s.slate(train.kind()));
  return nodes / static_cast<double>(train.size()) * configs / static_cast<double>(std::max(ranks, 1));
}

}  // namespace

std::string train_fold(const TrainSettings& settings, const std::string& collection, int fold, const FoldData& data,
                       MPI_Comm group, bool resume) {
  const TrainSettings& s = settings.of(collection);  // with the collection's own train.*, model.*
  int rank = 0, size = 1;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &size);
  const GraphSet& train = *data.train;
  if (train.size() == 0) throw Error("fold " + std::to_string(fold) + " of " + collection + " has no train graphs");
  std::string label = collection + " fold " + std::to_string(fold);
  std::string last = checkpoint_path(s, collection, fold, "last"), best = checkpoint_path(s, collection, fold, "best");
  if (rank == 0) {
    make_dirs(fs::path(last).parent_path().string());
    make_dirs(fs::path(fold_metrics_path(s, collection, fold)).parent_path().string());
  }

  torch::manual_seed(mix_seed(s.seed, label));
  const ModelSpec spec = s.model_spec(collection, train.num_node_feat());
  ModelPtr model = make_model(spec);
  FusedAdamW opt(model->parameters(), torch::optim::AdamWOptions(s.lr).weight_decay(s.weight_decay));
  CheckpointMeta meta;
  meta.model = spec;
  std::vector<torch::Tensor> resumed_training_weights;
  if (resume && fs::exists(last)) {
    meta = load_checkpoint(last, *model, &opt, nullptr, &resumed_training_weights);
    spdlog::info("{}: resuming after epoch {} (step {})", label, meta.epochs_done, meta.step);
    if (rank == 0) drop_metrics_after(fold_metrics_path(s, collection, fold), meta.epochs_done);
  }
  broadcast_parameters(*model, group);
  verify_parameters(*model, group);
  // Every rank of the group steps the same weights, so each keeps the same average.
  WeightAverage average(*model, s.ema_decay_of(collection));
  // A checkpoint of a run with weight averaging holds the average as its model and the
  // training weights beside it.
  if (!resumed_training_weights.empty()) {
    if (!average.enabled())
      throw Error("checkpoint holds averaged weights but " + collection + "'s decay is 0", last,
                  s.ema_decay_key_of(collection));
    average.resume(resumed_training_weights);
  }
  GradientReducer reducer(*model, group, s.stall_timeout_s);

  SamplerOptions so;
  so.seed = s.seed;
  so.fold = fold;
  so.graphs_per_step = s.graphs_per_step;
  so.slate = s.slate(train.kind());
  // The sampler splits a rank's graphs into batches and deals a step's graphs to the
  // group's ranks by their work (cost_model.h).
  std::vector<int64_t> work;
  for (int64_t i = 0; i < train.size(); ++i) work.push_back(graph_work(train.entry(i).num_nodes));
  so.batch_overhead = batch_overhead_in_node_slots(spec.options);
  SlateSampler sampler(train.num_configs(), so, work);
  int64_t train_configs = 0;
  for (int64_t n : train.num_configs()) train_configs += n;
  const double step_cost = rank_node_configs_per_step(s, train, size);
  const int64_t planned = s.steps_per_epoch(collection, sampler.steps_per_pass(), train_configs, train.size());
  const int64_t spe =
      s.steps_per_epoch_by_cost(collection, sampler.steps_per_pass(), train_configs, train.size(), step_cost);
  if (rank == 0)
    spdlog::info("{}: model {} (hidden {}, {} layers, dropout {}, {} attention heads), {} steps an epoch over {} "
                 "train graphs of {} configs, ~{:.3g} node-configs a rank{}",
                 label, spec.arch, spec.options.hidden, spec.options.layers, spec.options.dropout,
                 spec.options.attention_heads, spe, train.size(), train_configs, step_cost * static_cast<double>(spe),
                 spe < planned ? fmt::format(" (capped from {} steps by train.max_node_configs_per_epoch)", planned)
                               : std::string());
  int64_t total = s.epochs * spe;
  for (int64_t epoch = meta.epochs_done; epoch < s.epochs; ++epoch) {
    // Dropout draws depend only on (seed, fold, epoch, rank): a resumed epoch replays.
    torch::manual_seed(mix_seed(s.seed, label + "/epoch" + std::to_string(epoch) + "/rank" + std::to_string(rank)));
    Progress progress(label + " epoch " + std::to_string(epoch + 1) + "/" + std::to_string(s.epochs), spe, 0, 10.0,
                      "steps");
    std::vector<double> sums = {0, 0, 0, 0};
    StepPhases phases;
    for (int64_t step = 0; step < spe; ++step, ++meta.step) {
      for (auto& group_opts : opt.param_groups())
        static_cast<torch::optim::AdamWOptions&>(group_opts.options()).lr(learning_rate(s, meta.step, total));
      auto st = train_step(s, *model, train, sampler, epoch, step, rank, size, reducer, opt, phases);
      average.update(meta.step);
      for (int i = 0; i < 3; ++i) sums[i] += st[i];
      progress.tick(0);
    }
    double seconds = progress.elapsed_s();
    spdlog::debug("{} epoch {}/{}: {}", label, epoch + 1, s.epochs, phases.summary(spe));
    sums[3] = phases.allreduce_s;
    allreduce_doubles(sums, group);
    double loss = sums[1] > 0 ? sums[0] / sums[1] : std::nan("");
    WeightAverage::Scope averaged(average);  // evaluation and checkpoints see the average
    // An epoch that is not scored has NaN scores: it is kept only while no scored epoch is.
    const bool evaluated = s.evaluates_after(epoch);
    ScoreSum oof_sum, valid_sum;
    double oof_s = 0, valid_s = 0;
    if (evaluated) {
      const auto oof_start = Clock::now();
      oof_sum = group_metric(s, *model, data.oof, "oof", fold, group);
      oof_s = seconds_since(oof_start);
      const auto valid_start = Clock::now();
      valid_sum = group_metric(s, *model, data.valid, "valid", fold, group);
      valid_s = seconds_since(valid_start);
    }
    const double oof = oof_sum.mean(), valid = valid_sum.mean();
    double cps = sums[2] / std::max(seconds, 1e-9);
    meta.epochs_done = epoch + 1;
    double selection = std::isfinite(oof) ? oof : valid;
    bool improved = !std::isfinite(meta.best_score) || (std::isfinite(selection) && selection > meta.best_score) ||
                    meta.best_epoch < 0;
    if (improved) {
      meta.best_score = std::isfinite(selection) ? selection : meta.best_score;
      meta.best_epoch = epoch;
    }
    if (rank == 0) {
      // With several ranks: the share of the step time a rank spent at the all-reduce
      // (mean over ranks), i.e. what imbalance and communication cost the group.
      const std::string sync =
          size > 1 ? fmt::format(", {:.0f}% at the all-reduce", 100 * sums[3] / size / std::max(seconds, 1e-9)) : "";
      const std::string scores =
          evaluated ? fmt::format("oof {:.4f} (top-1 slowdown {:.3f}, own top-5 {:.3f}), valid {:.4f}", oof,
                                  oof_sum.slowdowns()[0], oof_sum.own_slowdown_5(), valid)
                    : std::string("not scored");
      spdlog::info("{} epoch {}/{}: loss {:.4f}, {}, {:.0f} configs/s ({} ranks{}), train {}, eval {}", label,
                   epoch + 1, s.epochs, loss, scores, cps, size, sync, format_duration(seconds, 1),
                   format_duration(oof_s + valid_s, 1));
      const CpuPoolStats pool = cpu_tensor_pool_stats();
      spdlog::debug("{} epoch {}: tensor pool {:.0f} MB live, peak {:.0f} MB live, {:.0f} MB touched, "
                    "{:.0f} MB mapped in {} segments",
                    label, epoch + 1, pool.live_bytes / 1e6, pool.peak_live_bytes / 1e6, pool.touched_bytes / 1e6,
                    pool.mapped_bytes / 1e6, pool.segments);
      // The oof and valid rows' elapsed_s is the seconds their scoring took.
      std::vector<MetricsRow> rows(evaluated ? 3 : 1);
      for (auto& r : rows) r.collection = collection, r.fold = fold, r.epoch = static_cast<int>(epoch + 1), r.step = meta.step;
      rows[0].split = "train", rows[0].loss = loss, rows[0].configs_per_s = cps, rows[0].elapsed_s = seconds;
      if (evaluated) {
        rows[1].split = "oof", rows[1].score = oof, rows[1].elapsed_s = oof_s, rows[1].slowdown = oof_sum.slowdowns();
        rows[1].slowdown_5_own = oof_sum.own_slowdown_5();
        rows[2].split = "valid", rows[2].score = valid, rows[2].elapsed_s = valid_s;
        rows[2].slowdown = valid_sum.slowdowns(), rows[2].slowdown_5_own = valid_sum.own_slowdown_5();
      }
      append_metrics(fold_metrics_path(s, collection, fold), rows);
      const auto* training = &averaged.training_weights();
      if (improved) save_checkpoint(best, *model, &opt, meta, train.transform(), training);
      save_checkpoint(last, *model, &opt, meta, train.transform(), training);
    }
    fault_point("train.epoch_done");
  }
  if (rank == 0 && !fs::exists(best)) {
    WeightAverage::Scope averaged(average);
    save_checkpoint(best, *model, &opt, meta, train.transform(), &averaged.training_weights());
  }
  MPI_Barrier(group);  // the best checkpoint exists for every rank of the group
  return best;
}

}  // namespace tpuperf
