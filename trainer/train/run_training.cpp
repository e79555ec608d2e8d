#include "trainer/train/run_training.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <set>

#include "common/graph/collection.h"
#include "common/mpi/collectives.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "common/base/log.h"
#include "common/shards/manifest.h"
#include "common/metrics/metrics.h"
#include "common/cli/tool_main.h"
#include "trainer/models/checkpoint.h"
#include "trainer/kernels/vector_path.h"
#include "trainer/train/compute_threads.h"
#include "trainer/train/distributed.h"
#include "trainer/eval/ensemble.h"
#include "trainer/eval/first_pick.h"
#include "trainer/train/run_identity.h"
#include "trainer/eval/report.h"
#include "trainer/eval/scoring.h"
#include "trainer/eval/submission.h"
#include "trainer/train/evaluation.h"
#include "trainer/train/fold_training.h"
#include "trainer/train/settings.h"
#include "trainer/predict/run_dir.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

// Collective: every rank's bytes to `root` of comm, concatenated in rank order there.
std::string gather_bytes(const std::string& mine, MPI_Comm comm, int root) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const RankBytes all = tpuperf::gather_bytes(mine, root, comm);
  if (rank != root) return "";
  // Re-frame as one serialized list: each rank's bytes are a serialized list of their own.
  std::vector<GraphScores> merged;
  for (int r = 0; r < all.ranks(); ++r) {
    auto part = deserialize_scores(std::string(all.of(r)));
    merged.insert(merged.end(), part.begin(), part.end());
  }
  return serialize_scores(merged);
}

// Scores of every fold model to world rank 0: inside each group to its leader, then
// between leaders (world rank 0 leads group 0).
std::vector<GraphScores> gather_scores(const std::vector<GraphScores>& mine, const FoldLayout& layout) {
  std::string group_bytes = gather_bytes(serialize_scores(mine), layout.group_comm, 0);
  if (!layout.is_leader()) return {};
  std::string all = gather_bytes(group_bytes, layout.leaders_comm, 0);
  int leader_rank = 0;
  MPI_Comm_rank(layout.leaders_comm, &leader_rank);
  return leader_rank == 0 ? deserialize_scores(all) : std::vector<GraphScores>{};
}

// Folds with a saved best model (predict-only): fold0, fold1, ... of every collection.
// Every collection must have the same number, or the ensemble would mix runs.
int saved_folds(const TrainSettings& s, const std::vector<std::string>& collections) {
  int k = -1;
  for (const auto& c : collections) {
    int n = 0;
    while (fs::exists(checkpoint_path(s, c, n, "best"))) ++n;
    if (n == 0) throw Error("no saved best checkpoint of " + c + " (train first)", s.output_dir + "/checkpoints");
    if (k >= 0 && n != k)
      throw Error(c + " has " + std::to_string(n) + " saved folds, other collections " + std::to_string(k) +
                      " (rerun training with --fresh)",
                  s.output_dir + "/checkpoints");
    k = n;
  }
  return k;
}

GraphSet::Filter split_is(const std::string& split) {
  return [split](const ManifestGraph& g) { return g.split == split; };
}

struct CollectionSets {
  std::unique_ptr<GraphSet> valid, test;
};

