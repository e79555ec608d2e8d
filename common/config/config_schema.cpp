// Every config key tpuperf understands. A new setting is one line here; the loader,
// --set overrides, the dumped effective config and `--help-config` all follow from it.
#include "common/config/config.h"

#include "common/base/error.h"

namespace tpuperf {

namespace {

std::vector<ConfigKey>& schema_table() {
  using T = ConfigType;
  static std::vector<ConfigKey> schema = {
      {"log.level", T::String, "info", "log level", -1e300, 1e300,
       {"trace", "debug", "info", "warn", "error", "critical", "off"}},

      {"data.raw_dir", T::Path, "\"\"",
       "root of the raw npz tree (the release's npz_all/npz: tile/..., layout/...)"},
      {"data.processed_dir", T::Path, "\"\"", "where preprocessing writes shards and manifest"},
      {"data.collections", T::StringList,
       "[tile:xla, layout:xla:random, layout:xla:default, layout:nlp:random, layout:nlp:default]",
       "collections to process",
       -1e300, 1e300,
       {"tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random",
        "layout:nlp:default"}},

      // One hop on every layout collection (no collections: entry): two on layout:xla:default
      // ranked one generated graph better but not unseen graphs, at 1.8x the nodes
      // (docs/experiments E13).
      {"preprocess.prune_hops", T::Int, "1",
       "layout graphs keep their configurable nodes and the nodes within this many hops of one "
       "(0: only configurable nodes, -1: no pruning)",
       -1, 64},
      // 3 (docs/experiments E14): the generated xla:default squeezenet
      // within one graph 0.874 against 0.844 (mean of seeds 0-3; the GBT 0.882), whose
      // consecutive convolutions are 4 edges apart; 1 pruned node gave 0.839 / 0.849 on
      // seeds 0 / 1. Unseen graphs stay level (bench tree xla:default test 0.326 against
      // 0.331, cv 0.538 against 0.539; nlp:random 0.412 against 0.407). Saved settings
      // without the key read it as 0 (PruneRules::saved), which is how their data was pruned.
      {"preprocess.prune_bridges", T::Int, "3",
       "join two kept nodes by an edge when one consumes the other through at most this many pruned "
       "nodes (0: no bridges; applied where a collection is pruned by 1 hop or more)",
       0, 64},
      {"preprocess.dedup", T::String, "min",
       "runtime kept for re-measured duplicate configs in train/valid", -1e300, 1e300,
       {"min", "mean", "first"}},
      {"preprocess.folds", T::Int, "5", "cross-validation folds over train graphs", 1, 64},
      {"preprocess.fold_by", T::String, "auto",
       "what folds group: family (graphs of one model family share a fold), graph, or auto (family "
       "when the families fill the folds in balance, else graph)", -1e300, 1e300, {"auto", "family", "graph"}},
      {"preprocess.seed", T::Int, "0", "seed of the fold assignment", 0, 9.2e18},
      {"preprocess.shard_mb", T::Float, "256", "target size of one HDF5 shard in MB", 0.01, 1e6},
      {"preprocess.log_columns", T::Bool, "true",
       "log1p-transform heavy-tailed node feature columns before standardizing"},
      {"preprocess.drop_constant_columns", T::Bool, "true",
       "drop node feature columns that are constant on the train split"},
      {"preprocess.compression", T::Int, "4", "deflate level of the shards (0 = none)", 0, 9},

      {"train.epochs", T::Int, "10", "training epochs per fold", 0, 1e6},
      {"train.seed", T::Int, "0", "seed of model initialization and sampling", 0, 9.2e18},
      {"train.threads_per_rank", T::Int, "0",
       "LibTorch threads per rank (0: cores / ranks on this node)", 0, 1024},
      {"train.lr", T::Float, "0.001", "peak learning rate (AdamW)", 1e-7, 1},
      {"train.weight_decay", T::Float, "0.0001", "AdamW weight decay", 0, 1},
      {"train.warmup_fraction", T::Float, "0.05",
       "fraction of the steps with a linear warm-up before the cosine decay", 0, 0.5},
      {"train.grad_clip", T::Float, "1.0", "gradient norm clipping (0: off)", 0, 1e6},
      // Averaged weights (docs/experiments E10): within one graph the real
      // layout module 0.424 against 0.415 (10 splits) and all four generated layout files
      // higher (xla:default 0.840 / 0.840 against 0.837 / 0.839, seeds 0 / 1); across graphs
      // within the seeds' noise (bench-tree cv: xla:default 0.539 against 0.527, nlp:random
      // 0.694 against 0.704, whose seed 1 gave 0.683).
      {"train.ema_decay", T::Float, "0.99",
       "decay of the exponential moving average of the weights that evaluation, checkpoints and "
       "predictions use (0: off; update t weighs the old average min(ema_decay, (1 + t) / (10 + t)))",
       0, 0.99999},
      // Choices: the trainer's loss table (trainer/losses/registry.h). Per kind, chosen on
      // the bench tree (docs/experiments E1): hinge ranked tile's unseen graphs best (its
      // metric is the top 5), ListMLE layout's full orders.
      {"train.tile_loss", T::String, "hinge", "ranking loss of tile models"},
      {"train.layout_loss", T::String, "listmle", "ranking loss of layout models"},
      {"train.hinge_margin", T::Float, "0.1", "margin of the pairwise hinge loss", 0, 100},
      {"train.softmax_temperature", T::Float, "0.1",
       "softmax_top loss: temperature of the target distribution softmax(-log runtime / T)", 1e-4, 100},
      {"train.graphs_per_step", T::Int, "8", "graphs per optimizer step (over a fold group)", 1, 4096},
      {"train.steps_per_epoch", T::Int, "0",
       "optimizer steps per epoch (0: one pass over the fold's train graphs, raised to "
       "train.min_steps_per_epoch)", 0, 1e9},
      // One pass over a small collection's graphs is one or two steps per epoch (the bench
      // tree's 6-7 train graphs per fold: 10 optimizer steps in all), far too few to learn;
      // the release's layout collections (61-207 graphs) make 8-26 steps a pass, its tile
      // collection 714. The collections with a floor of their own are in the default
      // collections: section (collection_defaults()).
      {"train.min_steps_per_epoch", T::Int, "20",
       "floor on the steps of an epoch that is one pass over the train graphs (steps_per_epoch 0)", 1, 1e9},
      // One real layout graph of 64 train configs (the Baselines bench's 10 splits, 10
      // epochs) ranked its held-out configs at tau 0.329 / 0.392 / 0.373 / 0.346 with 6 / 12
      // / 24 passes an epoch / no cap (40 passes); 3 and 5 epochs uncapped: 0.404 / 0.380.
      {"train.max_config_passes_per_epoch", T::Float, "12",
       "cap on the step floors (train.min_steps_per_epoch, train.single_graph_min_config_passes_per_epoch): a floor makes an epoch pass over "
       "the fold's train configs at most about this often (0 = no cap)", 0, 1e9},
      // One generated layout graph of 2,000 train configs at 20 steps an epoch (1.3 passes)
      // ranked its held-out configs below ridge regression; about 4 passes an epoch (60
      // steps) ranked the three largest xla:default files 0.005-0.033 better
      // (docs/experiments E12), 8 passes the squeezenet file 0.892 against 0.874
      // (mean of seeds 0-3; the GBT 0.882) and its seeds 0.006 apart instead of 0.031
      // (docs/experiments E15). Folds of two graphs or more are not affected.
      {"train.single_graph_min_config_passes_per_epoch", T::Float, "8",
       "a fold of one train graph trains at least about this many passes over its train configs an epoch, "
       "within train.max_config_passes_per_epoch (0 = off)",
       0, 1e9},
      // The floors count configs, not what they cost: a fold of one 7,223-node graph of a
      // release-scale sample planned 435 steps of 128 configs an epoch (8 passes), ~40 min an
      // epoch on one rank at the default layout model's ~6 us a node-config. 10^8
      // node-configs are ~10 min; the Baselines bench's lone graphs (2,000 train configs,
      // up to ~7k nodes, 2 ranks) plan at most ~6 x 10^7 a rank and are not cut.
      {"train.max_node_configs_per_epoch", T::Float, "1e8",
       "cap on the step floors by cost: a floor makes one rank's epoch process at most about this many "
       "node-configs (a graph's nodes times the configs of its slates, a rank's share of each step) "
       "(0 = no cap); never below one pass over the train graphs",
       0, 1e15},
      {"train.tile_slate", T::Int, "32", "configs per tile graph in a step", 2, 4096},
      {"train.layout_slate", T::Int, "16", "configs per layout graph in a step", 2, 4096},
      // Scoring the out-of-fold and valid graphs costs a layout fold of the demo about a
      // quarter of its epoch; a run of many epochs can score every few and keep the best of those.
      {"train.eval_every", T::Int, "1",
       "score the out-of-fold and valid graphs every this many epochs (and always after the last); "
       "only scored epochs compete for the kept (best) checkpoint",
       1, 1e6},
      {"train.eval_max_configs", T::Int, "1000",
       "configs scored per layout graph in evaluation (deterministic sample)", 2, 1e7},
      // Measured on the demo's valid split (4 layout collections): chunks of 16, 128 and 1000
      // layout configs gave Kendall tau within 0.003 of each other.
      // Ranking 1,000 tile configs (87 nodes) with 5 default fold models on one thread took
      // 467, 436, 388, 403 and 508 ms with chunks of 16, 32, 64, 128 and 512 configs
      // (tests/bench/bench_rank.sh's inputs). Without tile attention heads (the default) a tile
      // config's score does not depend on the other configs of its chunk.
      {"train.tile_eval_chunk", T::Int, "64",
       "tile configs scored in one forward pass in evaluation and prediction", 1, 1e7},
      {"train.layout_eval_chunk", T::Int, "128",
       "layout configs scored in one forward pass in evaluation and prediction (cross-config "
       "attention sees one chunk at a time)", 1, 1e7},
      // With HDF5's 1 MiB cache, slates of 16 configs from the small bench tree's
      // layout:xla:random graphs spent 12.6-13.3 ms of a 50 ms training step building the
      // batch, mostly inflating 64 KiB chunks of config rows; with 256 MiB, 2.7-3.0 ms (the
      // step trace at --log-level debug, 1 rank, 2026-11-26). That tree's rows inflate to 7 MB.
      {"train.config_cache_mb", T::Float, "256",
       "MiB of inflated layout config rows a rank keeps in memory for its train set (HDF5's "
       "chunk cache, split over the set's shards; 0: HDF5's default of 1 MiB per shard)", 0, 1e7},
      {"train.stall_timeout_s", T::Float, "600",
       "a rank waiting longer than this at the gradient all-reduce names the late ranks and aborts "
       "the job (0: wait forever)", 0, 1e7},

      {"model.fused", T::Bool, "true",
       "run the models' hot path in the fused CPU kernels (false: plain LibTorch ops, the models' "
       "reference definition; same results up to float rounding)"},
      // Choices: the trainer's model registry (trainer/models/registry.h).
      {"model.tile.arch", T::String, "early_join_shape", "tile model architecture"},
      {"model.tile.hidden", T::Int, "64", "tile model width", 4, 4096},
      {"model.tile.layers", T::Int, "3", "tile model SAGE blocks", 0, 64},
      {"model.tile.dropout", T::Float, "0.1", "tile model dropout", 0, 0.9},
      {"model.tile.attention_heads", T::Int, "0",
       "tile model cross-config attention heads (0: off; must divide hidden)", 0, 64},
      {"model.tile.opcode_dim", T::Int, "32", "tile model opcode embedding width", 1, 4096},
      // sage_shape_context against sage_shape (docs/experiments E4; the bench tree's figures
      // in RESULTS.md, "Layout architectures", 2026-11-26): cv +0.017 over the four layout
      // collections, and within one graph the real layout module 0.35 against 0.29 over 3 splits.
      {"model.layout.arch", T::String, "sage_shape_context", "layout model architecture"},
      {"model.layout.hidden", T::Int, "64", "layout model width", 4, 4096},
      {"model.layout.layers", T::Int, "3", "layout model SAGE blocks", 0, 64},
      {"model.layout.dropout", T::Float, "0.1", "layout model dropout", 0, 0.9},
      {"model.layout.attention_heads", T::Int, "4",
       "layout model cross-config attention heads (0: off; must divide hidden)", 0, 64},
      {"model.layout.opcode_dim", T::Int, "32", "layout model opcode embedding width", 1, 4096},

      {"output.dir", T::Path, "\"\"", "where training writes checkpoints, predictions, reports"},
      {"output.ensemble", T::String, "mean_z", "how fold models' scores are combined per graph",
       -1e300, 1e300, {"mean_z", "mean_rank", "mean_raw"}},
      {"output.tile_ensemble_spread", T::Float, "0.5",
       "tile: each config's ensemble score is the fold models' mean plus this many times their standard "
       "deviation (a config they disagree on ranks as slower: a cautious first pick; 0.5 lowered the "
       "first pick's slowdown on 3 of 3 seeds over 360 unseen graphs, E43); 0 = the mean",
       0, 100},
      {"output.tile_keep_default", T::Bool, "true",
       "tile predictions keep config 0 (the compiler default) among the top 5: the metric takes "
       "the best of the 5, so no graph scores below its default"},
      {"output.tile_first_pick", T::String, "auto",
       "tile: what a graph's ranking puts first (what an autotuner measuring one config runs): "
       "'model', its best-scored config; 'default', config 0 (the compiler default), then the model's "
       "order; 'auto', config 0 when on the valid graphs the ensemble's first pick is slower on average "
       "than config 0 (top-1 slowdown), else the model's (the demo's under-trained tile model: 1.58 "
       "against 1.22; at the defaults on the bench tree 1.04-1.06 against 1.30, E47). The top 5's set "
       "is the same either way when output.tile_keep_default is on",
       -1e300, 1e300, {"auto", "model", "default"}},
  };
  return schema;
}

}  // namespace

const std::vector<ConfigKey>& config_schema() { return schema_table(); }

const std::vector<CollectionDefault>& collection_defaults() {
  static const std::vector<CollectionDefault> defaults = {
      // Tile graphs are small and many: 60 steps an epoch ranked the bench tree's unseen tile
      // graphs better than 20 (docs/experiments E1), at a tenth of a layout step's cost. At 60
      // the model's first pick was as bad as a random one's: it ranks bigger tiles faster and
      // had not learned where they spill out of the scratchpad. 300, on the bench tree (3
      // seeds x 5 folds; 60 in brackets): test top-1 slowdown 1.18-1.39 (1.68-2.03), oof
      // 1.25-1.35 (1.46-1.69), test 0.979-0.984 (0.961-0.977), cv 0.9599 (0.9561) on average
      // (docs/experiments E36). The release's pass is ~714 steps, above either floor.
      {"tile:xla", "train.min_steps_per_epoch", "300"},
      // No averaging for tile:xla (docs/experiments E11): on the bench tree it ranked the 30
      // unseen test graphs 0.970 against 0.962 and valid 0.964 against 0.957 (cv 0.957
      // against 0.958); the tile files within one graph are 1.000 either way.
      {"tile:xla", "train.ema_decay", "0"},
      // Dropout 0.3 against 0.1 on layout:xla:random (docs/experiments E7): the real layout
      // module within one graph 0.417 / 0.414 against 0.392 / 0.385 (10 splits, seeds 0 /
      // 1), the generated file within one graph and the bench tree's cv at the defaults
      // level. Not the others: on xla:default cv fell at the defaults (0.504 against
      // 0.518), and the nlp collections lost in every measure.
      {"layout:xla:random", "model.layout.dropout", "0.3"},
      // The nlp collections' cv still rose from 20 to 40 steps (0.416 -> 0.446 nlp:default,
      // 0.699 -> 0.705 nlp:random) where xla:random levels off at 20 (RESULTS.md, "Time to
      // quality", 2026-11-26). With sage_shape_context xla:default's cv rose 0.534 -> 0.556
      // from 20 to 40 (test and valid too), nlp:default's only 0.429 -> 0.430 from 40 to 80
      // (docs/experiments E20, E21).
      {"layout:xla:default", "train.min_steps_per_epoch", "40"},
      // No cross-config attention on layout:xla:default (docs/experiments E8): the generated
      // file within one graph 0.837 / 0.839 against 0.833 / 0.835 (seeds 0 / 1), on the
      // bench tree cv 0.527 against 0.518, test and valid level.
      {"layout:xla:default", "model.layout.attention_heads", "0"},
      {"layout:nlp:random", "train.min_steps_per_epoch", "40"},
      // Nor on layout:nlp:random (docs/experiments E10): on the bench tree cv 0.714 / 0.708
      // against 0.704 / 0.694 (without / with weight averaging), test 0.419 / 0.407 against
      // 0.407 / 0.395, in about 0.6x the training time; within one graph 0.962 against 0.956.
      {"layout:nlp:random", "model.layout.attention_heads", "0"},
      {"layout:nlp:default", "train.min_steps_per_epoch", "40"},
  };
  return defaults;
}

std::string collection_key_problem(const ConfigKey& key, Kind kind) {
  const auto starts = [&](const char* prefix) { return key.path.rfind(prefix, 0) == 0; };
  const bool tile = kind == Kind::Tile;
  const std::string kind_name = tile ? "tile" : "layout";
  if (key.path == "train.threads_per_rank") return "is one per process, not per collection";
  if (key.path == "preprocess.prune_hops" || key.path == "preprocess.prune_bridges")
    return tile ? "tile graphs are not pruned" : "";
  if (!starts("train.") && !starts("model."))
    return "is not per collection (a collection's section takes train.*, model.*, preprocess.prune_hops and "
           "preprocess.prune_bridges)";
  if (starts(tile ? "model.layout." : "model.tile.") || starts(tile ? "train.layout_" : "train.tile_"))
    return "a " + kind_name + " collection does not read it (its keys are model." + kind_name + ".* and train." +
           kind_name + "_*)";
  return "";
}

std::string collections_help() {
  std::string out =
      "  collections (map of collection id to keys, default below)\n"
      "      a collection's own values of train.*, model.*, preprocess.prune_hops and\n"
      "      preprocess.prune_bridges, checked as the keys are; they replace the top-level values\n"
      "      for that collection alone. Entries merge over the default section; null removes one\n"
      "      (the collection follows the top-level key), <id>: null clears the collection's\n"
      "      section. In a file: collections: {layout:xla:random: {model.layout.dropout: 0.3}};\n"
      "      on the command line: --set collections.layout:xla:random.model.layout.dropout=0.3\n";
  for (const auto& d : collection_defaults())
    out += "      " + d.collection + ": " + d.key + ": " + d.value_yaml + "\n";
  return out;
}

void set_schema_choices(const std::string& key, std::vector<std::string> choices,
                        std::map<std::string, std::string> retired) {
  for (ConfigKey& k : schema_table())
    if (k.path == key) {
      k.choices = std::move(choices);
      k.retired = std::move(retired);
      return;
    }
  throw Error("no such config key", "", key);
}

}  // namespace tpuperf
