#include "trainer/predict/run_dir.h"

#include <filesystem>

#include "common/base/error.h"
#include "common/base/log.h"

namespace tpuperf {

namespace fs = std::filesystem;

namespace {

std::string fold_checkpoint(const std::string& dir, const std::string& collection, int fold) {
  return dir + "/checkpoints/" + collection_dir(collection) + "/fold" + std::to_string(fold) + "/best.pt";
}

}  // namespace

int64_t RunDir::chunk(const std::string& collection) const {
  const Kind kind = Collection::parse(collection).kind;
  return config.for_collection(collection).get_int(kind == Kind::Tile ? "train.tile_eval_chunk"
                                                                      : "train.layout_eval_chunk");
}

ModelSpec RunDir::configured_model(const std::string& collection) const {
  return configured_model_spec(config.for_collection(collection), Collection::parse(collection).kind);
}

TileDefault RunDir::tile_default(const std::string& collection) const {
  if (Collection::parse(collection).kind != Kind::Tile) return {};
  return tile_default_of(first_picks, collection, tile_keep_default,
                         config.get_string("output.tile_first_pick") == "default");
}

std::vector<std::string> RunDir::fold_checkpoints(const std::string& collection) const {
  std::vector<std::string> out;
  while (fs::exists(fold_checkpoint(dir, collection, static_cast<int>(out.size()))))
    out.push_back(fold_checkpoint(dir, collection, static_cast<int>(out.size())));
  if (out.empty()) {
    std::string have;
    for (const auto& c : collections()) have += (have.empty() ? "" : ", ") + c;
    throw Error("holds no trained model of " + collection + " (no " + fold_checkpoint(".", collection, 0).substr(2) +
                    "; trained: " + (have.empty() ? "none" : have) + ")",
                dir);
  }
  return out;
}

std::vector<std::string> RunDir::collections() const {
  std::vector<std::string> out;
  for (const Collection& c : Collection::all())
    if (fs::exists(fold_checkpoint(dir, c.id(), 0))) out.push_back(c.id());
  return out;
}

RunDir open_run_dir(const std::string& dir) {
  const std::string config_file = dir + "/" + kTrainConfigFile;
  if (!fs::is_directory(dir)) throw Error("is not a directory (expected a tpuperf-train output.dir)", dir);
  if (!fs::exists(config_file))
    throw Error("is missing: not the output.dir of a finished tpuperf-train run", config_file);
  Config config = Config::load_saved(config_file);
  const std::string settings_file = dir + "/" + kPreprocessSettingsFile;
  const bool have_settings = fs::exists(settings_file);
  PruneRules prune =
      PruneRules::saved(have_settings ? Config::load_saved(settings_file) : config);
  if (!have_settings)
    spdlog::warn("{} has no {} (trained by an older tpuperf): pruning layout graphs by the train config's "
                 "preprocess.prune_* keys ({})",
                 dir, kPreprocessSettingsFile, prune.describe());
  RunDir r{dir, std::move(config), std::move(prune)};
  r.ensemble = parse_ensemble_method(r.config.get_string("output.ensemble"));
  r.tile_keep_default = r.config.get_bool("output.tile_keep_default");
  r.tile_ensemble_spread = r.config.get_float("output.tile_ensemble_spread");
  r.first_picks = read_first_picks(dir);
  return r;
}

}  // namespace tpuperf
