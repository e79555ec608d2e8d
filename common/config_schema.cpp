// Every config key tpuperf understands. A new setting is one line here; the loader,
// --set overrides, the dumped effective config and `--help-config` all follow from it.
#include "common/config.h"

namespace tpuperf {

const std::vector<ConfigKey>& config_schema() {
  using T = ConfigType;
  static const std::vector<ConfigKey> schema = {
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

      {"preprocess.prune_hops", T::Int, "1",
       "keep configurable nodes and nodes within this many hops (0: only configurable, -1: no pruning)",
       -1, 64},
      {"preprocess.dedup", T::String, "min",
       "runtime kept for re-measured duplicate configs in train/valid", -1e300, 1e300,
       {"min", "mean", "first"}},
      {"preprocess.folds", T::Int, "5", "cross-validation folds over train graphs", 1, 64},
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

      {"output.dir", T::Path, "\"\"", "where training writes checkpoints, predictions, reports"},
  };
  return schema;
}

}  // namespace tpuperf
