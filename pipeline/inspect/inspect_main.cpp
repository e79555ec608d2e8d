// tpuperf-inspect FILE...: keys, dtypes and shapes of .npz files and a summary of the
// TpuGraphs graph they hold; for HDF5 shards of tpuperf-preprocess, the graphs they hold,
// one graph in detail (--graph) and its comparison with the source file (--compare).
#include <cstdio>

#include "common/cli/cli.h"
#include "common/base/error.h"
#include "common/formats/json.h"
#include "common/cli/tool_main.h"
#include "pipeline/inspect/npz_summary.h"
#include "pipeline/inspect/shard_summary.h"

using namespace tpuperf;

static const char* kEpilog =
    "--json prints one object: {\"files\": [ {\"path\": P, \"type\": \"npz\", \"file_size\": N,\n"
    "  \"keys\": {NAME: {\"dtype\": \"<f4\", \"shape\": [..]}, ...},\n"
    "  \"summary\": {\"kind\": \"tile\"|\"layout\", \"nodes\", \"edges\", \"configs\", \"config_nodes\",\n"
    "               \"runtime_min\", \"runtime_max\", \"validated\"}   (graph files only)\n"
    "  } or, for a shard, {\"path\": P, \"type\": \"shard\", \"collection\", \"split\",\n"
    "  \"graphs\": [{\"name\", \"fold\", \"nodes\", \"edges\", \"configs\", ...}]}\n"
    "  or {\"path\": P, \"error\": MESSAGE} ]}\n\n"
    "shards: tpuperf-inspect SHARD.h5 [--graph NAME [--compare [--source FILE.npz]]]\n"
    "  --compare recomputes the graph from its source with the settings in the manifest\n"
    "  beside the shard and exits 1 if any field differs.\n\n"
    "exit codes: 0 all files read, 1 --compare found a difference, 2 some file could not be\n"
    "read (each is reported).";

static bool is_shard(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0;
}

// Returns true when --compare found a difference.
static bool inspect_shard(const Cli& cli, const std::string& path, bool json_out, JsonWriter& json) {
  if (json_out) {
    shard_json(json, path);
    return false;
  }
  if (!cli.has("graph")) {
    std::fputs(shard_text(path).c_str(), stdout);
    return false;
  }
  std::fputs(shard_graph_text(path, cli.get("graph")).c_str(), stdout);
  if (!cli.has("compare")) return false;
  bool identical = false;
  std::fputs(compare_with_source(path, cli.get("graph"), cli.get("source"), identical).c_str(), stdout);
  return !identical;
}

static int inspect(int argc, char** argv) {
  Cli cli("tpuperf-inspect", "Show what a TpuGraphs .npz file holds: each key with dtype and shape, and "
                             "a one-line graph summary (nodes, edges, configs, runtimes).");
  cli.positionals("FILE...", ".npz files to inspect", 1)
      .flag("json", "machine-readable output on stdout (format below)")
      .flag("validate", "also load the whole graph and check every rule of the format")
      .option("graph", "NAME", "shards: print this graph in detail")
      .flag("compare", "shards: with --graph, recompute the graph from its source and compare")
      .option("source", "FILE", "shards: the source .npz for --compare (default: from the manifest)")
      .epilog(kEpilog);
  cli.parse(argc, argv);
  bool json_out = cli.has("json");
  JsonWriter json;
  json.begin_object().key("files").begin_array();
  int failed = 0;
  bool different = false;
  for (const auto& path : cli.args()) {
    try {
      if (is_shard(path)) {
        different |= inspect_shard(cli, path, json_out, json);
        continue;
      }
      NpzSummary s = summarize_npz(path, cli.has("validate"));
      if (json_out)
        summary_json(json, s);
      else
        std::fputs(summary_text(s).c_str(), stdout);
    } catch (const Error& e) {
      ++failed;
      std::fprintf(stderr, "tpuperf-inspect: error: %s\n", e.what());
      if (json_out) json.begin_object().key("path").value(path).key("error").value(e.what()).end_object();
    }
  }
  json.end_array().end_object();
  if (json_out) std::printf("%s\n", json.str().c_str());
  if (failed) return kExitError;
  return different ? 1 : kExitOk;
}

int main(int argc, char** argv) { return run_tool("tpuperf-inspect", argc, argv, inspect); }
