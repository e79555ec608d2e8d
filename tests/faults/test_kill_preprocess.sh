#!/usr/bin/env bash
# kill -9 of tpuperf-preprocess at random points (issue #6). The tree alternates between
# two versions of its inputs, A and B (a tile train file with changed node features, so
# the transform and folds are refitted, and a layout valid file with changed runtimes).
# Each trial, from a seed, switches the version, starts a 2-rank run (sometimes --force)
# and kills it: either by a fault point at a random hit (TPUPERF_FAULT) or by SIGKILL of
# a random rank after a random delay. Then:
#   - what the kill left must be a complete output: the previous version's or the new one's;
#   - a plain rerun must finish with exactly an uninterrupted run's output for the new
#     version (same graphs, folds and transforms), without temporary or unlisted files.
# Usage: test_kill_preprocess.sh BIN_DIR SRC_DIR   (TPUPERF_FAULTS_KILL_TRIALS: trials, 10)
source "$(dirname "$0")/lib.sh"
TRIALS=${TPUPERF_FAULTS_KILL_TRIALS:-10}

make_tree "$work" 4
RAW=$work/gen/npz
# Versions A (as generated) and B of two files, kept aside to switch between them.
$PY - "$RAW" "$work/versions" <<'PY'
import os, shutil, sys, numpy as np
raw, out = sys.argv[1], sys.argv[2]
def first(d):
    return os.path.join(d, sorted(f for f in os.listdir(os.path.join(raw, d)) if f.endswith(".npz"))[0])
for rel, change in [(first("tile/xla/train"), "node_feat"), (first("layout/nlp/default/valid"), "config_runtime")]:
    for v in "AB":
        os.makedirs(os.path.join(out, v, os.path.dirname(rel)), exist_ok=True)
    shutil.copy(os.path.join(raw, rel), os.path.join(out, "A", rel))
    z = dict(np.load(os.path.join(raw, rel)))
    z[change] = z[change] * 3 + 1 if change == "config_runtime" else z[change] * np.float32(1.5)
    np.savez(os.path.join(out, "B", rel), **z)
PY
use_version() { cp -r "$work/versions/$1/." "$RAW/"; }
pre_cmd() { PRE=(mpirun --bind-to none -np 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.processed_dir="$1"); }

step "uninterrupted references for both versions"
for v in A B; do
  use_version $v
  pre_cmd "$work/ref$v"
  run_ranks_timed "$work/ref$v.log" "${PRE[@]}"
  [ "$RC" -eq 0 ] || { cat "$work/ref$v.log"; fail "reference run $v exited with $RC"; }
  echo "version $v: ranks ran ${RANK_MS} ms"
done
full_ms=$RANK_MS   # the windows for random kill delays: a full run, and a rerun of A -> B
cp -a "$work/refA" "$work/probe"
pre_cmd "$work/probe"
run_ranks_timed "$work/probe.log" "${PRE[@]}"
inc_ms=$RANK_MS
rm -rf "$work/probe"
echo "an incremental run's ranks ran ${inc_ms} ms"
$CHECK same "$work/refA" "$work/refB" > /dev/null && fail "versions A and B give the same output"
cp -a "$work/refB" "$work/out"   # the output under test starts as a complete B
current=B
P=$work/out

