// tpuperf-inspect FILE...: keys, dtypes and shapes of .npz files and a summary of the
// TpuGraphs graph they hold (HDF5 shard support is added with the preprocessing stage).
#include <cstdio>

#include "common/cli.h"
#include "common/error.h"
#include "common/tool_main.h"
#include "pipeline/inspect/json_writer.h"
#include "pipeline/inspect/npz_summary.h"

using namespace tpuperf;

static const char* kEpilog =
    "--json prints one object: {\"files\": [ {\"path\": P, \"type\": \"npz\", \"file_size\": N,\n"
    "  \"keys\": {NAME: {\"dtype\": \"<f4\", \"shape\": [..]}, ...},\n"
    "  \"summary\": {\"kind\": \"tile\"|\"layout\", \"nodes\", \"edges\", \"configs\", \"config_nodes\",\n"
    "               \"runtime_min\", \"runtime_max\", \"validated\"}   (graph files only)\n"
    "  } or {\"path\": P, \"error\": MESSAGE} ]}\n\n"
    "exit codes: 0 all files read, 2 some file could not be read (each is reported).";

static int inspect(int argc, char** argv) {
  Cli cli("tpuperf-inspect", "Show what a TpuGraphs .npz file holds: each key with dtype and shape, and "
                             "a one-line graph summary (nodes, edges, configs, runtimes).");
  cli.positionals("FILE...", ".npz files to inspect", 1)
      .flag("json", "machine-readable output on stdout (format below)")
      .flag("validate", "also load the whole graph and check every rule of the format")
      .epilog(kEpilog);
  cli.parse(argc, argv);
  bool json_out = cli.has("json");
  JsonWriter json;
  json.begin_object().key("files").begin_array();
  int failed = 0;
  for (const auto& path : cli.args()) {
    try {
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
  return failed ? kExitError : kExitOk;
}

int main(int argc, char** argv) { return run_tool("tpuperf-inspect", argc, argv, inspect); }
