// tpuperf's ranker library: rank the configurations of a computation graph it has never
// seen with the fold models of a finished training run, as an autotuner or a compiler
// would ask it to. No MPI, no processed tree: only the run's directory (tpuperf-train's
// output.dir).
//
//   tpuperf::Ranker ranker("runs/tpugraphs", "tile:xla");
//   tpuperf::Ranking r = ranker.rank(graph, tpuperf::TileCandidates{config_feat});
//   // r.order[0] is the config predicted fastest
//
// It applies exactly what the run applied: each checkpoint's feature transform and model,
// the pruning hops its data was preprocessed with, the feature re-padding, the fold
// ensemble (output.ensemble) and, for tile, output.tile_keep_default; identical configs
// get the same score. Configs are scored in chunks, so memory grows with the graph and the
// number of configs (8 bytes per layout config and configurable node), not with the
// model's activations of all configs at once.
//
// An autotuner that has measured some configs of the graph can adapt the ranker to it:
//
//   tpuperf::Ranker tuned = ranker.adapted(graph, measured, runtimes);  // seconds
//   tpuperf::Ranking r = tuned.rank(graph, all_candidates);
//
// fine-tunes copies of the fold models on the measured configs (see Ranker::adapted).
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
  std::vector<int64_t> order;  // every config index, best first
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

// How Ranker::adapted fine-tunes the fold models. 0 picks the default.
struct AdaptOptions {
  int64_t steps = 0;   // optimizer steps per fold model; default kDefaultAdaptSteps
  double lr = 0;       // AdamW learning rate, constant; default the run's train.lr x kDefaultAdaptLrFraction
  int64_t slate = 0;   // measured configs per step; default the run's train.tile_slate / train.layout_slate
  uint64_t seed = 0;   // the slates' draws and dropout's
};
constexpr int64_t kDefaultAdaptSteps = 60;
constexpr double kDefaultAdaptLrFraction = 0.3;

// What an adapted Ranker was fine-tuned on and how (the options with defaults resolved).
struct Adaptation {
  std::string graph;             // the measured graph: its name, or the file it came from
  int64_t measured_configs = 0;  // configs with a runtime
  int64_t steps = 0;
  double lr = 0;
  int64_t slate = 0;
  uint64_t seed = 0;
  std::string loss;              // the run's train.tile_loss / train.layout_loss
  double first_loss = 0;         // the first step's loss, mean over the fold models
  double last_loss = 0;          // the last step's loss, mean over the fold models
  double seconds = 0;            // wall time of the whole adaptation
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

  // A Ranker adapted to one graph from measured configs of it: copies of the fold models,
  // each fine-tuned for options.steps AdamW steps (weight decay 0, the run's gradient
  // clipping) with the run's loss on slates of the measured configs drawn with
  // options.seed; dropout as in training, seeded. This Ranker and the run's files are left
  // as they are. runtimes[i] is measured config i's: tile runtime / normalizer (any unit:
  // the losses compare runtimes), layout runtime; each finite and > 0, at least two configs.
  // The adapted Ranker ranks that graph only (the same node features, opcodes and edges,
  // and for layout configurable nodes): ranking another throws Error naming both. Same
  // options, same thread count: the same adapted models (with threads = 1 checked by the
  // tests). Sets LibTorch's random seed (process-wide), as training does.
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

 private:
  struct Impl;
  explicit Ranker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The collections a run directory holds trained models of, e.g. {"layout:xla:random",
// "tile:xla"}.
TPUPERF_API std::vector<std::string> trained_collections(const std::string& run_dir);

}  // namespace tpuperf
