// tpuperf-featurize: XLA tuning records (.pb) -> the TpuGraphs release tree of .npz files
// that tpuperf-preprocess reads. See pipeline/featurize/README.md.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "common/cli/cli.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "common/base/log.h"
#include "common/cli/tool_main.h"
#include "pipeline/featurize/featurize.h"

namespace {

using namespace tpuperf;
using namespace tpuperf::featurize;

const char* kSummary =
    "Turns XLA tuning records into training data: the npz files of the TpuGraphs release,\n"
    "with its keys, dtypes and features, computed as the release's featurizer did.\n"
    "  a TuningData (tile-size tuning, one entry per kernel) -> one file per kept kernel:\n"
    "      OUT/npz/tile/xla/SPLIT/PREFIX_HEX.npz\n"
    "  a ModuleTuningData (layout tuning of one module) -> one file:\n"
    "      OUT/npz/layout/SOURCE/SEARCH/SPLIT/PREFIX.npz\n"
    "PREFIX is --prefix or the input's file name without .pb; HEX is the kernel's\n"
    "fingerprint read as a signed 64-bit number in hex, '-' for negative values, as in the\n"
    "release's names (alexnet_train_batch_32_-1bae27a41d70f4dc; the rule is inferred from\n"
    "the release, see pipeline/featurize/README.md). Which message a file holds is told\n"
    "from its fields (--kind overrides). Then: tpuperf-preprocess with data.raw_dir: OUT/npz.";

const char* kEpilog =
    "kept as by the release's featurizer:\n"
    "  tile: kernels with at least 2 runs, a tile config on every run and a default run;\n"
    "        runs without error and with a runtime above 1 ns; normalizer = the default's\n"
    "        runtime;\n"
    "  layout: runs with a layout config, no error and a profile, in record order, when one\n"
    "        of them is the default.\n"
    "  Runs with their error set are dropped quietly (failed measurements). Everything else\n"
    "  left out is rejected, naming file, record (kernel, module or run) and reason, on\n"
    "  stderr and in --rejected FILE; other kernels and files are still written. An output\n"
    "  file that exists is replaced.\n\n"
    "--split test keeps the measured runtimes (the release zeroed them and hashed names);\n"
    "tpuperf-score can then score a submission against the same tree.\n\n"
    "--extra-features adds node_feat_extra (float32, nodes x 56; columns in\n"
    "pipeline/featurize/extra_features.h and README.md); the release keys stay as they are.\n\n"
    "examples:\n"
    "  tpuperf-featurize --out data/mine tuning/*.pb\n"
    "  tpuperf-featurize --out data/mine --split valid --prefix resnet50 resnet50_tiles.pb\n"
    "  tpuperf-featurize --out data/mine --source nlp --search default bert_layout.pb\n\n"
    "exit codes: 0 ok, 2 error (bad usage, an output that cannot be written), 3 finished\n"
    "but some inputs (files, kernels, modules or runs) were rejected.";

std::optional<RecordKind> parse_kind(const std::string& kind) {
  if (kind.empty() || kind == "auto") return std::nullopt;
  if (kind == "tile") return RecordKind::Tile;
  if (kind == "layout") return RecordKind::Layout;
  throw UsageError("--kind " + kind + " is not one of auto, tile, layout");
}

// Writing waits on the disk (each npz is fsynced) more than on a core: writers overlap
// those waits even beyond the cores. On 2 cores the bench's 640 files took 3.5-4.7 s with
// 2 writers, 3.0-3.4 s with 4 and 2.5-3.1 s with 8 (tests/bench/bench_featurize.sh's files).
int default_threads() { return std::max(8, static_cast<int>(std::thread::hardware_concurrency())); }

void write_rejected(const std::string& path, const FeaturizeSummary& s) {
  std::string text = "# file\trecord\treason\n";
  for (const auto& r : s.rejected) text += r.file + "\t" + r.record + "\t" + r.reason + "\n";
  write_file_atomic(path, text);
}

int featurize_main(int argc, char** argv) {
  Cli cli("tpuperf-featurize", kSummary);
  cli.positionals("FILE.pb...", "tuning record files (TuningData or ModuleTuningData)", 1)
      .option("out", "DIR", "output root: files go to DIR/npz/... (created as needed)")
      .option("split", "SPLIT", "train, valid or test (default train)")
      .option("source", "SOURCE", "layout files: xla or nlp (default xla)")
      .option("search", "SEARCH", "layout files: random or default (default random)")
      .option("prefix", "NAME", "output name prefix (default: each input's file name without .pb)")
      .option("kind", "KIND", "auto (default), tile or layout: what every input holds")
      .flag("extra-features", "also write node_feat_extra (nodes x 56 float32)")
      .option("rejected", "FILE", "also write the rejections there: file, record, reason (TSV)")
      .option("threads", "N",
              "threads writing the npz files (deflate, fsync) beside the one featurizing;\n"
              "      default: the cores, at least 8 (they mostly wait for fsync)")
      .option("log-level", "LEVEL", "trace, debug, info, warn, error")
      .epilog(kEpilog);
  cli.parse(argc, argv);
  if (cli.has("log-level"))
    as_usage_check([&] { set_log_level(cli.get("log-level")); });
  FeaturizeOptions o;
  o.out_dir = cli.get("out");
  o.split = cli.get("split", o.split);
  o.source = cli.get("source", o.source);
  o.search = cli.get("search", o.search);
  o.prefix = cli.get("prefix");
  o.kind = parse_kind(cli.get("kind"));
  o.extra_features = cli.has("extra-features");
  o.threads = cli.get_int("threads", default_threads(), 1);
  as_usage_check([&] { check_options(o); });
  FeaturizeSummary s = featurize_files(cli.args(), o);
  if (cli.has("rejected")) write_rejected(cli.get("rejected"), s);
  spdlog::info("featurized {} files ({:.1f} MB, {} records, {} runs of which {} with an error): {} "
               "npz files with {} configs written under {}/npz, {} rejections",
               s.files, s.bytes / 1e6, s.records, s.runs, s.error_runs, s.written.size(),
               s.configs_written, o.out_dir, s.rejected.size());
  if (s.rejected.empty()) return kExitOk;
  std::fprintf(stderr, "tpuperf-featurize: %zu rejected (file, record, reason):\n", s.rejected.size());
  for (const auto& r : s.rejected)
    std::fprintf(stderr, "  %s\t%s\t%s\n", r.file.c_str(), r.record.c_str(), r.reason.c_str());
  return kExitRejected;
}

}  // namespace

int main(int argc, char** argv) { return run_tool("tpuperf-featurize", argc, argv, featurize_main); }
