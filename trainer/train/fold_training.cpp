#include "trainer/train/fold_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "common/error.h"
#include "common/fault.h"
#include "common/files.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/progress.h"
#include "common/random.h"
#include "trainer/train/batch.h"
#include "trainer/train/checkpoint.h"
#include "trainer/train/distributed.h"
#include "trainer/eval/report.h"
#include "trainer/eval/submission.h"
#include "trainer/train/optimizer.h"
#include "common/collection.h"
#include "trainer/train/sampler.h"

namespace tpuperf {

namespace fs = std::filesystem;

TrainSettings::TrainSettings(const Config& cfg)
    : processed_dir(cfg.get_path("data.processed_dir")),
      output_dir(cfg.get_path("output.dir")),
      collections(cfg.get_list("data.collections")),
      epochs(cfg.get_int("train.epochs")),
      graphs_per_step(cfg.get_int("train.graphs_per_step")),
      tile_slate(cfg.get_int("train.tile_slate")),
      layout_slate(cfg.get_int("train.layout_slate")),
      eval_max_configs(cfg.get_int("train.eval_max_configs")),
      lr(cfg.get_float("train.lr")),
      weight_decay(cfg.get_float("train.weight_decay")),
      warmup_fraction(cfg.get_float("train.warmup_fraction")),
      grad_clip(cfg.get_float("train.grad_clip")),
      seed(static_cast<uint64_t>(cfg.get_int("train.seed"))),
      ensemble(cfg.get_string("output.ensemble")),
      tile_keep_default(cfg.get_bool("output.tile_keep_default")) {
  int64_t steps = cfg.get_int("train.steps_per_epoch");
  tile_steps_per_epoch = cfg.get_int("train.tile_steps_per_epoch");
  layout_steps_per_epoch = cfg.get_int("train.layout_steps_per_epoch");
  if (tile_steps_per_epoch == 0) tile_steps_per_epoch = steps;
  if (layout_steps_per_epoch == 0) layout_steps_per_epoch = steps;
  loss.name = cfg.get_string("train.loss");
  loss.margin = cfg.get_float("train.hinge_margin");
  for (auto [prefix, opts] : {std::pair{"model.tile.", &tile_model}, std::pair{"model.layout.", &layout_model}}) {
    std::string p = prefix;
    opts->hidden = cfg.get_int(p + "hidden");
    opts->layers = cfg.get_int(p + "layers");
    opts->dropout = cfg.get_float(p + "dropout");
    opts->attention_heads = cfg.get_int(p + "attention_heads");
    if (opts->attention_heads > 0 && opts->hidden % opts->attention_heads != 0)
      throw Error("must divide " + p + "hidden (" + std::to_string(opts->hidden) + ")", "",
                  p + "attention_heads");
  }
  if (processed_dir.empty()) throw Error("is not set", "", "data.processed_dir");
  if (output_dir.empty()) throw Error("is not set", "", "output.dir");
}

Ranker make_ranker(Kind kind, int64_t num_node_feat, const ModelOptions& options) {
  if (kind == Kind::Tile) {
    TileModel m(num_node_feat, options);
    return {m.ptr(), [m](const Batch& b) mutable { return m->forward(b); }};
  }
  LayoutModel m(num_node_feat, options);
  return {m.ptr(), [m](const Batch& b) mutable { return m->forward(b); }};
}

std::string checkpoint_path(const TrainSettings& s, const std::string& collection, int fold,
                            const std::string& which) {
  return s.output_dir + "/checkpoints/" + collection_dir(collection) + "/fold" + std::to_string(fold) + "/" +
         which + ".pt";
}

std::string fold_metrics_path(const TrainSettings& s, const std::string& collection, int fold) {
  return s.output_dir + "/metrics/" + collection_dir(collection) + ".fold" + std::to_string(fold) + ".csv";
}

namespace {

// Linear warm-up, then cosine decay to 5% of the peak.
double learning_rate(const TrainSettings& s, int64_t step, int64_t total) {
  int64_t warm = static_cast<int64_t>(s.warmup_fraction * total);
  if (step < warm) return s.lr * (step + 1) / warm;
  double t = total > warm ? double(step - warm) / double(total - warm) : 1.0;
  return s.lr * (0.05 + 0.95 * 0.5 * (1 + std::cos(M_PI * std::min(1.0, t))));
}

// One optimizer step of this rank's share; returns (loss sum over graphs, graphs, configs,
// seconds in the gradient all-reduce: mostly waiting for the group's slowest rank).
std::array<double, 4> train_step(const TrainSettings& s, Ranker& ranker, const GraphSet& train,
                                 const SlateSampler& sampler, int64_t epoch, int64_t step,
                                 int rank, int size, MPI_Comm group, FusedAdamW& opt) {
  const std::vector<SlateDraw> draws = sampler.draw(epoch, step, rank, size);
  opt.zero_grad();
  std::array<double, 4> stats{0, 0, 0, 0};
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
  }
  // The rank's loss is a mean over its n graphs; the all-reduce averages over ranks.
  // Weighting by n * P / G makes the step's gradient the mean over all G graphs.
  const double n = static_cast<double>(draws.size());
  stats[0] = backward_joint_loss(s.loss, batches, ranker.forward, n * size / static_cast<double>(s.graphs_per_step)) * n;
  stats[1] = n;
  const auto sync_start = std::chrono::steady_clock::now();
  allreduce_gradients(*ranker.module, group);
  stats[3] = std::chrono::duration<double>(std::chrono::steady_clock::now() - sync_start).count();
  opt.clip_and_step(s.grad_clip);
  return stats;
}

ScoreSum group_metric(const TrainSettings& s, Ranker& ranker, const GraphSet* set, const std::string& split,
                      int fold, MPI_Comm group) {
  if (!set || set->size() == 0) return {};
  ScoreSum local = metric_of(*set, score_set(s, ranker, *set, split, fold, false, group), s.tile_keep_default);
  std::vector<double> v = {local.sum, local.count};
  allreduce_doubles(v, group);
  return {v[0], v[1]};
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

double mean_or_nan(const ScoreSum& x) { return x.count > 0 ? x.sum / x.count : std::nan(""); }

}  // namespace

ScoreSum metric_of(const GraphSet& set, const std::vector<GraphScores>& scores, bool keep_default) {
  std::map<std::string, int64_t> index;
  for (int64_t i = 0; i < set.size(); ++i) index[set.entry(i).name] = i;
  ScoreSum out;
  for (const auto& gs : scores) {
    const ProcessedGraph& g = set.graph(index.at(gs.name));
    std::vector<int64_t> rt;
    for (int64_t c : gs.config_index) rt.push_back(g.config_runtime[c]);
    double v;
    if (set.kind() == Kind::Tile) {
      std::vector<int64_t> norm;
      for (int64_t c : gs.config_index) norm.push_back(g.config_runtime_normalizers[c]);
      const auto at = std::find(gs.config_index.begin(), gs.config_index.end(), 0);
      const int64_t keep = keep_default && at != gs.config_index.end() ? at - gs.config_index.begin() : -1;
      v = tile_slowdown_score_from_scores(gs.score, tile_targets(rt, norm), kTileTopConfigs, keep);
    } else {
      v = layout_kendall_score(gs.score, rt);
    }
    if (std::isfinite(v)) out.sum += v, out.count += 1;
  }
  return out;
}

std::vector<GraphScores> score_set(const TrainSettings& s, Ranker& ranker, const GraphSet& set,
                                   const std::string& split, int fold, bool all_configs, MPI_Comm group) {
  int rank = 0, size = 1;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &size);
  std::vector<std::string> keys;
  for (int64_t i = 0; i < set.size(); ++i) keys.push_back(set.key(i));
  int64_t max_configs = all_configs ? std::numeric_limits<int64_t>::max() : s.eval_max_configs;
  // Configs are scored in chunks; the layout model's cross-config attention sees one chunk
  // at a time. Measured on the demo's valid split (4 layout collections): chunks of 16, 128
  // and 1000 configs give Kendall tau within 0.003 of each other.
  int64_t chunk = set.kind() == Kind::Tile ? 512 : 128;
  auto plans = make_eval_plans(set.kind(), set.num_configs(), keys, max_configs, chunk, s.seed);
  torch::NoGradGuard no_grad;
  ranker.module->eval();
  std::vector<GraphScores> out;
  for (size_t p = 0; p < plans.size(); ++p) {
    if (static_cast<int>(p % size) != rank) continue;
    const EvalGraphPlan& plan = plans[p];
    GraphScores gs;
    gs.collection = set.collection();
    gs.split = split;
    gs.name = set.entry(plan.graph).name;
    gs.model = fold;
    for (const auto& c : plan.chunks) {
      GraphSlate slate = set.slate(plan.graph, c);
      Batch batch = make_batch(set.kind(), {slate.graph}, {slate.batch_configs});
      torch::Tensor scores = ranker.forward(batch).to(torch::kFloat64).contiguous();
      const double* p0 = scores.data_ptr<double>();
      gs.config_index.insert(gs.config_index.end(), slate.configs.begin(), slate.configs.end());
      gs.score.insert(gs.score.end(), p0, p0 + slate.configs.size());
    }
    out.push_back(std::move(gs));
  }
  ranker.module->train();
  return out;
}

