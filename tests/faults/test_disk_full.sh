#!/usr/bin/env bash
# Output disk full (issue #6). The output lives on a small tmpfs, mounted in a private
# mount namespace (unshare -m) so that it disappears with the test whatever happens; where
# mounting is not allowed, a file-size limit (ulimit -f, SIGXFSZ ignored: writes fail
# with EFBIG) stands in for the full disk.
#   preprocess: a complete output, then `--force` reruns with the free space cut to parts
#     of what a new generation needs (so the disk fills up while writing shards, feature
#     files or the small files written last), and a transform-only refit (feature files
#     and manifest only) with no space at all. Each must exit
#     with 2 and an error naming the file and the reason, leave the previous output
#     exactly as it was (manifest bytes, graphs, transforms), and after space is freed a
#     plain rerun must finish with the same output and no leftovers.
#   train: a complete run's submission, report and metrics; then --predict-only on the
#     full disk must fail the same way and leave them untouched, and so must new training
#     runs into the full disk (with a little space, they fail writing checkpoints).
# TPUPERF_FAULTS_DISK=ulimit forces the file-size limit.
# Usage: test_disk_full.sh BIN_DIR SRC_DIR
if [ -z "${TPUPERF_FAULTS_NS:-}" ] && [ "${TPUPERF_FAULTS_DISK:-}" != ulimit ] && [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2> /dev/null; then
  exec unshare -m --propagation private env TPUPERF_FAULTS_NS=1 bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
DISK=$work/disk
mkdir -p "$DISK"
if [ "${TPUPERF_FAULTS_NS:-}" = 1 ] && mount -t tmpfs -o size=64m tmpfs "$DISK" 2> /dev/null; then
  mode=tmpfs
  trap 'umount "$DISK" 2> /dev/null; rm -rf "$work"' EXIT
else
  mode=ulimit
fi
echo "full disk simulated by: $mode"

make_tree "$work" 6
add_train_config "$work" 2 "tile:xla, layout:xla:random"
P=$DISK/processed
# The command lines; LIMIT (see limit) goes between mpirun and each rank's program, since
# mpirun resets the signal dispositions of the processes it starts.
LIMIT=()
pre_cmd() { PRE=(mpirun --bind-to none -np 2 "${LIMIT[@]}" "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.processed_dir="$P" "$@"); }
used_kb() { df -k --output=used "$DISK" | tail -1 | tr -d ' '; }
resize() { mount -o remount,size="$1"k "$DISK"; }   # tmpfs only
# limit KB: sets LIMIT, a rank's command prefix that, without tmpfs, caps the size of every
# file the rank writes (SIGXFSZ ignored, so writes fail with EFBIG instead of killing it).
limit() {
  LIMIT=()
  [ "$mode" = tmpfs ] || LIMIT=(bash -c 'trap "" XFSZ; ulimit -f "$0"; exec "$@"' "$1")
}

step "a complete output"
pre_cmd
run_timed "$work/full" 120 "${PRE[@]}"
[ "$RC" -eq 0 ] || { cat "$work/full.log"; fail "preprocessing with space exited $RC"; }
cp -a "$P" "$work/ref"
need_kb=$(du -sk "$P" | cut -f1)
echo "output: ${need_kb} kB"

rows=()
failures=0
check_intact() {  # the previous output, exactly
  cmp -s "$work/manifest.before" "$P/manifest.yaml" || problems+="manifest.yaml changed; "
  $CHECK same "$work/ref" "$P" > "$work/same.txt" || problems+="previous output changed: $(head -2 "$work/same.txt" | tr '\n' ' '); "
}
# label:free space as a fraction of a generation:arguments
trials=("--force:0.05:--force" "--force:0.3:--force" "--force:0.6:--force" "--force:0.9:--force"
        "--force:0.98:--force" "refit only:0:--set preprocess.log_columns=false")
[ "$mode" = tmpfs ] || trials=("--force:16 kB files:--force" "refit only:16 kB files:--set preprocess.log_columns=false")
n=0
for trial in "${trials[@]}"; do
  IFS=: read -r label frac argtext <<< "$trial"
  read -r -a args <<< "$argtext"
  n=$((n + 1))
  problems=""
  if [ "$mode" = tmpfs ]; then
    free_kb=$(awk -v n="$need_kb" -v f="$frac" 'BEGIN { printf "%d", n * f }')
    resize $(( $(used_kb) + free_kb ))
    what="${free_kb} kB free ($(awk -v f="$frac" 'BEGIN { print f * 100 }')% of a generation)"
  else
    what="ulimit -f 16 (files of at most 16 kB)"
  fi
  limit 16
  cp "$P/manifest.yaml" "$work/manifest.before"
  pre_cmd "${args[@]}"
  LIMIT=()
  run_timed "$work/pre_$n" 120 "${PRE[@]}"
  rc=$RC
  log=$work/pre_$n.log
  err=$(grep -m1 "tpuperf-preprocess: error:" "$log" || true)
  [ "$rc" -eq 2 ] || problems+="exit $rc, expected 2; "
  grep -qE "No space left on device|File too large" <<< "$err" || problems+="the error does not give the reason; "
  grep -qE "$DISK/processed/[^ :]+" <<< "$err" || problems+="the error names no output file; "
  check_intact
  [ "$mode" = tmpfs ] && resize 65536
  pre_cmd
  run_timed "$work/rerun_$n" 120 "${PRE[@]}"
  [ "$RC" -eq 0 ] || problems+="the rerun with space exited $RC; "
  $CHECK same "$work/ref" "$P" --clean > "$work/same.txt" || problems+="rerun output: $(head -2 "$work/same.txt" | tr '\n' ' '); "
  outcome=PASS; [ -z "$problems" ] || { outcome="FAIL: $problems"; failures=$((failures + 1)); }
  echo "preprocess $label with $what: $outcome"
  echo "  $err"
  rows+=("| preprocess $label, np 2 | $what | $rc | ${err#*error: } | $outcome |")
done

step "training"
R=$DISK/run
NP=2
train_cmd() { TRAIN=(mpirun --bind-to none -np "$NP" "${LIMIT[@]}" "$BIN/tpuperf-train" --config "$work/cfg.yaml" --set data.processed_dir="$P" "$@"); }
train_cmd --set output.dir="$R"
run_timed "$work/train" 300 "${TRAIN[@]}"
[ "$RC" -eq 0 ] || { tail -20 "$work/train.log"; fail "training with space exited $RC"; }
cp -a "$R" "$work/run_ref"
# label:free kB:ranks:arguments. With one rank the first write that fails is always the
# same: with 64 kB free, the first checkpoint (~280 kB).
n=0
for spec in "predict-only:4:2:--predict-only --set output.dir=$R" "new run:4:2:--set output.dir=$DISK/run2" \
            "new run:64:1:--set output.dir=$DISK/run3"; do
  IFS=: read -r label free_kb NP argtext <<< "$spec"
  read -r -a args <<< "$argtext"
  n=$((n + 1))
  problems=""
  if [ "$mode" = tmpfs ]; then resize $(( $(used_kb) + free_kb )); what="$free_kb kB free"
  else what="ulimit -f $free_kb"; fi
  limit "$free_kb"
  train_cmd "${args[@]}"
  LIMIT=()
  run_timed "$work/train_$n" 120 "${TRAIN[@]}"
  rc=$RC
  err=$(grep -m1 "tpuperf-train: error:" "$work/train_$n.log" || true)
  # Without an error line, what killed it (e.g. "terminate called ...", "what(): ...").
  died=$(grep -m2 -E "terminate called|what\(\)|Segmentation|signal" "$work/train_$n.log" | tr '\n' ' ' | tr '|' '/' || true)
  [ "$rc" -eq 2 ] || problems+="exit $rc, expected 2; "
  grep -qE "No space left on device|File too large" <<< "$err" || problems+="the error does not give the reason; "
  grep -qE "$DISK/run[^ :]*/[^ :]+" <<< "$err" || problems+="the error names no output file; "
  for f in submission.csv report.md metrics.csv train_config.yaml; do
    cmp -s "$work/run_ref/$f" "$R/$f" || problems+="$f changed; "
  done
  [ "$mode" = tmpfs ] && resize 65536
  outcome=PASS; [ -z "$problems" ] || { outcome="FAIL: $problems"; failures=$((failures + 1)); }
  echo "train $label (np $NP) with $what: exit $rc: $outcome"
  echo "  ${err:-$died}"
  shown=${err#*error: }
  [ -n "$err" ] || shown="died: $died"
  rows+=("| train $label, np $NP | $what | $rc | $shown | $outcome |")
done

{
  echo "## Output disk full (test_disk_full.sh)"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, ${SECONDS} s in all. Full disk simulated by: $mode."
  echo "tile:xla and layout:xla:random of a tiny tree, 2 ranks; a complete preprocessing output"
  echo "takes ${need_kb} kB. Each preprocessing row is a \`--force\` rerun with only that much"
  echo "free space (refit only: a transform setting changed, so only feature files and the manifest"
  echo "are written); passing needs exit 2, an error naming an output file and the reason, the"
  echo "previous output unchanged (manifest bytes, graphs, folds, transforms), then a rerun with"
  echo "space that ends with the same output and no leftovers. The training rows need exit 2,"
  echo "such an error, and submission.csv, report.md, metrics.csv, train_config.yaml unchanged."
  echo
  echo "| run | space | exit | error | outcome |"
  echo "|---|---|---|---|---|"
  printf "%s\n" "${rows[@]}" | sed "s|$work/||g"
  echo
  [ "$failures" -eq 0 ] && echo "Outcome: PASS" || echo "Outcome: FAIL ($failures cases)"
} > "$work/section.md"
write_section disk_full "$work/section.md"
[ "$failures" -eq 0 ] || fail "$failures cases failed"
echo "PASS test_disk_full (${SECONDS} s)"
