#include "pipeline/preprocess/settings.h"

#include "common/base/error.h"
#include "common/base/progress.h"

namespace tpuperf {

PreprocessSettings::PreprocessSettings(const Config& cfg)
    : raw_root(cfg.get_path("data.raw_dir")),
      out_dir(cfg.get_path("data.processed_dir")),
      collections(cfg.get_list("data.collections")),
      prune(cfg),
      dedup(parse_dedup_policy(cfg.get_string("preprocess.dedup"))),
      folds(static_cast<int>(cfg.get_int("preprocess.folds"))),
      fold_by(parse_fold_by(cfg.get_string("preprocess.fold_by"))),
      seed(static_cast<uint64_t>(cfg.get_int("preprocess.seed"))),
      shard_bytes(static_cast<int64_t>(cfg.get_float("preprocess.shard_mb") * kBytesPerMB)),
      deflate(static_cast<int>(cfg.get_int("preprocess.compression"))) {
  fit.drop_constant = cfg.get_bool("preprocess.drop_constant_columns");
  fit.log_columns = cfg.get_bool("preprocess.log_columns");
  if (raw_root.empty()) throw Error("is not set", "", "data.raw_dir");
  if (out_dir.empty()) throw Error("is not set", "", "data.processed_dir");
  if (collections.empty()) throw Error("selects no collection", "", "data.collections");
}

PreprocessSettings PreprocessSettings::saved(const Config& cfg) {
  PreprocessSettings s(cfg);
  s.prune = PruneRules::saved(cfg);
  return s;
}

}  // namespace tpuperf