int64_t batch_overhead_in_node_slots(const ModelOptions& model) {
  // Calibrated at hidden 32, 2 layers on 780 traced tile steps (small tree, 1 thread, AMD
  // EPYC): a batch's forward and backward took 0.76 ms + 0.0004 ms per node slot, ~2000
  // slots. A slot's cost grows about as layers x hidden^2 (the SAGE matmuls): 0.47, 1.67,
  // 2.95 and 9.0 us at hidden/layers 32/2, 64/2, 64/3 and 128/3 (forward, backward and
  // step, 1 thread), while a batch's own part stays 0.6-0.9 ms; so the overhead in slots
  // shrinks by that factor. With 2000 kept at 64/3 (the schema's default model) the
  // sampler padded narrow slates into wide batches instead of giving them their own; 333
  // there took 4-epoch tile runs (small tree) from 6526-6755 to 6739-7133 configs/s on 1
  // rank and from 11173-11606 to 12341-12965 on 2. Measured on tile only: layout slates
  // are rarely narrower than train.layout_slate, so layout steps stay one batch anyway.
  constexpr int64_t kCalibratedOverhead = 2000, kCalibratedSize = 2 * 32 * 32;
  const int64_t size = std::max<int64_t>(model.layers, 1) * model.hidden * model.hidden;
  return kCalibratedOverhead * kCalibratedSize / std::max<int64_t>(size, 1);
}

