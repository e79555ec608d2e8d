// tpuperf-train: fold-parallel distributed training on preprocessed shards, then the
// ensemble of the fold models -> submission.csv, metrics.csv, report.md.
#include "common/cli/cli.h"
#include "common/config/config.h"
#include "common/mpi/mpi_env.h"
#include "trainer/losses/registry.h"
#include "trainer/models/registry.h"
#include "trainer/models/allocator.h"
#include "trainer/train/run_training.h"

using namespace tpuperf;

static const char* kEpilog =
    "Reads data.processed_dir (written by tpuperf-preprocess) and writes output.dir:\n"
    "  checkpoints/<collection>/fold<f>/{best,last}.pt, metrics/ (per fold), metrics.csv,\n"
    "  submission.csv (competition format), report.md with learning-curve SVGs, train_config.yaml.\n"
    "The world is split into min(ranks, folds) fold groups; each group trains its folds\n"
    "data-parallel (gradients averaged with one MPI_Allreduce per step).\n\n"
    "examples:\n"
    "  mpirun -np 2 tpuperf-train --config configs/demo.yaml\n"
    "  mpirun -np 2 tpuperf-train --config configs/demo.yaml --resume\n"
    "  tpuperf-train --config configs/demo.yaml --predict-only --set data.processed_dir=new/processed\n\n"
    "exit codes: 0 done, 2 error.\n"
    "Under mpirun a non-zero exit also brings Open MPI's own notice (mpirun -q omits it).";

// The options are read before MPI starts (run_mpi_tool); every rank then loads the config.
static MpiBody parse_options(int argc, char** argv) {
  // The schema lists the registered models and losses (for --help-config and checks).
  register_model_choices();
  register_loss_choices();
  Cli cli("tpuperf-train", "Train k fold models per collection with MPI and ensemble them into a submission.");
  cli.config_options()
      .flag("resume", "continue from the last checkpoint of every fold (a finished fold is not retrained)")
      .flag("fresh", "delete earlier checkpoints and metrics in output.dir first")
      .flag("predict-only", "no training: score the valid and test graphs with the saved best checkpoints")
      .flag("train-only", "train the folds and stop: no prediction, ensemble or submission (a later "
                          "--predict-only run makes them; e.g. separate cluster jobs)")
      .epilog(kEpilog);
  cli.parse(argc, argv);
  TrainRunOptions opts;
  opts.resume = cli.has("resume");
  opts.fresh = cli.has("fresh");
  opts.predict_only = cli.has("predict-only");
  opts.train_only = cli.has("train-only");
  return [cli, opts](const MpiContext& ctx) {
    Config cfg = Config::from_cli(cli);
    return run_training(cfg, ctx, opts);
  };
}

int main(int argc, char** argv) {
  keep_freed_memory_for_reuse();
  return run_mpi_tool("tpuperf-train", argc, argv, parse_options);
}