// Rank 0: per-fold and ensemble valid scores, baselines, report rows.
CollectionReport collection_report(const TrainSettings& s, const std::string& c, const GraphSet& valid,
                                   const std::vector<GraphScores>& all, const std::vector<GraphScores>& ens, int k,
                                   const std::vector<MetricsRow>& metrics) {
  CollectionReport r;
  r.collection = c;
  r.valid_graphs = valid.size();
  auto pick = [&](const std::vector<GraphScores>& v, int model) {
    std::vector<GraphScores> out;
    for (const auto& g : v)
      if (g.collection == c && g.split == "valid" && g.model == model) out.push_back(g);
    return out;
  };
  if (valid.size() > 0) {
    const ScoreSum ensembled = metric_of(valid, pick(ens, -1), s.tile_keep_default);
    r.valid_ensemble = ensembled.mean();
    r.valid_slowdown = ensembled.slowdowns();
    r.valid_own5 = ensembled.own_slowdown_5();
    for (int f = 0; f < k; ++f) r.valid_per_fold.push_back(metric_of(valid, pick(all, f), s.tile_keep_default).mean());
    double rnd = 0, dflt = 0;
    std::vector<double> dflt_top1;
    std::array<std::vector<double>, 3> rnd_slowdown;
    Collection coll = Collection::parse(c);
    for (int64_t i = 0; i < valid.size(); ++i) {
      const ProcessedGraph& g = valid.graph(i);
      TruthGraph t{coll, g.name, g.config_runtime, g.config_runtime_normalizers};
      const RandomOrders random = random_orders(t, s.seed);
      rnd += random.score;
      for (size_t j = 0; j < rnd_slowdown.size(); ++j) rnd_slowdown[j].push_back(random.slowdown[j]);
      if (coll.kind == Kind::Tile) {
        dflt += default_first_baseline(t);
        dflt_top1.push_back(default_first_slowdowns(t)[0]);
      }
    }
    r.valid_default_top1 = mean_finite(dflt_top1);
    r.valid_random = rnd / valid.size();
    for (size_t j = 0; j < rnd_slowdown.size(); ++j) r.valid_random_slowdown[j] = mean_finite(rnd_slowdown[j]);
    r.valid_default_first = coll.kind == Kind::Tile ? dflt / valid.size() : std::nan("");
  }
  r.cv_score = cv_score(metrics, c);
  r.kept_oof_slowdown = kept_oof_slowdowns(metrics, c);
  r.kept_oof_own5 = kept_oof_own_slowdown_5(metrics, c);
  double seconds = 0, configs = 0;
  for (const auto& m : metrics)
    if (m.collection == c && m.split == "train" && std::isfinite(m.elapsed_s)) {
      seconds += m.elapsed_s;
      configs += m.configs_per_s * m.elapsed_s;
    }
  r.train_seconds = seconds;
  r.configs_per_s = seconds > 0 ? configs / seconds : std::nan("");
  return r;
}

std::vector<MetricsRow> merge_metrics(const TrainSettings& s) {
  std::vector<MetricsRow> rows;
  std::string dir = s.output_dir + "/metrics";
  std::vector<std::string> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto part = read_metrics(f);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  std::string merged = s.output_dir + "/metrics.csv";
  std::remove(merged.c_str());
  append_metrics(merged, rows);
  return rows;
}

// What each tile collection's rankings put first (first_pick.json), decided before the
// submission is written, from the valid graphs only; each report gets its line. A
// prediction on data without valid graphs keeps the decision the run's files hold: the
// models have not changed, and nothing new was measured.
std::map<std::string, FirstPick> decide_first_picks(const TrainSettings& s, std::vector<CollectionReport>& reports,
                                                    bool predict_only) {
  const std::map<std::string, FirstPick> saved = predict_only ? read_first_picks(s.output_dir)
                                                              : std::map<std::string, FirstPick>{};
  std::map<std::string, FirstPick> picks;
  for (auto& r : reports) {
    if (Collection::parse(r.collection).kind != Kind::Tile) continue;
    FirstPick p = choose_first_pick(s.tile_first_pick, s.tile_keep_default, r.valid_graphs, r.valid_slowdown[0],
                                    r.valid_default_top1);
    const auto kept = saved.find(r.collection);
    if (!p.measured() && p.setting == "auto" && kept != saved.end() && kept->second.setting == "auto") p = kept->second;
    r.first_pick = describe_first_pick(r.collection, p);
    picks[r.collection] = p;
  }
  write_first_picks(s.output_dir, picks);
  return picks;
}

