#!/usr/bin/env bash
# Submits the pipeline to Slurm as a chain of jobs: preprocess -> train -> predict, each
# starting only after the previous one COMPLETED (--dependency=afterok); a failed,
# cancelled or timed-out job cancels the rest (--kill-on-invalid-dep=yes).
#   slurm/submit.sh CONFIG [--only STAGE | --from STAGE] [--set KEY=VALUE ...]
#                   [--force] [--fresh | --resume]
# STAGE: preprocess, train or predict. --only submits that stage alone (rerun only
# preprocessing: slurm/submit.sh CONFIG --only preprocess); --from submits that stage and
# the ones after it. --set goes to every job; --force to preprocess; --fresh/--resume to
# train. Resources, partition and launcher come from slurm/settings.sh (each one an
# environment variable). Prints one line "STAGE JOBID" per job, then "logs DIR": the run's
# log directory, with one STAGE-JOBID.out per job and jobs.txt.
# Relative paths inside the config are relative to the directory you submit from, as for
# jobs/run.sh: the jobs run there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/settings.sh"
source "$here/../jobs/lib.sh"

die() { echo "submit.sh: $*" >&2; exit 2; }
all_stages=(preprocess train predict)

config=""
only=""
from=""
sets=()
pre_args=()
train_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || die "--only needs a stage"; only=$2; shift ;;
    --from) [ $# -ge 2 ] || die "--from needs a stage"; from=$2; shift ;;
    --set) [ $# -ge 2 ] || die "--set needs KEY=VALUE"; sets+=(--set "$2"); shift ;;
    --force) pre_args+=(--force) ;;
    --fresh|--resume) train_args+=("$1") ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) [ -z "$config" ] || die "one config only ('$config', then '$1')"; config=$1 ;;
  esac
  shift
