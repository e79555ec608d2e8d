// tpuperf-preprocess: raw TpuGraphs npz tree -> validated, deduplicated, pruned, packed
// HDF5 shards + manifest. Run with mpirun -np R; files are spread over ranks by size.
#include "common/cli/cli.h"
#include "common/config/config.h"
#include "common/mpi/mpi_env.h"
#include "pipeline/preprocess/driver.h"
#include "pipeline/preprocess/rank_memory.h"

using namespace tpuperf;

static const char* kEpilog =
    "Reads data.raw_dir (the release's npz_all/npz tree: tile/xla/{train,valid,test},\n"
    "layout/{xla,nlp}/{random,default}/{train,valid,test}) for data.collections and writes\n"
    "data.processed_dir: <collection>/<split>/g<gen>-r<rank>-<n>.h5 shards, feature files,\n"
    "manifest.yaml (written last), rejected.txt and preprocess_config.yaml.\n"
    "A rerun with unchanged inputs and settings does nothing; a changed file or setting\n"
    "redoes only the (collection, split) units it affects.\n\n"
    "examples:\n"
    "  mpirun -np 2 tpuperf-preprocess --config configs/demo.yaml\n"
    "  tpuperf-preprocess --config configs/tpugraphs.yaml --set preprocess.prune_hops=2\n\n"
    "exit codes: 0 done, 2 error, 3 done but some source files were rejected (rejected.txt).\n"
    "Under mpirun a non-zero exit also brings Open MPI's own notice (mpirun -q omits it).";

// The options are read before MPI starts (run_mpi_tool); every rank then loads the config.
static MpiBody parse_options(int argc, char** argv) {
  Cli cli("tpuperf-preprocess",
          "Validate, deduplicate, prune, pack and fold a TpuGraphs-format npz tree into sharded HDF5.");
  cli.config_options().flag("force", "redo everything, ignoring the previous output").epilog(kEpilog);
  cli.parse(argc, argv);
  return [cli](const MpiContext& ctx) {
    Config cfg = Config::from_cli(cli);
    return run_preprocess(cfg, ctx, cli.has("force"));
  };
}

int main(int argc, char** argv) {
  keep_freed_memory();  // before anything is allocated: see rank_memory.h
  return run_mpi_tool("tpuperf-preprocess", argc, argv, parse_options);
}
