// tpuperf-synth: writes a synthetic raw tree in exactly the real TpuGraphs format (the
// real data set cannot be downloaded everywhere), so every stage runs on real-format files.
#include <spdlog/spdlog.h>

#include <string>
#include <thread>

#include "common/cli/cli.h"
#include "common/graph/collection.h"
#include "common/base/error.h"
#include "common/base/log.h"
#include "common/cli/tool_main.h"
#include "pipeline/synth/synth.h"

namespace {

std::vector<tpuperf::Collection> parse_collections(const std::string& list) {
  std::vector<tpuperf::Collection> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string id =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!id.empty()) tpuperf::as_usage_check([&] { out.push_back(tpuperf::Collection::parse(id)); });
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) throw tpuperf::UsageError("--collections names no collection");
  return out;
}

int synth_main(int argc, char** argv) {
  tpuperf::Cli cli("tpuperf-synth",
                   "Writes a synthetic data set in exactly the TpuGraphs release format:\n"
                   "DIR/npz/tile/xla/{train,valid,test}/*.npz,\n"
                   "DIR/npz/layout/{xla,nlp}/{random,default}/{train,valid,test}/*.npz,\n"
                   "and the hidden test runtimes under DIR/truth/ (same tree).\n"
                   "Runtimes come from an analytic TPU cost model (pipeline/synth/simulator.h).");
  cli.option("out", "DIR", "output root (created if missing; existing files are overwritten)")
      .option("seed", "N",
              "random seed; the same seed and scale give byte-identical files (default 1)")
      .option("scale", "SCALE",
              "tiny (tests, seconds), small (the demo, under a minute), bench (real sizes, "
              "~minutes, GBs), release (the real collections' counts and size distributions; "
              "see --fraction), stress or stress-small (shapes the others never have: one-node "
              "and 40k-node graphs, 2 and 100k configs, UTF-8 names, single-graph and empty "
              "splits, ...); default small")
      .option("fraction", "F",
              "release only: write every (1/F)-th file of each split by size, e.g. 0.1 "
              "(DIR/release_plan.tsv lists every planned file; default 1, the whole release)")
      .option("collections", "LIST",
              "comma-separated collection ids (default all: tile:xla,layout:xla:random,"
              "layout:xla:default,layout:nlp:random,layout:nlp:default)")
      .option("threads", "N", "worker threads (default: the machine's cores)")
      .flag("noise-free",
            "also write every file's runtimes without measurement noise under DIR/noise_free/ (same "
            "tree, config_runtime row for row): what a model should learn; the npz tree is unchanged")
      .option("log-level", "LEVEL", "trace, debug, info, warn, error")
      .epilog(
          "examples:\n  tpuperf-synth --out /tmp/tpugraphs --scale tiny --seed 7\n"
          "  tpuperf-synth --out /tmp/release10 --scale release --fraction 0.1\n\n"
          "exit codes: 0 ok, 2 error");
  cli.parse(argc, argv);
  if (cli.has("log-level"))
    tpuperf::as_usage_check([&] { tpuperf::set_log_level(cli.get("log-level")); });
  tpuperf::synth::SynthOptions o;
  o.out_dir = cli.get("out");
  if (o.out_dir.empty()) throw tpuperf::UsageError("missing --out DIR (see tpuperf-synth --help)");
  o.seed = cli.get_int<uint64_t>("seed", 1);
  o.scale = cli.get("scale", "small");
  o.fraction = cli.get_double("fraction", 1.0, 0, 1, tpuperf::Open::Min);
  if (cli.has("collections")) o.collections = parse_collections(cli.get("collections"));
  o.noise_free = cli.has("noise-free");
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  o.threads = cli.get_int("threads", hw > 0 ? hw : 1, 1);
  spdlog::info("writing the {} tree (seed {}{}) to {} with {} threads", o.scale, o.seed,
               o.fraction < 1 ? ", fraction " + std::to_string(o.fraction) : "", o.out_dir, o.threads);
  auto stats = tpuperf::synth::generate_tree(o);
  spdlog::info("done: {} files, {:.1f} MB, {:.1f} s", stats.files,
               static_cast<double>(stats.bytes) / 1e6, stats.seconds);
  return tpuperf::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return tpuperf::run_tool("tpuperf-synth", argc, argv, synth_main);
}
