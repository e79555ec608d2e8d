// tpuperf's ranker library: rank the configurations of a computation graph it has never
// seen with the fold models of a finished training run, as an autotuner or a compiler
// would ask it to. No MPI, no processed tree: only the run's directory (tpuperf-train's
// output.dir).
//
//   tpuperf::Ranker ranker("runs/tpugraphs", "tile:xla");
//   tpuperf::Ranking r = ranker.rank(graph, tpuperf::TileCandidates{config_feat});
//   // r.order[0] is the config to run first: the one predicted fastest, or config 0
//
// It applies exactly what the run applied: each checkpoint's feature transform and model,
// the pruning hops its data was preprocessed with, the feature re-padding, the fold
// ensemble (output.ensemble) and, for tile, output.tile_keep_default and the run's first
// pick (output.tile_first_pick: config 0 comes first where the run found the model's first
// pick slower than it on the valid graphs; not in a ranker adapted by measurements that it
// uses). Both take a tile graph's first candidate, config 0, as the compiler's default, as
// the release's files hold it. Identical configs get the same score. Configs are scored in
// chunks, so memory grows with the graph and the number of configs (8 bytes per layout
// config and configurable node), not with the model's activations of all configs at once.
//
// An autotuner that has measured some configs of the graph can adapt the ranker to it,
// and ask which configs to measure next:
//
//   tpuperf::Ranker tuned = ranker.adapted(graph, measured, runtimes);  // seconds
//   tpuperf::Ranking r = tuned.rank(graph, all_candidates);
//   tpuperf::Suggestion next = tuned.suggest(graph, all_candidates, {8, 1.0, 1.0, measured_indices});
//
// By default adapting blends the run's prediction with a ridge fit on the measured
// configs, the blend chosen by cross-validation over the measurements (see AdaptMethod).
//
// Errors are thrown as std::exception subclasses whose what() names the file, the key and
// the reason. A Ranker is not thread-safe; use one per thread.
//
// CMake: find_package(tpuperf) and link tpuperf::ranker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#if defined(__GNUC__)
#define TPUPERF_API __attribute__((visibility("default")))
#else
#define TPUPERF_API
#endif

