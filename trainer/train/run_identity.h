// What a training run was started with, so that --resume refuses to continue it on other
// data or settings: checkpoints trained on one set of graphs and folds, then continued on
// another, would end in a model that neither run describes.
//
// output.dir/train_config.yaml (the effective config, saved by every run) holds the
// settings; output.dir/data_identity.txt holds one line per collection:
//   <collection> <digest of its train/valid graphs, folds, shard hashes and transform>
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/shards/manifest.h"

namespace tpuperf {

constexpr const char* kDataIdentityFileName = "data_identity.txt";

// Collection -> digest of what its fold models train and select on.
std::map<std::string, std::string> data_identity(const Manifest& manifest,
                                                 const std::vector<std::string>& collections);

// Writes data_identity.txt into output_dir atomically.
void save_data_identity(const std::string& output_dir,
                        const std::map<std::string, std::string>& identity);

// For --resume, before the run saves its own config: throws Error naming every train.* or
// model.* key whose value differs from the saved train_config.yaml (threads_per_rank may
// change: it does not change the result) and every collection whose data changed. A run
// saved without these files is resumed with a warning.
void check_resume_identity(const std::string& output_dir, const Config& now,
                           const std::map<std::string, std::string>& data_now);

}  // namespace tpuperf
