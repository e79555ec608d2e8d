#!/usr/bin/env bash
# slurm/submit.sh on a real single-node Slurm cluster (slurm_cluster.sh: slurmctld + slurmd
# on loopback, started and stopped by this test) with a generated tiny tree, 2 folds:
#  1. the chain preprocess -> train -> predict: every job COMPLETED, the train job ran
#     folds x ranks-per-fold tasks, cpus-per-task became LibTorch threads, the submission
#     scores;
#  2. a preprocessing job that fails: train and predict are cancelled, nothing is trained;
#  3. rerunning only preprocessing (--only preprocess) submits one job that completes and
#     writes the processed data, and nothing else;
#  4. --from train --resume submits train and predict; the finished folds are resumed, not
#     retrained; with the documented fallback launcher (TPUPERF_MPI=mpirun inside the job).
# Also: usage errors and a submission that sbatch rejects leave nothing queued.
# Exits 77 (skipped) with a clear message only when slurmctld/slurmd cannot start here.
# Usage: test_slurm.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
HERE=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cluster=$work/cluster
trap 'bash "$HERE/slurm_cluster.sh" stop "$cluster"; rm -rf "$work"' EXIT
step() { echo; echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }
source "$SRC/tests/tiny_train.sh"

rc=0
bash "$HERE/slurm_cluster.sh" start "$cluster" || rc=$?
if [ "$rc" -eq 77 ]; then echo "SKIP test_slurm: no Slurm cluster can start here (see above)"; exit 77; fi
[ "$rc" -eq 0 ] || fail "slurm_cluster.sh start exited $rc"
export SLURM_CONF=$cluster/slurm.conf

# What the jobs request (slurm/settings.sh), sized for a 2-CPU node.
export TPUPERF_BIN=$BIN TPUPERF_LOG_DIR=$work/logs
export TPUPERF_PREPROCESS_TASKS=2 TPUPERF_PREPROCESS_CPUS=1 TPUPERF_PREPROCESS_TIME=10:00
export TPUPERF_TRAIN_RANKS_PER_FOLD=1 TPUPERF_TRAIN_CPUS=1 TPUPERF_TRAIN_TIME=10:00
export TPUPERF_PREDICT_TASKS=1 TPUPERF_PREDICT_CPUS=2 TPUPERF_PREDICT_TIME=10:00

"$BIN/tpuperf-synth" --out "$work/gen" --scale tiny --seed 4 > /dev/null 2>&1
# Relative paths, resolved in the submit directory where the jobs run.
mkdir -p "$work/submit"
cd "$work/submit"
ln -s "$work/gen" gen
cat > cfg.yaml <<YAML
data:
  raw_dir: gen/npz
  processed_dir: processed
preprocess:
  folds: 2
output:
  dir: run
$(tiny_train_yaml 2 16 1 0)
YAML

# submit OUT ARGS...: slurm/submit.sh; its stdout ("STAGE JOBID" lines, "logs DIR") in OUT.
submit() {
  local out=$1; shift
  bash "$SRC/slurm/submit.sh" "$@" > "$out" || fail "submit.sh $* exited $?"
  cat "$out"
}
job_id() { awk -v s="$2" '$1 == s { print $2 }' "$1"; }
field() { scontrol show job -o "$1" | grep -o "$2=[^ ]*" | cut -d= -f2; }
# wait_jobs ID...: until every job has ended (its record stays for MinJobAge = 1 h).
wait_jobs() {
  local id state i
  for i in $(seq 1 240); do
    local pending=0
    for id in "$@"; do
      state=$(field "$id" JobState)
      case "$state" in
        COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) ;;
        *) pending=1 ;;
      esac
    done
    [ "$pending" -eq 1 ] || return 0
    sleep 1
  done
  squeue; fail "jobs $* still not finished after 240 s"
}
# expect_state ID STATE: the job ended in STATE, in scontrol and in the jobcomp record.
expect_state() {
  local state
  state=$(field "$1" JobState)
  [ "$state" = "$2" ] || { scontrol show job "$1"; fail "job $1 is $state, expected $2"; }
  grep -q "^JobId=$1 .* JobState=$2 " "$cluster/jobcomp.txt" || fail "jobcomp.txt has no JobId=$1 with JobState=$2"
}

# never_ran ID: the job never started: Slurm creates its log file when it starts.
never_ran() {
  local out
  out=$(field "$1" StdOut)
  [ -n "$out" ] || fail "job $1 has no StdOut path"
  [ ! -e "$out" ] || { cat "$out"; fail "job $1 ran: $out exists"; }
}

step "1. the chain preprocess -> train -> predict"
start=$(date +%s)
submit sub1.txt cfg.yaml
pre=$(job_id sub1.txt preprocess); train=$(job_id sub1.txt train); pred=$(job_id sub1.txt predict)
logs=$(job_id sub1.txt logs)
[ -n "$pre" ] && [ -n "$train" ] && [ -n "$pred" ] || fail "submit.sh did not print three job ids"
# The dependencies as submitted.
[[ "$(field "$train" Dependency)" == afterok:"$pre"* ]] || fail "train does not depend on $pre: $(field "$train" Dependency)"
[[ "$(field "$pred" Dependency)" == afterok:"$train"* ]] || fail "predict does not depend on $train"
wait_jobs "$pre" "$train" "$pred"
echo "chain finished in $(( $(date +%s) - start )) s"
for id in "$pre" "$train" "$pred"; do expect_state "$id" COMPLETED; done
[ "$(field "$train" NumTasks)" = 2 ] || fail "train ran $(field "$train" NumTasks) tasks, expected folds x ranks = 2"
for s in preprocess train predict; do
  log=$logs/$s-$(job_id sub1.txt "$s").out
  [ -s "$log" ] || fail "no log $log"
  grep -q "launcher: srun --mpi=pmix" "$log" || fail "$log: not launched with srun --mpi=pmix"