namespace tpuperf {

// A computation graph in the TpuGraphs release's form (the graph arrays of one .npz).
struct RankGraph {
  std::string name;                  // names the graph in errors and results
  int64_t num_nodes = 0;
  std::vector<float> node_feat;      // num_nodes x 140, the release's node features
  std::vector<uint8_t> node_opcode;  // num_nodes, HLO opcode ids 0..120
  std::vector<int64_t> edge_index;   // num_edges x 2, row [u, v]: u consumes v's output
  std::vector<int64_t> node_splits;  // layout: computation boundaries (may be empty)
};

// Candidate tile sizes: num_configs x 24, the release's config_feat.
struct TileCandidates {
  std::vector<float> config_feat;
};

// Candidate layouts: the configurable nodes and, per config and node, the 18 layout
// values -1..5 (num_configs x nc x 18, the release's node_config_feat).
struct LayoutCandidates {
  std::vector<int64_t> node_config_ids;
  std::vector<int8_t> node_config_feat;
};

struct Ranking {
  std::string collection;      // whose models ranked it, e.g. "tile:xla"
  std::string name;            // the graph's name
  std::vector<int64_t> order;  // every config index, best first (tile: config 0 first by the run's first pick)
  std::vector<double> score;   // per config index: the ensemble's score, lower = predicted faster
  int64_t unique_configs = 0;  // distinct configs scored (duplicates share a score)
  int folds = 0;               // fold models in the ensemble
};

struct RankerOptions {
  // LibTorch threads. Process-wide: a Ranker sets LibTorch's intra-op pool to this and
  // OpenBLAS's own pool to one thread (two pools on the same cores slow it down severalfold).
  int threads = 1;
  bool fused = true;   // the fused CPU kernels, or plain LibTorch ops (the same ranking)
  // Process-wide too: makes glibc's malloc keep freed blocks up to 32 MiB for reuse
  // (mallopt M_MMAP_THRESHOLD, M_TRIM_THRESHOLD) rather than unmap them, so that every
  // call does not pay page faults for its activations again (several-fold on small
  // graphs). false leaves the host's malloc settings alone.
  bool keep_freed_memory = true;
};

// How Ranker::adapted uses the measured configs.
enum class AdaptMethod {
  // The run's ensemble score (each fold model's score standardized on the measured
  // configs, then averaged) blended with a ridge regression on the configs' own values
  // (tile: the 24 config features, log-scaled; layout: each configurable node's 18 layout
  // values, one-hot) fit to the measured log runtimes' residual from the run's score. The
  // candidates (the run alone; the residual fit at weights 0.25 .. 1; the ridge alone;
  // each at ridge penalties 0.0001 .. 10) are scored by Kendall's tau on held-out folds of
  // the measurements, and one replaces the run only where it beats the run by more than
  // one standard error over the folds: with few or uninformative measurements the
  // adapted ranker ranks as the run does. Milliseconds to a second (kBlendMaxMeasured).
  Blend,
  // Fine-tunes copies of the fold models on the measured configs with the run's loss.
  FineTune,
};

// How Ranker::adapted adapts. 0 picks the default.
struct AdaptOptions {
  AdaptMethod method = AdaptMethod::Blend;
  int64_t steps = 0;   // FineTune: optimizer steps per fold model; default kDefaultAdaptSteps
  double lr = 0;       // FineTune: AdamW learning rate, constant; default the run's train.lr x kDefaultAdaptLrFraction
  int64_t slate = 0;   // FineTune: measured configs per step; default the run's train.tile_slate / train.layout_slate
  uint64_t seed = 0;   // FineTune: the slates' draws and dropout's; Blend: the cross-validation folds
};
constexpr int64_t kDefaultAdaptSteps = 60;
constexpr double kDefaultAdaptLrFraction = 0.3;
// Blend: the measured configs the ridge is fit on at most (a seeded sample beyond it), which
// bounds its time (cubic in this number).
constexpr int64_t kBlendMaxMeasured = 512;
// Blend: fewer distinct measured configs than this (re-measured copies count once) are
// too few to cross-validate (at 8, folds of 4 configs let the ridge replace the run on 12 of
// 46 graphs of the tuning-loop bench, most of them wrongly; E38): the run alone.
constexpr int64_t kBlendMinMeasured = 16;

// What an adapted Ranker was adapted on and how (the options with defaults resolved).
struct Adaptation {
  std::string graph;             // the measured graph: its name, or the file it came from
  int64_t measured_configs = 0;  // configs with a runtime
  std::string method;            // "blend" or "finetune"
  uint64_t seed = 0;
  double seconds = 0;            // wall time of the whole adaptation
  // Blend: what the cross-validation chose, e.g. "run", "residual w=0.5 alpha=1",
  // "ridge alpha=0.1"; its weights on the run's standardized score and on the ridge's
  // prediction (1 and 0: the run alone); the folds, and the mean held-out Kendall tau of the
  // run alone and of the choice (NaN when there were too few measurements to fold).
  std::string blend;
  double weight_run = 1, weight_fit = 0;
  int cv_folds = 0;
  double cv_tau_run = 0, cv_tau = 0;
  // FineTune: steps, learning rate and slate; the run's loss and its first and last steps'
  // values, mean over the fold models.
  int64_t steps = 0;
  double lr = 0;
  int64_t slate = 0;
  std::string loss;
  double first_loss = 0;
  double last_loss = 0;
};

// Which configs to measure next (Ranker::suggest).
struct SuggestOptions {
  int64_t count = 8;  // how many (fewer when fewer candidates are left)
  // The weight of the fold models' disagreement on a config (its standard deviation, in
  // the units of the standardized score): 0 picks the predicted best only.
  double exploration = 1.0;
  // The penalty, in the same units, on a candidate per unit of similarity (the share of the
  // candidates' varying config values it has in common) to a config already picked in this
  // batch, so that a batch is not K near-copies of one config.
  double diversity = 1.0;
  // Candidate indices already measured: never suggested, nor any candidate whose config is
  // identical to one of them.
  std::vector<int64_t> exclude;
};

struct Suggestion {
  std::string collection, name;
  int64_t candidates = 0;           // the graph's configs
  std::vector<int64_t> configs;     // candidate indices, in the order to measure them
  std::vector<double> score;        // per suggested config: the predicted cost, standardized over the candidates (lower = faster)
  std::vector<double> uncertainty;  // per suggested config: the fold models' disagreement, same units
};

class TPUPERF_API Ranker {
 public:
  // Loads every fold's best checkpoint of the collection ("tile:xla",
  // "layout:nlp:random", ...) from a run directory.
  Ranker(const std::string& run_dir, const std::string& collection, const RankerOptions& options = {});
  ~Ranker();
  Ranker(Ranker&&) noexcept;
  Ranker& operator=(Ranker&&) noexcept;