std::string train_fold(const TrainSettings& s, const std::string& collection, int fold, const FoldData& data,
                       MPI_Comm group, bool resume) {
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
  Ranker ranker = make_ranker(train.kind(), train.num_node_feat(), s.model(train.kind()));
  FusedAdamW opt(ranker.module->parameters(), torch::optim::AdamWOptions(s.lr).weight_decay(s.weight_decay));
  CheckpointMeta meta;
  meta.num_node_feat = train.num_node_feat();
  if (resume && fs::exists(last)) {
    meta = load_checkpoint(last, *ranker.module, &opt, nullptr);
    spdlog::info("{}: resuming after epoch {} (step {})", label, meta.epochs_done, meta.step);
    if (rank == 0) drop_metrics_after(fold_metrics_path(s, collection, fold), meta.epochs_done);
  }
  broadcast_parameters(*ranker.module, group);
  verify_parameters(*ranker.module, group);

  SamplerOptions so;
  so.seed = s.seed;
  so.fold = fold;
  so.graphs_per_step = s.graphs_per_step;
  so.slate = s.slate(train.kind());
  // A graph's cost per slate slot is nodes + kConfigWorkInNodes; the sampler splits a
  // rank's graphs into batches and deals a step's graphs to the group's ranks by that cost
  // (sampler.h). A per-config term fitted to ~0 on traced tile steps, so a graph costs its
  // node count (+1: the sampler needs costs >= 1).
  constexpr int64_t kConfigWorkInNodes = 1;
  std::vector<int64_t> work;
  for (int64_t i = 0; i < train.size(); ++i) work.push_back(train.entry(i).num_nodes + kConfigWorkInNodes);
  so.batch_overhead = batch_overhead_in_node_slots(s.model(train.kind()));
  SlateSampler sampler(train.num_configs(), so, work);
  int64_t spe = s.steps_per_epoch(train.kind()) > 0 ? s.steps_per_epoch(train.kind()) : sampler.steps_per_pass();
  int64_t total = s.epochs * spe;
  for (int64_t epoch = meta.epochs_done; epoch < s.epochs; ++epoch) {
    // Dropout draws depend only on (seed, fold, epoch, rank): a resumed epoch replays.
    torch::manual_seed(mix_seed(s.seed, label + "/epoch" + std::to_string(epoch) + "/rank" + std::to_string(rank)));
    Progress progress(label + " epoch " + std::to_string(epoch + 1) + "/" + std::to_string(s.epochs), spe, 0, 10.0,
                      "steps");
    std::vector<double> sums = {0, 0, 0, 0};
    for (int64_t step = 0; step < spe; ++step, ++meta.step) {
      for (auto& group_opts : opt.param_groups())
        static_cast<torch::optim::AdamWOptions&>(group_opts.options()).lr(learning_rate(s, meta.step, total));
      auto st = train_step(s, ranker, train, sampler, epoch, step, rank, size, group, opt);
      for (int i = 0; i < 4; ++i) sums[i] += st[i];
      progress.tick(0);
    }
    double seconds = progress.elapsed_s();
    allreduce_doubles(sums, group);
    double loss = sums[1] > 0 ? sums[0] / sums[1] : std::nan("");
    double oof = mean_or_nan(group_metric(s, ranker, data.oof, "oof", fold, group));
    double valid = mean_or_nan(group_metric(s, ranker, data.valid, "valid", fold, group));
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
      spdlog::info("{} epoch {}/{}: loss {:.4f}, oof {:.4f}, valid {:.4f}, {:.0f} configs/s ({} ranks{}), {}", label,
                   epoch + 1, s.epochs, loss, oof, valid, cps, size, sync, format_duration(seconds));
      std::vector<MetricsRow> rows(3);
      for (auto& r : rows) r.collection = collection, r.fold = fold, r.epoch = static_cast<int>(epoch + 1), r.step = meta.step;
      rows[0].split = "train", rows[0].loss = loss, rows[0].configs_per_s = cps, rows[0].elapsed_s = seconds;
      rows[1].split = "oof", rows[1].score = oof;
      rows[2].split = "valid", rows[2].score = valid;
      append_metrics(fold_metrics_path(s, collection, fold), rows);
      if (improved) save_checkpoint(best, *ranker.module, &opt, meta, train.transform());
      save_checkpoint(last, *ranker.module, &opt, meta, train.transform());
    }
    fault_point("train.epoch_done");
  }
  if (rank == 0 && !fs::exists(best)) save_checkpoint(best, *ranker.module, &opt, meta, train.transform());
  MPI_Barrier(group);  // the best checkpoint exists for every rank of the group
  return best;
}

}  // namespace tpuperf
