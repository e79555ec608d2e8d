# Shared by the workstation scripts (jobs/) and the Slurm job scripts (slurm/); sourced,
# not run.

# The repository root (this file is jobs/lib.sh) and the binaries: $TPUPERF_BIN, else
# $TPUPERF_BUILD_DIR/bin (relative to the repository, as jobs/setup.sh builds it), else
# build/bin.
TPUPERF_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${TPUPERF_BIN:-}" ]; then
  _build=${TPUPERF_BUILD_DIR:-build}
  case "$_build" in /*) ;; *) _build=$TPUPERF_REPO/$_build ;; esac
  TPUPERF_BIN=$_build/bin
  unset _build
fi

# require_bins NAME...: fail with one clear line when a binary has not been built.
require_bins() {
  local b
  for b in "$@"; do
    [ -x "$TPUPERF_BIN/$b" ] && continue
    echo "error: $TPUPERF_BIN/$b not found: build first (bash jobs/setup.sh) or set TPUPERF_BIN to the directory holding the tpuperf binaries" >&2
    return 2
  done
}

# mpirun with sensible defaults for one machine: no binding (Open MPI would pin each of 2
# ranks to one core, and all of a rank's threads with it), oversubscription allowed, and
# the root flags only when running as root.
#   mpirun_local NP COMMAND...
mpirun_local() {
  local np=$1; shift
  local flags=(--bind-to none --oversubscribe -np "$np")
  if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi
  mpirun "${flags[@]}" "$@"
}

# Threads per rank so that ranks x threads does not exceed the cores.
threads_per_rank() {
  local np=$1 cores
  cores=$(nproc)
  echo $(( cores / np > 0 ? cores / np : 1 ))
}

# The launcher that run_stage puts in front of a binary, as words: "mpirun_local 4" on a
# workstation, "srun --mpi=pmix ..." inside a Slurm job. Set by the caller.
LAUNCH=()

# run_stage STAGE CONFIG [ARG...]: one pipeline stage under "${LAUNCH[@]}".
#   preprocess  tpuperf-preprocess (exit 3, "finished but some files were rejected", is a
#               success for a launcher: the rejected files are listed in rejected.txt)
#   train       tpuperf-train: trains the folds, then ensembles them into submission.csv
#   predict     tpuperf-train --predict-only: prediction and ensemble from the best checkpoints
# ARGs go to the binary unchanged (--set KEY=VALUE, --force, --fresh, --resume).
run_stage() {
  local stage=$1 config=$2 rc=0
  shift 2
  case "$stage" in
    preprocess)
      require_bins tpuperf-preprocess || return
      "${LAUNCH[@]}" "$TPUPERF_BIN/tpuperf-preprocess" --config "$config" "$@" || rc=$?
      if [ "$rc" -eq 3 ]; then
        echo "note: preprocessing finished but rejected some source files (see rejected.txt in data.processed_dir)" >&2
        rc=0
      fi ;;
    train)
      require_bins tpuperf-train || return
      "${LAUNCH[@]}" "$TPUPERF_BIN/tpuperf-train" --config "$config" "$@" || rc=$? ;;
    predict)
      require_bins tpuperf-train || return
      "${LAUNCH[@]}" "$TPUPERF_BIN/tpuperf-train" --config "$config" --predict-only "$@" || rc=$? ;;
    *) echo "error: unknown stage '$stage' (preprocess, train or predict)" >&2; return 2 ;;
  esac
  return "$rc"
}