done
grep -q "2 ranks, 1 LibTorch threads each, 2 folds" "$logs/train-$train.out" || fail "train: not 2 ranks x 1 thread"
grep -q "1 ranks, 2 LibTorch threads each" "$logs/predict-$pred.out" || fail "predict: cpus-per-task 2 did not become 2 threads"
[ "$(wc -l < "$logs/jobs.txt")" -eq 3 ] || fail "jobs.txt does not list 3 jobs"
[ -s processed/manifest.yaml ] || fail "no processed/manifest.yaml in the submit directory"
[ -s run/submission.csv ] || fail "no run/submission.csv"
"$BIN/tpuperf-score" --submission run/submission.csv --truth "$work/gen" > score.txt || { cat score.txt; fail "the submission does not score"; }
grep "^overall" score.txt

step "2. a failing preprocessing job cancels train and predict"
submit sub2.txt cfg.yaml --set data.raw_dir="$work/missing" --set data.processed_dir=processed_b --set output.dir=run_b
pre=$(job_id sub2.txt preprocess); train=$(job_id sub2.txt train); pred=$(job_id sub2.txt predict)
logs=$(job_id sub2.txt logs)
wait_jobs "$pre" "$train" "$pred"
expect_state "$pre" FAILED
[ "$(field "$pre" ExitCode)" = "2:0" ] || fail "preprocess exit code $(field "$pre" ExitCode), expected 2:0"
for id in "$train" "$pred"; do
  expect_state "$id" CANCELLED
  [ "$(field "$id" Reason)" = DependencyNeverSatisfied ] || fail "job $id: reason $(field "$id" Reason)"
  never_ran "$id"
done
grep -q "raw data directory does not exist" "$logs/preprocess-$pre.out" || fail "the preprocess log lacks the reason"
[ ! -e run_b ] || fail "run_b exists: something trained after the failed preprocessing"

step "3. rerun only preprocessing: one job, it completes, nothing else runs"
submit sub3.txt cfg.yaml --only preprocess --set data.processed_dir=processed_b --set output.dir=run_b
[ "$(grep -vc '^logs ' sub3.txt)" -eq 1 ] || fail "--only preprocess submitted more than one job"
pre=$(job_id sub3.txt preprocess)
[ -n "$pre" ] || fail "no preprocess job id"
wait_jobs "$pre"
expect_state "$pre" COMPLETED
[ -s processed_b/manifest.yaml ] || fail "no processed_b/manifest.yaml"
[ -z "$(squeue -h)" ] || { squeue; fail "jobs left in the queue"; }
[ ! -e run_b ] || fail "--only preprocess trained"

step "4. --from train --resume, with the fallback launcher (mpirun inside the allocation)"
TPUPERF_MPI=mpirun submit sub4.txt cfg.yaml --from train --resume
[ "$(grep -vc '^logs ' sub4.txt)" -eq 2 ] || fail "--from train did not submit exactly train and predict"
train=$(job_id sub4.txt train); pred=$(job_id sub4.txt predict); logs=$(job_id sub4.txt logs)
wait_jobs "$train" "$pred"
for id in "$train" "$pred"; do expect_state "$id" COMPLETED; done
grep -q "launcher: mpirun_local 2" "$logs/train-$train.out" || fail "train not launched with mpirun"
grep -q "launcher: mpirun_local 1" "$logs/predict-$pred.out" || fail "predict not launched with mpirun"
grep -q "fold 1: resuming after epoch 2" "$logs/train-$train.out" || fail "--resume did not reach the trainer"
"$BIN/tpuperf-score" --submission run/submission.csv --truth "$work/gen" > score4.txt || { cat score4.txt; fail "no score"; }
cmp score.txt score4.txt || fail "the resumed run scores differently from the chain's"

step "usage errors are refused before anything is submitted"
rc=0; bash "$SRC/slurm/submit.sh" cfg.yaml --only bogus > bad.txt 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "unknown stage 'bogus'" bad.txt || { cat bad.txt; fail "bad stage accepted ($rc)"; }
rc=0; bash "$SRC/slurm/submit.sh" cfg.yaml --only predict --fresh > bad.txt 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "applies to the train stage only" bad.txt || { cat bad.txt; fail "--fresh with predict accepted ($rc)"; }
[ -z "$(squeue -h)" ] || fail "a refused submission queued a job"

step "a submission sbatch rejects (train asks for more CPUs than the node has) leaves no half chain"
rc=0; TPUPERF_TRAIN_CPUS=64 bash "$SRC/slurm/submit.sh" cfg.yaml > sub5.txt 2> sub5.err || rc=$?
cat sub5.txt sub5.err
[ "$rc" -eq 2 ] && grep -q "sbatch of the train job failed" sub5.err || fail "expected a failed train submission ($rc)"
pre=$(job_id sub5.txt preprocess)
[ -n "$pre" ] || fail "the preprocess job was not submitted first"
wait_jobs "$pre"
expect_state "$pre" CANCELLED
never_ran "$pre"
echo "PASS test_slurm"