done
[ -n "$config" ] || die "usage: slurm/submit.sh CONFIG [--only STAGE | --from STAGE] ... (see --help)"
[ -f "$config" ] || die "$config: config file not found"
config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
[ -z "$only" ] || [ -z "$from" ] || die "--only and --from exclude each other"
[ ${#train_args[@]} -le 1 ] || die "--fresh and --resume exclude each other"

# The stages to submit, in chain order.
stages=()
for s in "${all_stages[@]}"; do
  if [ -n "$only" ]; then [ "$s" = "$only" ] && stages+=("$s"); continue; fi
  if [ -n "$from" ] && [ ${#stages[@]} -eq 0 ] && [ "$s" != "$from" ]; then continue; fi
  stages+=("$s")
done
[ ${#stages[@]} -gt 0 ] || die "unknown stage '$only$from' (preprocess, train or predict)"
in_stages() { [[ " ${stages[*]} " == *" $1 "* ]]; }
[ ${#pre_args[@]} -eq 0 ] || in_stages preprocess || die "--force applies to the preprocess stage only"
[ ${#train_args[@]} -eq 0 ] || in_stages train || die "${train_args[0]} applies to the train stage only"

command -v sbatch > /dev/null || die "sbatch not found: run this on a Slurm login node"
require_bins tpuperf-preprocess tpuperf-train

# preprocess.folds: the last --set of it, else the config's, else the schema default (as
# tpuperf-train documents it). TPUPERF_FOLDS overrides all three.
folds_of_config() {
  local s v=""
  for s in "${sets[@]}"; do
    case "$s" in preprocess.folds=*) v=${s#preprocess.folds=} ;; esac
  done
  if [ -z "$v" ]; then
    v=$(python3 - "$config" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1])) or {}
print((cfg.get("preprocess") or {}).get("folds", ""))
PY
    ) || { echo "submit.sh: $config: cannot read preprocess.folds (needs python3 with PyYAML); set TPUPERF_FOLDS" >&2; return 2; }
  fi
  if [ -z "$v" ]; then
    v=$("$TPUPERF_BIN/tpuperf-train" --help-config | sed -n 's/^ *preprocess\.folds (int, default \([0-9]*\)).*/\1/p')
  fi
  echo "$v"
}
if in_stages train; then
  folds=$TPUPERF_FOLDS
  [ -n "$folds" ] || folds=$(folds_of_config) || exit 2
  [[ "$folds" =~ ^[1-9][0-9]*$ ]] || die "$config: preprocess.folds is '$folds', not a positive integer"
  [[ "$TPUPERF_TRAIN_RANKS_PER_FOLD" =~ ^[1-9][0-9]*$ ]] \
    || die "TPUPERF_TRAIN_RANKS_PER_FOLD is '$TPUPERF_TRAIN_RANKS_PER_FOLD', not a positive integer"
fi

# One log directory per submission.
name=$(basename "$config"); name=${name%.*}
logdir=$TPUPERF_LOG_DIR/$name-$(date +%Y%m%d-%H%M%S)
n=1; base=$logdir
while [ -e "$logdir" ]; do n=$((n + 1)); logdir=$base-$n; done
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)

common=(--parsable --chdir="$PWD"
        --export="ALL,TPUPERF_REPO=$TPUPERF_REPO,TPUPERF_BIN=$TPUPERF_BIN,TPUPERF_MPI=$TPUPERF_MPI")
[ -z "$TPUPERF_PARTITION" ] || common+=(--partition="$TPUPERF_PARTITION")
[ -z "$TPUPERF_ACCOUNT" ] || common+=(--account="$TPUPERF_ACCOUNT")
read -r -a extra <<< "$TPUPERF_SBATCH_ARGS"
common+=("${extra[@]}")

submitted=()
# A failed submission cancels what this run already submitted: no half chain is left.
abort() {
  [ ${#submitted[@]} -eq 0 ] || scancel "${submitted[@]}" || true
  die "$1"
}
# The first job of a chain is held until the whole chain is queued, so a job that fails
# at once cannot make the next submission's dependency invalid before it exists.
hold=()
[ ${#stages[@]} -eq 1 ] || hold=(--hold)

prev=""
for s in "${stages[@]}"; do
  case "$s" in
    preprocess) res=(--ntasks="$TPUPERF_PREPROCESS_TASKS" --cpus-per-task="$TPUPERF_PREPROCESS_CPUS" --time="$TPUPERF_PREPROCESS_TIME")
                args=("${sets[@]}" "${pre_args[@]}") ;;
    train)      res=(--ntasks=$((folds * TPUPERF_TRAIN_RANKS_PER_FOLD)) --cpus-per-task="$TPUPERF_TRAIN_CPUS" --time="$TPUPERF_TRAIN_TIME")
                args=("${sets[@]}" "${train_args[@]}") ;;
    predict)    res=(--ntasks="$TPUPERF_PREDICT_TASKS" --cpus-per-task="$TPUPERF_PREDICT_CPUS" --time="$TPUPERF_PREDICT_TIME")
                args=("${sets[@]}") ;;
  esac
  if [ -n "$prev" ]; then dep=(--dependency="afterok:$prev" --kill-on-invalid-dep=yes); else dep=("${hold[@]}"); fi
  out=$(sbatch "${common[@]}" --output="$logdir/$s-%j.out" "${res[@]}" "${dep[@]}" \
          "$here/$s.sbatch" "$config" "${args[@]}" 2> "$logdir/sbatch.err") \
    || abort "sbatch of the $s job failed: $(cat "$logdir/sbatch.err")"
  [ ! -s "$logdir/sbatch.err" ] || cat "$logdir/sbatch.err" >&2   # sbatch's warnings
  id=${out%%;*}   # --parsable prints "JOBID" or "JOBID;CLUSTER"
  [[ "$id" =~ ^[0-9]+$ ]] || abort "sbatch of the $s job printed '$out', not a job id"
  submitted+=("$id")
  echo "$s $id" | tee -a "$logdir/jobs.txt"
  prev=$id
done
if [ ${#hold[@]} -gt 0 ]; then scontrol release "${submitted[0]}" || abort "cannot release job ${submitted[0]}"; fi
rm -f "$logdir/sbatch.err"
echo "logs $logdir"
