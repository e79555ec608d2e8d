#!/usr/bin/env bash
# jobs/run.sh, the workstation launcher, on a generated tiny tree with 2 ranks and 2 folds:
# the whole pipeline writes a submission that scores; --stage predict reproduces it from
# the checkpoints; --stage train refuses to overwrite the run without --fresh/--resume;
# rerunning only preprocessing (unchanged: nothing to do; a changed setting: the transform
# is refitted) leaves the run's outputs untouched; a rejected source file (preprocess exit
# 3) is not a launcher failure; bad arguments are refused with exit 2.
# Usage: test_run.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TPUPERF_BIN=$BIN
source "$SRC/tests/tiny_train.sh"
run() { bash "$SRC/jobs/run.sh" "$@"; }
step() { echo; echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }
# expect_rc RC LOG COMMAND...: run COMMAND with its output in LOG and check its exit code.
expect_rc() {
  local want=$1 log=$2 rc=0
  shift 2
  "$@" > "$log" 2>&1 || rc=$?
  [ "$rc" -eq "$want" ] || { tail -30 "$log"; fail "exit code $rc, expected $want: $*"; }
}

"$BIN/tpuperf-synth" --out "$work/gen" --scale tiny --seed 3 > /dev/null 2>&1
cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $work/gen/npz
  processed_dir: $work/processed
preprocess:
  folds: 2
output:
  dir: $work/run
$(tiny_train_yaml 2 16 1 0)
YAML
cfg=$work/cfg.yaml

step "the whole pipeline: preprocess, then train with the ensemble"
expect_rc 0 "$work/all.log" run --config "$cfg" --np 2
grep -q "^== preprocessing with 2 ranks" "$work/all.log" || fail "no preprocessing header"
threads=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
grep -q "^== training with 2 ranks (threads per rank: $threads)" "$work/all.log" || fail "no training header"
# The launcher's thread count reached the trainer.
grep -q "2 ranks, $threads LibTorch threads each" "$work/all.log" || fail "threads per rank not passed"
for f in manifest.yaml preprocess_config.yaml; do [ -s "$work/processed/$f" ] || fail "missing processed/$f"; done
for f in submission.csv report.md metrics.csv; do [ -s "$work/run/$f" ] || fail "missing run/$f"; done
"$BIN/tpuperf-score" --submission "$work/run/submission.csv" --truth "$work/gen" > "$work/score.txt" \
  || { cat "$work/score.txt"; fail "the submission does not score"; }
grep "^overall" "$work/score.txt"
cp -p "$work/run/submission.csv" "$work/submission.first.csv"

step "--stage predict reproduces the submission from the checkpoints, on 1 rank with all cores"
expect_rc 0 "$work/predict.log" run --config "$cfg" --np 1 --stage predict
grep -q "^== predicting with 1 ranks (threads per rank: $(nproc))" "$work/predict.log" || fail "no predict header"
grep -q "1 ranks, $(nproc) LibTorch threads each" "$work/predict.log" || fail "threads per rank not cores / ranks"
cmp "$work/run/submission.csv" "$work/submission.first.csv"
# A --set of the caller wins over the launcher's threads per rank.
expect_rc 0 "$work/predict2.log" run --config "$cfg" --np 1 --stage predict --set train.threads_per_rank=3
grep -q "1 ranks, 3 LibTorch threads each" "$work/predict2.log" || fail "--set train.threads_per_rank ignored"
if grep -q "^== preprocessing\|^== training" "$work/predict.log"; then fail "--stage predict ran other stages"; fi

step "--stage train refuses to overwrite the run without --fresh or --resume"
cp -p "$work/run/submission.csv" "$work/submission.first.csv"   # predict rewrote it
rc=0; run --config "$cfg" --np 2 --stage train > "$work/again.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "an existing run was overwritten"
grep -q -- "--resume" "$work/again.log" || { tail "$work/again.log"; fail "no hint at --resume"; }

step "rerun only preprocessing, unchanged: nothing to do, the run untouched"
expect_rc 0 "$work/pre1.log" run --config "$cfg" --np 2 --stage preprocess
grep -q "nothing to do" "$work/pre1.log" || { tail "$work/pre1.log"; fail "an unchanged rerun did work"; }
if grep -q "^== training" "$work/pre1.log"; then fail "--stage preprocess trained"; fi

step "rerun only preprocessing with a changed setting: the transform is refitted, the run untouched"
manifest_before=$(md5sum < "$work/processed/manifest.yaml")
expect_rc 0 "$work/pre2.log" run --config "$cfg" --np 2 --stage preprocess --set preprocess.log_columns=false
grep -q "transform settings changed, refit" "$work/pre2.log" || { tail "$work/pre2.log"; fail "no refit"; }
[ "$(md5sum < "$work/processed/manifest.yaml")" != "$manifest_before" ] || fail "manifest not rewritten"
grep -q 'log_columns: false' "$work/processed/manifest.yaml" || fail "the --set did not reach preprocessing"
cmp "$work/run/submission.csv" "$work/submission.first.csv"
[ "$work/run/submission.csv" -nt "$work/submission.first.csv" ] && fail "submission.csv was rewritten"
[ "$work/submission.first.csv" -nt "$work/run/submission.csv" ] && fail "submission.csv mtime changed"

step "a rejected source file (tpuperf-preprocess exit 3) is not a launcher failure"
bad=$(ls "$work"/gen/npz/tile/xla/valid/*.npz | head -1)
head -c 300 "$bad" > "$bad.part" && mv "$bad.part" "$bad"
expect_rc 0 "$work/pre3.log" run --config "$cfg" --np 2 --stage preprocess
grep -q "^note: preprocessing finished but rejected some source files" "$work/pre3.log" || fail "no note on rejected files"
grep -q "$(basename "$bad")" "$work/processed/rejected.txt" || fail "rejected.txt does not name $(basename "$bad")"

step "bad arguments are refused with exit 2"
expect_rc 2 "$work/bad1.log" run --config "$cfg" --stage bogus
grep -q "stage must be" "$work/bad1.log" || fail "unclear message: $(cat "$work/bad1.log")"
expect_rc 2 "$work/bad2.log" run --config "$cfg" --stage preprocess --fresh
expect_rc 2 "$work/bad3.log" run --config "$work/missing.yaml"
grep -q "missing.yaml: config file not found" "$work/bad3.log" || fail "unclear message: $(cat "$work/bad3.log")"
expect_rc 2 "$work/bad4.log" run --config "$cfg" --np 0
expect_rc 2 "$work/bad5.log" env TPUPERF_BIN="$work/nobin" bash "$SRC/jobs/run.sh" --config "$cfg" --stage predict
grep -q "nobin/tpuperf-train not found" "$work/bad5.log" || fail "unclear message: $(cat "$work/bad5.log")"
echo "PASS test_run"
