#!/usr/bin/env bash
# One training rank dies (issue #6): tpuperf-train with mpirun -np 2 on a tiny tree, one
# rank SIGKILLed, either at a fault point (TPUPERF_FAULT set for that rank only) or from
# outside after a random delay. The job must end promptly (within 30 s of the kill) with
# a non-zero exit and an error naming the dead rank; `--resume` must then finish with the
# same metrics.csv (loss and scores of every collection, fold, epoch) and the same
# submission as an uninterrupted run.
# Usage: test_kill_train.sh BIN_DIR SRC_DIR   (TPUPERF_FAULTS_TRAIN_TRIALS: trials, 3)
source "$(dirname "$0")/lib.sh"
TRIALS=${TPUPERF_FAULTS_TRAIN_TRIALS:-3}

make_tree "$work" 5
# Two collections (one of each kind) keep the suite fast; 2 folds: one per rank.
add_train_config "$work" 4 "tile:xla, layout:nlp:random"
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 || { cat "$work/pre.log"; fail "preprocessing"; }
train_cmd() { TRAIN=("$BIN/tpuperf-train" --config "$work/cfg.yaml" --set output.dir="$1"); }

step "uninterrupted run"
train_cmd "$work/ref"
run_ranks_timed "$work/ref.log" mpirun --bind-to none -np 2 "${TRAIN[@]}"
[ "$RC" -eq 0 ] || { tail -30 "$work/ref.log"; fail "uninterrupted training"; }
ref_ms=$RANK_MS
# Kills land in the first 60%: training, not the end, where a rank may already be done.
window=$((ref_ms * 6 / 10))
# log_ms LOG PATTERN: the time of day (ms) of LOG's first line matching PATTERN.
log_ms() {
  grep -m1 -E "$2" "$1" | sed -E 's/^\[[0-9-]+ ([0-9]+):([0-9]+):([0-9.]+)\].*/\1 \2 \3/' \
    | awk '{ printf "%d", (($1 * 60 + $2) * 60 + $3) * 1000 }'
}
# Kills after the first epoch land in the first half of what remained of the uninterrupted
# run after its first epoch line (start-up and loading weigh more as training gets faster:
# a share of the whole run could fall after the end).
late_window=$(( $(log_ms "$work/ref.log" "wrote .*submission.csv") - $(log_ms "$work/ref.log" "epoch 1/4:") ))
late_window=$((late_window / 2))
[ "$late_window" -gt 0 ] || fail "no first-epoch or final line in $work/ref.log"
echo "uninterrupted: the ranks ran ${ref_ms} ms, $((2 * late_window)) ms of it after the first epoch line"

