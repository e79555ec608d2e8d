// tpuperf-featurize's work: XLA tuning record files (.pb) -> the TpuGraphs release tree.
// Each file is read once, told tile or layout, featurized and written; what cannot be
// used is rejected by file, record and reason while every other kernel and file is
// written. Output names follow the release (see pipeline/featurize/README.md):
//   OUT/npz/tile/xla/<split>/<prefix>_<fingerprint as signed hex>.npz   per kept kernel
//   OUT/npz/layout/<source>/<search>/<split>/<prefix>.npz                per module
// <prefix> is --prefix or the input's file name without ".pb".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/featurize/record_scan.h"

namespace tpuperf::featurize {

struct FeaturizeOptions {
  std::string out_dir;
  std::string split = "train";     // train | valid | test
  std::string source = "xla";      // layout only: xla | nlp
  std::string search = "random";   // layout only: random | default
  std::string prefix;              // empty: each input's file stem
  std::optional<RecordKind> kind;  // empty: told from each record
  bool extra_features = false;     // also write node_feat_extra
  int threads = 2;                 // threads writing (deflating, fsyncing) the outputs
};

// Throws Error naming the option when a value is not allowed.
void check_options(const FeaturizeOptions& o);

struct FileRejection {
  std::string file, record, reason;
};

struct FeaturizeSummary {
  int files = 0;
  int64_t bytes = 0;
  int records = 0;     // kernels of tile files plus modules of layout files
  int runs = 0;
  int error_runs = 0;  // runs with their error set: dropped as upstream does
  std::vector<std::string> written;  // output paths, in input order
  int64_t configs_written = 0;
  std::vector<FileRejection> rejected;
};

// Featurizes every file in order, logging a line per file and progress lines. Throws
// Error only for what stops the whole run (an output that cannot be written); a bad
// input is a rejection.
FeaturizeSummary featurize_files(const std::vector<std::string>& files, const FeaturizeOptions& o);

// "op_tuning_data" for ".../op_tuning_data.pb": the directory and a ".pb" suffix go.
std::string record_stem(const std::string& path);

}  // namespace tpuperf::featurize