rows=()
failures=0
for trial in $(seq 1 "$TRIALS"); do
  RANDOM=$((trial * 7919))
  next=$([ "$current" = A ] && echo B || echo A)
  use_version "$next"
  force=(); [ $((RANDOM % 3)) -eq 0 ] && force=(--force)
  pre_cmd "$P"
  log=$work/kill$trial.log
  start=$EPOCHREALTIME
  if [ $((RANDOM % 2)) -eq 0 ]; then
    points=(preprocess.file_done:$((1 + RANDOM % 6)) preprocess.before_manifest preprocess.after_manifest)
    how="TPUPERF_FAULT=${points[$((RANDOM % 3))]}"
    set +e
    env "$how" timeout -k 5 120 "${PRE[@]}" "${force[@]}" > "$log" 2>&1
    rc=$?
    set -e
    grep -q "fault injection: killing" "$log" && killed=yes || killed=no
  else
    window=$([ ${#force[@]} -gt 0 ] && echo "$full_ms" || echo "$inc_ms")
    delay=$((RANDOM % window)) rank=$((RANDOM % 2))
    timeout -k 5 120 "${PRE[@]}" "${force[@]}" > "$log" 2>&1 &
    job=$!
    wait_for_ranks "$job" 2
    sleep "$(awk -v d="$delay" 'BEGIN { print d / 1000 }')"
    pid=$(kill_one_rank "$job" "$rank")
    how="SIGKILL of rank $rank ${delay} ms after the ranks started"
    set +e
    wait "$job"
    rc=$?
    set -e
    [ -n "$pid" ] && killed=yes || killed="no (finished first)"
  fi
  secs=$(elapsed "$start")
  problems=""
  [ "$rc" -ne 124 ] || problems+="killed run hung; "
  # What the kill left: the previous complete output or the new one, never a mix.
  if $CHECK same "$work/ref$current" "$P" > /dev/null; then left="previous ($current)"
  elif $CHECK same "$work/ref$next" "$P" > /dev/null; then left="new ($next)"
  else left="NEITHER"; problems+="the output after the kill is neither version; "; fi
  # A kill may land after the rank finalized (not yet a zombie, its work committed): the run
  # may then exit 0, but only having written the new output.
  [ "$killed" != yes ] || [ "$rc" -ne 0 ] || [ "$left" = "new ($next)" ] ||
    problems+="killed run exited 0 without the new output; "
  run_timed "$work/rerun$trial" 120 "${PRE[@]}"
  [ "$RC" -eq 0 ] || problems+="rerun exited with $RC; "
  if ! $CHECK same "$work/ref$next" "$P" --clean > "$work/same$trial.txt"; then
    problems+="rerun differs from the uninterrupted run: $(head -3 "$work/same$trial.txt" | tr '\n' ' '); "
  fi
  last=$(grep -v "fault injection" "$log" | grep -oE '\[(info|warning|error)\] .*' | tail -1 | cut -c1-90 | tr '|' '/' || true)
  outcome=PASS; [ -z "$problems" ] || { outcome="FAIL: $problems"; failures=$((failures + 1)); }
  echo "trial $trial: $current -> $next ${force[*]}, $how: killed $killed, exit $rc, left $left; rerun ${SECS} s: $outcome"
  rows+=("| $trial | $current -> $next ${force[*]} | $how | $killed, exit $rc after ${secs} s | ${last:--} | $left | $outcome |")
  current=$next
done

{
  echo "## kill -9 of tpuperf-preprocess, then a rerun (test_kill_preprocess.sh)"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, ${SECONDS} s in all. 2 ranks on a tiny"
  echo "generated tree whose inputs alternate between versions A and B; trial t seeds bash's"
  echo "RANDOM with 7919 t; external kills come a random delay after the ranks started, below the"
  echo "ranks' lifetime in an uninterrupted run (${full_ms} ms full, ${inc_ms} ms incremental)."
  echo "After each kill the output must be one complete version (the"
  echo "previous or the new); the rerun must equal an uninterrupted run of the new version"
  echo "(graphs, folds, transforms) and leave no temporary or unlisted files."
  echo
  echo "| trial | inputs | kill | killed, exit | last log line before the kill | output after the kill | outcome |"
  echo "|---|---|---|---|---|---|---|"
  printf "%s\n" "${rows[@]}"
  echo
  [ "$failures" -eq 0 ] && echo "Outcome: PASS" || echo "Outcome: FAIL ($failures trials)"
} > "$work/section.md"
write_section kill_preprocess "$work/section.md"
[ "$failures" -eq 0 ] || fail "$failures of $TRIALS trials failed"
echo "PASS test_kill_preprocess (${SECONDS} s)"
