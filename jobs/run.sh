#!/usr/bin/env bash
# Runs the pipeline, or one stage of it, with mpirun on this machine.
#   jobs/run.sh --config FILE [--np N] [--stage preprocess|train|predict|all]
#               [--set KEY=VALUE ...] [--force] [--fresh | --resume]
# Stages: preprocess (tpuperf-preprocess), train (tpuperf-train: the k folds, then the
# ensemble and submission.csv), predict (tpuperf-train --predict-only: prediction and
# ensemble again from the best checkpoints, e.g. on a new data.processed_dir); all (the
# default) is preprocess then train. --np: MPI ranks (default: the cores); LibTorch gets
# cores / ranks threads per rank unless --set train.threads_per_rank=N says otherwise.
# --set goes to every stage; --force to preprocess (redo everything); --fresh/--resume to
# train (tpuperf-train refuses to overwrite an earlier run without one of them).
# Relative paths (the config and the paths inside it) are relative to the current directory.
# Binaries: $TPUPERF_BIN, else $TPUPERF_BUILD_DIR/bin, else build/bin of this repository.
# Example, rerun only preprocessing:  jobs/run.sh --config configs/demo.yaml --stage preprocess
set -euo pipefail
source "$(dirname "$0")/lib.sh"

usage() { sed -n '2,15p' "$0"; }
die() { echo "run.sh: $*" >&2; exit 2; }

config=""
np=$(nproc)
stage=all
sets=()
pre_args=()
train_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --config) [ $# -ge 2 ] || die "--config needs a file"; config=$2; shift ;;
    --np) [ $# -ge 2 ] || die "--np needs a number"; np=$2; shift ;;
    --stage) [ $# -ge 2 ] || die "--stage needs a name"; stage=$2; shift ;;
    --set) [ $# -ge 2 ] || die "--set needs KEY=VALUE"; sets+=(--set "$2"); shift ;;
    --force) pre_args+=(--force) ;;
    --fresh|--resume) train_args+=("$1") ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
[ -n "$config" ] || die "--config FILE is required (see --help)"
[ -f "$config" ] || die "$config: config file not found"
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "--np must be a positive integer, not '$np'"
case "$stage" in
  preprocess|train|predict) stages=("$stage") ;;
  all) stages=(preprocess train) ;;
  *) die "--stage must be preprocess, train, predict or all, not '$stage'" ;;
esac
[ ${#train_args[@]} -le 1 ] || die "--fresh and --resume exclude each other"
# Flags that would silently do nothing for the chosen stages are refused.
in_stages() { [[ " ${stages[*]} " == *" $1 "* ]]; }
[ ${#pre_args[@]} -eq 0 ] || in_stages preprocess || die "--force applies to the preprocess stage only"
[ ${#train_args[@]} -eq 0 ] || in_stages train || die "${train_args[0]} applies to the train stage only"

LAUNCH=(mpirun_local "$np")
threads=$(threads_per_rank "$np")
# Our threads setting first, so that a --set train.threads_per_rank=N of the caller wins.
torch_sets=(--set "train.threads_per_rank=$threads" "${sets[@]}")

for s in "${stages[@]}"; do
  case "$s" in
    preprocess)
      echo "== preprocessing with $np ranks"
      run_stage preprocess "$config" "${sets[@]}" "${pre_args[@]}" ;;
    train)
      echo "== training with $np ranks (threads per rank: $threads)"
      run_stage train "$config" "${torch_sets[@]}" "${train_args[@]}" ;;
    predict)
      echo "== predicting with $np ranks (threads per rank: $threads)"
      run_stage predict "$config" "${torch_sets[@]}" ;;
  esac
done