rows=()
failures=0
for trial in $(seq 1 "$TRIALS"); do
  RANDOM=$((trial * 104729))
  out=$work/run$trial
  train_cmd "$out"
  rank=$((RANDOM % 2))
  log=$work/kill$trial.log
  problems=""
  if [ "$trial" -eq 1 ]; then
    # At a fault point, on one rank only: MPMD form, the environment differs per rank.
    point="train.epoch_done:$((1 + RANDOM % 3))"
    how="TPUPERF_FAULT=$point on rank $rank"
    faults=(none none)
    faults[$rank]=$point
    timeout -k 5 300 mpirun --bind-to none -np 1 env TPUPERF_FAULT="${faults[0]}" "${TRAIN[@]}" --fresh \
      : -np 1 env TPUPERF_FAULT="${faults[1]}" "${TRAIN[@]}" --fresh > "$log" 2>&1 &
    job=$!
    # The kill time is when the fault point logs; the job's end is measured from there.
    until grep -q "fault injection: killing" "$log" 2> /dev/null || ! kill -0 "$job" 2> /dev/null; do sleep 0.05; done
    killed_at=$EPOCHREALTIME
  else
    # Trial 2: anywhere in the run; later trials: after the first epoch's checkpoints, so
    # that --resume has something to resume from.
    delay=$((RANDOM % window))
    timeout -k 5 300 mpirun --bind-to none -np 2 "${TRAIN[@]}" --fresh > "$log" 2>&1 &
    job=$!
    wait_for_ranks "$job" 2
    if [ "$trial" -eq 2 ]; then
      how="SIGKILL of rank $rank ${delay} ms after the ranks started"
    else
      delay=$((delay % late_window))
      until grep -q "epoch 1/4:" "$log" 2> /dev/null || ! kill -0 "$job" 2> /dev/null; do sleep 0.05; done
      how="SIGKILL of rank $rank ${delay} ms after the first epoch"
    fi
    sleep "$(awk -v d="$delay" 'BEGIN { print d / 1000 }')"
    pid=$(kill_one_rank "$job" "$rank")
    killed_at=$EPOCHREALTIME
    [ -n "$pid" ] || problems+="the job finished before the kill; "
  fi
  set +e
  wait "$job"
  rc=$?
  set -e
  end_s=$(elapsed "$killed_at")
  [ "$rc" -ne 0 ] || problems+="killed job exited 0; "
  [ "$rc" -ne 124 ] || problems+="killed job hung; "
  awk -v s="$end_s" 'BEGIN { exit !(s <= 30) }' || problems+="job ended ${end_s} s after the kill; "
  grep -qE "process rank $rank .*exited on signal 9" "$log" || problems+="no error naming rank $rank and its signal; "
  # Once training runs, the survivor says why it stopped (trial 2 may kill a rank while the
  # other is still inside MPI_Init, before tpuperf has set up anything).
  grep -qE "tpuperf-train: error: stopped by SIGTERM \[rank $((1 - rank))\]" "$log" || [ "$trial" -eq 2 ] \
    || problems+="the surviving rank $((1 - rank)) did not say why it stopped; "
  said=$(grep -oE "(tpuperf-train: error: .*|mpirun noticed .*)" "$log" | head -2 | tr '\n' ' ' | tr '|' '/' || true)
  own=$(grep -cE "tpuperf-train: error:" "$log" || true)
  epochs_logged=$(grep -cE "epoch [0-9]+/4:" "$log" || true)
  run_timed "$work/resume$trial" 300 mpirun --bind-to none -np 2 "${TRAIN[@]}" --resume
  [ "$RC" -eq 0 ] || { tail -20 "$work/resume$trial.log"; problems+="--resume exited with $RC; "; }
  resumed=$(grep -oE "\] [^ ]+ fold [0-9]+: resuming after epoch [0-9]+" "$work/resume$trial.log" | sort -u \
    | sed -E 's/^\] //; s/: resuming after epoch / after epoch /' | paste -sd, - | sed 's/,/, /g' || true)
  if [ "$RC" -eq 0 ]; then
    $CHECK metrics "$work/ref/metrics.csv" "$out/metrics.csv" > "$work/metrics$trial.txt" \
      || problems+="metrics differ: $(head -3 "$work/metrics$trial.txt" | tr '\n' ' '); "
    cmp -s "$work/ref/submission.csv" "$out/submission.csv" || problems+="submission differs; "
  fi
  outcome=PASS; [ -z "$problems" ] || { outcome="FAIL: $problems"; failures=$((failures + 1)); }
  echo "trial $trial: $how: exit $rc ${end_s} s after the kill ($epochs_logged epochs logged); resume: ${resumed:-from scratch}; $outcome"
  echo "  said: $said"
  rows+=("| $trial | $how | $rc | $end_s | $epochs_logged | ${said:--} | $own | ${resumed:-no checkpoint: from scratch} | $outcome |")
done

{
  echo "## A training rank killed, then --resume (test_kill_train.sh)"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, ${SECONDS} s in all. mpirun -np 2, 2 folds (one"
  echo "per rank), tile:xla and layout:nlp:random of a tiny tree, 4 epochs; in the uninterrupted run the"
  echo "ranks ran ${ref_ms} ms, $((2 * late_window)) ms of it after the first epoch line; external kills come a random delay below 60% of the"
  echo "first after the ranks started (trial 2) or below half the second after the first epoch (trials 3...). Trial t seeds bash's RANDOM with 104729 t. Passing needs: a non-zero exit"
  echo "within 30 s of the kill, an error naming the dead rank and its signal, and a --resume that"
  echo "reproduces the uninterrupted run's metrics.csv (loss, oof and valid scores) and submission."
  echo "'survivor errors' counts the surviving ranks' own error lines (tpuperf-train: error: ...)."
  echo
  echo "| trial | kill | exit | s from kill to exit | epochs logged | error shown | survivor errors | resume | outcome |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf "%s\n" "${rows[@]}"
  echo
  [ "$failures" -eq 0 ] && echo "Outcome: PASS" || echo "Outcome: FAIL ($failures trials)"
} > "$work/section.md"
write_section kill_train "$work/section.md"
[ "$failures" -eq 0 ] || fail "$failures of $TRIALS trials failed"
echo "PASS test_kill_train (${SECONDS} s)"