  const std::string& collection() const;
  int folds() const;

  // A tile ranker ranks tile candidates, a layout ranker layout candidates.
  Ranking rank(const RankGraph& graph, const TileCandidates& configs) const;
  Ranking rank(const RankGraph& graph, const LayoutCandidates& configs) const;
  // A release-format .npz of the ranker's kind (its runtimes, if any, are not used).
  Ranking rank_file(const std::string& npz_path) const;

  // A Ranker adapted to one graph from measured configs of it (AdaptMethod: by default the
  // run's prediction blended with a ridge fit on the measurements; or copies of the fold
  // models each fine-tuned for options.steps AdamW steps (weight decay 0, the run's
  // gradient clipping) with the run's loss on slates of the measured configs drawn with
  // options.seed, dropout as in training, seeded, which sets LibTorch's random seed
  // (process-wide) as training does). This Ranker and the run's files are left as they are.
  // runtimes[i] is measured config i's: tile runtime / normalizer (any unit: only their
  // order and ratios count), layout runtime; each finite and > 0, at least two configs.
  // The adapted Ranker ranks that graph only (the same node features, opcodes and edges,
  // and for layout configurable nodes): ranking another throws Error naming both. Same
  // options, same thread count: the same adapted ranker (with threads = 1 checked by the
  // tests).
  Ranker adapted(const RankGraph& graph, const TileCandidates& measured, const std::vector<double>& runtimes,
                 const AdaptOptions& options = {}) const;
  Ranker adapted(const RankGraph& graph, const LayoutCandidates& measured, const std::vector<double>& runtimes,
                 const AdaptOptions& options = {}) const;
  // The same from a release-format .npz with runtimes (tile: config_runtime /
  // config_runtime_normalizers; layout: config_runtime). A config whose runtime is 0 counts
  // as not measured; a file with fewer than two measured configs is an Error naming the
  // file and config_runtime.
  Ranker adapted_file(const std::string& measured_npz, const AdaptOptions& options = {}) const;
  // How this Ranker was adapted; nullptr for one loaded from a run as trained.
  const Adaptation* adaptation() const;

  // The options.count candidates to measure next, best first: greedily the lowest
  // predicted cost less options.exploration x the fold models' disagreement, plus
  // options.diversity x the similarity to the configs picked before it. An adapted ranker
  // predicts with its adaptation (the fold models' disagreement weighted by the blend's
  // weight on the run). Deterministic (ties go to the lower index). Throws Error naming the
  // option when count < 1, a weight is negative or not finite, or an excluded index is out
  // of range.
  Suggestion suggest(const RankGraph& graph, const TileCandidates& configs, const SuggestOptions& options = {}) const;
  Suggestion suggest(const RankGraph& graph, const LayoutCandidates& configs, const SuggestOptions& options = {}) const;
  // The same for the configs of a release-format .npz (its runtimes are not used: measured
  // configs are options.exclude).
  Suggestion suggest_file(const std::string& npz_path, const SuggestOptions& options = {}) const;

 private:
  struct Impl;
  explicit Ranker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The collections a run directory holds trained models of, e.g. {"layout:xla:random",
// "tile:xla"}.
TPUPERF_API std::vector<std::string> trained_collections(const std::string& run_dir);

}  // namespace tpuperf