void finish_on_rank0(const TrainSettings& s, const Manifest& manifest, const std::vector<std::string>& collections,
                     const std::map<std::string, CollectionSets>& sets, const std::vector<GraphScores>& all, int k,
                     bool predict_only) {
  std::vector<GraphScores> ens = ensemble_all(all, parse_ensemble_method(s.ensemble), s.tile_ensemble_spread);
  std::vector<GraphScores> test;
  for (const auto& g : ens)
    if (g.split == "test") test.push_back(g);
  std::set<std::string> expected, got;
  for (const auto& c : collections)
    for (const auto* g : manifest.graphs_of(c, "test")) expected.insert(c + ":" + g->name);
  for (const auto& g : test) got.insert(g.collection + ":" + g.name);
  if (expected != got)
    throw Error("predictions cover " + std::to_string(got.size()) + " of " + std::to_string(expected.size()) +
                " test graphs");
  std::vector<MetricsRow> metrics = merge_metrics(s);
  std::vector<CollectionReport> reports;
  for (const auto& c : collections) reports.push_back(collection_report(s, c, *sets.at(c).valid, all, ens, k, metrics));
  const std::map<std::string, FirstPick> picks = decide_first_picks(s, reports, predict_only);
  std::string submission = s.output_dir + "/submission.csv";
  // TpuGraphs has one tile collection (tile:xla): its rule is the submission's.
  const TileDefault tile_rule = tile_default_of(picks, picks.empty() ? "" : picks.begin()->first, s.tile_keep_default);
  write_submission(submission, test, tile_rule);
  ReportInput in;
  in.ensemble = s.ensemble;
  in.folds = k;
  in.metrics = metrics;
  in.notes.push_back("data: " + s.processed_dir);
  in.notes.push_back("submission: " + submission + " (" + std::to_string(test.size()) + " test graphs)");
  if (predict_only) in.notes.push_back("predictions from saved checkpoints (--predict-only)");
  if (s.tile_keep_default)
    in.notes.push_back("tile predictions keep config 0 (the compiler default) among the top 5 "
                       "(output.tile_keep_default); every tile score here is of such predictions");
  for (const auto& r : reports) {
    const std::string& c = r.collection;
    in.collections.push_back(r);
    spdlog::info("{}: valid score ensemble {:.4f} (random {:.4f}{}), cv {:.4f}", c, r.valid_ensemble, r.valid_random,
                 std::isfinite(r.valid_default_first) ? fmt::format(", default-first {:.4f}", r.valid_default_first)
                                                      : "",
                 r.cv_score);
    // Its own line: the benches parse the one above up to its end.
    spdlog::info("{}: top-1 slowdown (the model's first pick) valid ensemble {:.3f}, cv {:.3f}", c,
                 r.valid_slowdown[0], r.kept_oof_slowdown[0]);
    if (!r.first_pick.empty()) spdlog::info("{}", r.first_pick);
  }
  std::string report = write_report(s.output_dir, in);
  spdlog::info("wrote {}, {}, {}/metrics.csv", submission, report, s.output_dir);
}

// Why the train graphs of the manifest cannot give every fold of every collection a model
// ("" when they can): fold f trains on the train graphs outside fold f (all of them when
// k = 1), so it needs at least one.
std::string untrainable_folds(const Manifest& manifest, const std::vector<std::string>& collections, int k) {
  std::string why;
  for (const auto& c : collections) {
    const auto train = manifest.graphs_of(c, "train");
    std::vector<int> bad;
    for (int f = 0; f < k; ++f) {
      const auto outside = std::count_if(train.begin(), train.end(), [&](const ManifestGraph* g) {
        return k == 1 || g->fold != f;
      });
      if (outside == 0) bad.push_back(f);
    }
    if (bad.empty()) continue;
    std::string folds;
    for (int f : bad) folds += (folds.empty() ? "" : ",") + std::to_string(f);
    why += (why.empty() ? "" : "; ") + c + " has " + std::to_string(train.size()) + " train graph(s) for " +
           std::to_string(k) + " folds, so fold(s) " + folds + " would train on nothing";
  }
  if (why.empty()) return why;
  return "cannot train: " + why +
         " (lower preprocess.folds and rerun tpuperf-preprocess, or leave the collection out of data.collections)";
}

