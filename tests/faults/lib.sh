# Shared by the faults suite's scripts (sourced). Each script is run by ctest as
# `bash script BIN_DIR SRC_DIR` and writes its section of BIN_DIR/../faults/RESULTS.md
# (the build directory: a test run changes no tracked file; jobs/update_docs.sh copies the
# sections into tests/faults/RESULTS.md).
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
GEN="$PY $SRC/tests/faults/make_bad_inputs.py"
CHECK="$PY $SRC/tests/faults/faults_check.py"
mkdir -p "$BIN/../faults"
RESULTS=$(cd "$BIN/../faults" && pwd)/RESULTS.md
source "$SRC/tests/tiny_train.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# One thread per rank: the suite shares 2 cores with whatever else runs.
export OMP_NUM_THREADS=1
work=$(mktemp -d /tmp/tpuperf-faults.XXXXXX)
trap 'rm -rf "$work"' EXIT
SECONDS=0

mpi() { local np=$1; shift; mpirun --bind-to none -np "$np" "$@"; }
step() { echo; echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }

# A tiny generated tree and a preprocessing config for it:  make_tree DIR SEED
make_tree() {
  "$BIN/tpuperf-synth" --out "$1/gen" --scale tiny --seed "$2" > /dev/null 2>&1
  cat > "$1/cfg.yaml" <<YAML
log:
  level: info
data:
  raw_dir: $1/gen/npz
  processed_dir: $1/processed
preprocess:
  prune_hops: 1
  folds: 2
  shard_mb: 0.05
YAML
}

# Training settings for the tree of make_tree: small models on two collections, 2 folds
# (one per rank):  add_train_config DIR EPOCHS "coll, coll"
add_train_config() {
  tiny_train_yaml "$2" 32 2 1 >> "$1/cfg.yaml"
  sed -i "s|^data:|data:\n  collections: [$3]|" "$1/cfg.yaml"
}

# run_timed OUT_PREFIX TIMEOUT_S COMMAND...: runs the command with a time limit, output in
# OUT_PREFIX.log; sets RC (124: timed out), SECS and RSS_KB (peak resident set of the
# command and every process it waited for, from /usr/bin/time).
run_timed() {
  local out=$1 limit=$2; shift 2
  local start=$EPOCHREALTIME
  set +e
  /usr/bin/time -f "%M" -o "$out.rss" timeout -k 5 "$limit" "$@" > "$out.log" 2>&1
  RC=$?
  set -e
  SECS=$(elapsed "$start")
  RSS_KB=$(tail -1 "$out.rss" 2>/dev/null | grep -E '^[0-9]+$' || echo 0)
}

# elapsed START: seconds since START (an $EPOCHREALTIME value), one decimal.
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# write_section NAME BODY_FILE: replaces this script's section of RESULTS.md.
write_section() { $CHECK results "$RESULTS" "$1" "$2"; }

# table_section NAME TITLE RC: this script's section of RESULTS.md from the heading TITLE,
# the description read from stdin, the check's table ($work/table.md) and the outcome;
# then fails the script unless RC is 0.
table_section() {
  {
    echo "## $2"
    echo
    cat
    echo
    cat "$work/table.md"
    echo
    [ "$3" -eq 0 ] && echo "Outcome: PASS" || echo "Outcome: FAIL"
  } > "$work/section.md"
  write_section "$1" "$work/section.md"
  [ "$3" -eq 0 ] || fail "$1 checks failed (see above)"
}

# The MPI ranks of a job started in the background as `timeout ... mpirun ...`:
# rank_pids TIMEOUT_PID prints the pids of mpirun's children (the ranks), one per line.
rank_pids() {
  local m
  for m in $(ps -o pid= --ppid "$1"); do ps -o pid= --ppid "$m"; done | tr -d ' '
}

# wait_for_ranks TIMEOUT_PID N: waits (up to 30 s) until the job has N ranks running.
wait_for_ranks() {
  local i
  for i in $(seq 300); do
    [ "$(rank_pids "$1" | wc -l)" -ge "$2" ] && return 0
    kill -0 "$1" 2> /dev/null || return 0
    sleep 0.1
  done
}

# run_ranks_timed LOG COMMAND...: runs an mpirun command line with a time limit; sets RC
# and RANK_MS, how long its ranks lived (the window in which a kill hits them).
run_ranks_timed() {
  local log=$1; shift
  timeout -k 5 300 "$@" > "$log" 2>&1 &
  local job=$!
  wait_for_ranks "$job" 2
  local start=$EPOCHREALTIME
  set +e
  wait "$job"
  RC=$?
  set -e
  RANK_MS=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
}

# kill_one_rank TIMEOUT_PID INDEX: SIGKILLs the INDEX-th rank (by pid order) of that job,
# like an OOM killer or a node failure. Prints the pid killed, or nothing when the job
# had no such live rank any more (it finished first; a zombie cannot be killed).
kill_one_rank() {
  local pids
  mapfile -t pids < <(rank_pids "$1" | sort -n)
  [ "${#pids[@]}" -gt "$2" ] || return 0
  case "$(ps -o stat= -p "${pids[$2]}" 2> /dev/null)" in Z* | "") return 0 ;; esac
  kill -9 "${pids[$2]}" 2> /dev/null && echo "${pids[$2]}"
  return 0
}