// A run killed inside write_file_atomic leaves "<file>.tmp.<pid>" beside the file. Only the
// directories training writes are swept: output.dir may also hold the user's own files.
void remove_killed_runs_temporaries(const std::string& output_dir) {
  const int n = remove_stale_temporaries(output_dir, false) + remove_stale_temporaries(output_dir + "/metrics", false) +
                remove_stale_temporaries(output_dir + "/checkpoints", true);
  if (n > 0) spdlog::info("removed {} temporary files that a killed run left in {}", n, output_dir);
}

}  // namespace

int run_training(const Config& cfg, const MpiContext& ctx, const TrainRunOptions& opts) {
  TrainSettings s(cfg);
  int threads = choose_threads(cfg, ctx.world);
  set_compute_threads(threads);
  Manifest manifest = read_manifest(s.processed_dir + "/" + kManifestFileName);
  std::vector<std::string> collections;
  for (const auto& c : s.collections)
    if (std::count(manifest.collections.begin(), manifest.collections.end(), c)) collections.push_back(c);
    else if (ctx.rank == 0) spdlog::warn("{} is not in {}; skipped", c, s.processed_dir);
  if (collections.empty()) throw Error("none of data.collections was preprocessed", s.processed_dir);

  int k = static_cast<int>(Config::from_text(manifest.settings, "manifest settings").get_int("preprocess.folds"));
  if (opts.fresh && (opts.resume || opts.predict_only))
    throw Error("--fresh deletes the checkpoints that --resume and --predict-only need");
  if (opts.resume && opts.predict_only) throw Error("--resume and --predict-only exclude each other");
  if (opts.train_only && opts.predict_only) throw Error("--train-only and --predict-only exclude each other");
  if (opts.predict_only) k = saved_folds(s, collections);
  // Checked on every rank before any work: the same data gives every rank the same answer.
  if (!opts.predict_only) {
    const std::string why = untrainable_folds(manifest, collections, k);
    if (!why.empty()) throw CollectiveError(why, s.processed_dir + "/" + kManifestFileName);
  }
  if (ctx.rank == 0) {
    cfg.log();
    spdlog::info("{} ranks, {} LibTorch threads each, {} folds; fused kernels' vector path: {}", ctx.size, threads,
                 k, kernels::describe_vector_path());
    bool has_ckpt = fs::exists(s.output_dir + "/checkpoints");
    if (has_ckpt && !opts.resume && !opts.fresh && !opts.predict_only)
      throw Error("holds checkpoints of an earlier run: pass --resume to continue it or --fresh to start over",
                  s.output_dir);
    if (opts.fresh) {
      fs::remove_all(s.output_dir + "/checkpoints");
      fs::remove_all(s.output_dir + "/metrics");
    }
    if (!opts.predict_only) {
      // A run that trains changes the models the first pick was decided for: it decides
      // again when it finishes, and until then (or with --train-only) the run has none.
      fs::remove(s.output_dir + "/" + kFirstPickFile);
      remove_killed_runs_temporaries(s.output_dir);
    }
    const auto identity = data_identity(manifest, collections);
    if (opts.resume) check_resume_identity(s.output_dir, cfg, identity);
    make_dirs(s.output_dir);
    // A prediction's config is kept apart: it may name other data, and --resume compares
    // against the config the checkpoints were trained with.
    cfg.save(s.output_dir + "/" + (opts.predict_only ? "predict_config.yaml" : kTrainConfigFile));
    if (!opts.predict_only) {
      save_data_identity(s.output_dir, identity);
      // What preprocessing did to the graphs trained on (pruning hops, dedup): a ranker
      // applies the same to graphs it has never seen (trainer/predict/run_dir.h).
      write_file_atomic(s.output_dir + "/" + kPreprocessSettingsFile, manifest.settings);
    }
  }
  MPI_Barrier(ctx.world);
  FoldLayout layout = make_fold_layout(ctx.world, k);

  std::map<std::string, CollectionSets> sets;
  std::vector<GraphScores> mine;
  for (const auto& c : collections) {
    // Predicting with saved models (possibly for new data, whose manifest may have no
    // transform at all) applies the transform the models were trained with.
    FeatureTransform trained;
    const FeatureTransform* override_transform = nullptr;
    if (opts.predict_only) {
      peek_checkpoint(checkpoint_path(s, c, 0, "best"), &trained);
      override_transform = &trained;
    }
    sets[c].valid = std::make_unique<GraphSet>(s.processed_dir, manifest, c, split_is("valid"), c + " valid",
                                               override_transform);
    sets[c].test = std::make_unique<GraphSet>(s.processed_dir, manifest, c, split_is("test"), c + " test",
                                              override_transform);
    for (int fold : layout.my_folds()) {
      std::string best = checkpoint_path(s, c, fold, "best");
      if (!opts.predict_only) {
        GraphSet train(s.processed_dir, manifest, c,
                       [&](const ManifestGraph& g) { return g.split == "train" && (k == 1 || g.fold != fold); },
                       c + " train fold " + std::to_string(fold));
        train.set_config_cache_mb(s.of(c).config_cache_mb);
        GraphSet oof(s.processed_dir, manifest, c,
                     [&](const ManifestGraph& g) { return k > 1 && g.split == "train" && g.fold == fold; },
                     c + " oof fold " + std::to_string(fold));
        best = train_fold(s, c, fold, {&train, &oof, sets[c].valid.get()}, layout.group_comm, opts.resume);
        if (opts.train_only) continue;
      }
      FeatureTransform transform;
      const ModelSpec configured = s.model_spec(c, 0);
      ModelPtr model = load_trained_model(best, configured, configured.options.fused, &transform);
      // The sets were transformed with the manifest's transform; a model trained on other
      // data (predict-only on a new processed_dir) needs its own: reload with it.
      const GraphSet* valid = sets[c].valid.get();
      const GraphSet* test = sets[c].test.get();
      std::unique_ptr<GraphSet> valid_own, test_own;
      if (!(transform.kept_columns == valid->transform().kept_columns && transform.mean == valid->transform().mean &&
            transform.stddev == valid->transform().stddev && transform.log1p == valid->transform().log1p)) {
        valid_own = std::make_unique<GraphSet>(s.processed_dir, manifest, c, split_is("valid"), c + " valid", &transform);
        test_own = std::make_unique<GraphSet>(s.processed_dir, manifest, c, split_is("test"), c + " test", &transform);
        valid = valid_own.get();
        test = test_own.get();
      }
      for (auto& g : score_set(s, *model, *valid, "valid", fold, false, layout.group_comm)) mine.push_back(std::move(g));
      for (auto& g : score_set(s, *model, *test, "test", fold, true, layout.group_comm)) mine.push_back(std::move(g));
    }
  }
  if (opts.train_only) {
    MPI_Barrier(ctx.world);  // every fold's checkpoints are written
    if (ctx.rank == 0) {
      merge_metrics(s);
      spdlog::info("trained {} folds of {} collections; --predict-only writes the submission and report", k,
                   collections.size());
    }
    return kExitOk;
  }
  std::vector<GraphScores> all = gather_scores(mine, layout);
  int code = kExitOk;
  if (ctx.rank == 0) finish_on_rank0(s, manifest, collections, sets, all, k, opts.predict_only);
  check_mpi(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world), "MPI_Bcast");
  return code;
}

}  // namespace tpuperf
