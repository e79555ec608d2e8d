#!/usr/bin/env bash
# The release's scale, measured on a tenth of it: prints figures and writes the "Release
# scale" section of tests/bench/RESULTS.md. Not a test; not part of ctest (the tree is
# GBs and the runs take minutes).
#
#   gen         tpuperf-synth --scale release --fraction 0.1 --seed 0, once (kept; written
#               under a temporary name and renamed when complete): every tenth file of each
#               split by size, so the sample keeps the release's size distribution; its
#               release_plan.tsv lists every planned file of the whole release, written or not;
#   preprocess  tpuperf-preprocess on 2 ranks with configs/tpugraphs.yaml's settings (wall,
#               CPU, peak RSS per rank), then an unchanged rerun;
#   train       per collection one epoch of the default model (configs/tpugraphs.yaml, no
#               model keys set) on 2 ranks, on the tree preprocessed with 2 folds, so that
#               the two ranks train one fold each at once (2 fold groups, one round):
#               training seconds and configs/s per fold from the epoch lines, evaluation
#               seconds (oof and valid) from the log's times, peak RSS per rank;
#   report      RESULTS.md: the measured figures and their scaling to the whole release
#               and to a full configs/tpugraphs.yaml run (5 folds, 10 epochs), here and per
#               added node of a cluster (the formulas are written out in the section).
#
# Run each part on the machine's timing lock, e.g.
#   flock /work/bench.lock bash tests/bench/bench_scale.sh build/bin preprocess
#   flock /work/bench.lock bash tests/bench/bench_scale.sh build/bin train
# Usage: bench_scale.sh [BIN_DIR] [all|gen|preprocess|train|report]   (default: build/bin all)
#   preprocess and train also write the report from what has been measured so far.
# Environment: TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench); TPUPERF_SCALE_RAW (default
#   $TPUPERF_BENCH_DIR/release10): the generated tenth; TPUPERF_SCALE_WORK (default
#   $TPUPERF_BENCH_DIR/scale-work): processed trees, logs, measurements (kept between
#   parts); TRAIN_BIN (default BIN_DIR/tpuperf-train); RESULTS (default
#   <repo>/tests/bench/RESULTS.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
PART=${2:-all}
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
GEN=${TPUPERF_SCALE_RAW:-$CACHE/release10}
WORK=${TPUPERF_SCALE_WORK:-$CACHE/scale-work}
TRAIN_BIN=${TRAIN_BIN:-$BIN/tpuperf-train}
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
FRACTION=0.1
PY=/usr/bin/python3
COLLECTIONS=(tile:xla layout:xla:random layout:xla:default layout:nlp:random layout:nlp:default)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
MPI=(mpirun --bind-to none --oversubscribe -np 2)
mkdir -p "$WORK"
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }

# RANK_TIME OUT CMD...: CMD under GNU time, as MPI rank r: peak RSS (KB) and seconds in OUT.r.
RANK_TIME=("$PY" -c 'import os, subprocess, sys
out = sys.argv[1] + "." + os.environ.get("OMPI_COMM_WORLD_RANK", "0")
sys.exit(subprocess.call(["/usr/bin/time", "-f", "%M %e", "-o", out] + sys.argv[2:]))')

# record LABEL T0 T1 L0 CPU_FILE RSS_PREFIX LOG CMD: one JSON line in runs.jsonl.
record() {
  $PY - "$WORK/runs.jsonl" "$@" <<'PY'
import glob, json, sys
runs, label, t0, t1, l0, l1, cpu_file, rss_prefix, log, cmd = sys.argv[1:]
cpu = sum(map(float, open(cpu_file).read().split()[-2:]))
rss = [float(open(f).read().split()[-2]) / 1024 for f in sorted(glob.glob(rss_prefix + ".*"))]
rec = dict(label=label, seconds=float(t1) - float(t0), cpu_seconds=cpu, rss_mb=rss,
           load_start=float(l0), load_end=float(l1), log=log, command=cmd)
lines = [l for l in open(runs).read().splitlines() if l and json.loads(l)["label"] != label] \
    if __import__("os").path.exists(runs) else []
open(runs, "w").write("\n".join(lines + [json.dumps(rec)]) + "\n")
print(f"  {label}: {rec['seconds']:.1f} s, {cpu:.1f} CPU s, peak RSS per rank {[round(r) for r in rss]} MB, "
      f"load {l0} -> {l1}")
PY
}

# timed LABEL CMD...: runs CMD (an mpirun line whose program is wrapped by RANK_TIME),
# recording wall, CPU of everything (GNU time on mpirun) and each rank's peak RSS.
timed() {
  local label=$1
  shift
  local log=$WORK/$label.log l0 t0 t1 rc=0
  rm -f "$WORK/rss-$label".*
  echo "== $label: $*"
  l0=$(load1); t0=$(now)
  /usr/bin/time -f "%U %S" -o "$WORK/cpu-$label.txt" "$@" > "$log" 2>&1 || rc=$?
  t1=$(now)
  # preprocessing's exit 3 (some files rejected) is a finished run; the tree has no bad files
  [ "$rc" -eq 0 ] || { tail -20 "$log"; echo "$label failed (exit $rc)"; exit 1; }
  record "$label" "$t0" "$t1" "$l0" "$(load1)" "$WORK/cpu-$label.txt" "$WORK/rss-$label" "$log" "$*"
}

# --------------------------------------------------------------------------- gen
gen() {
  [ -f "$GEN/.complete" ] && return 0
  echo "== generating a tenth of the release into $GEN (once)"
  local tmp=$GEN.tmp.$$ t0
  t0=$(now)
  rm -rf "$tmp"
  "$BIN/tpuperf-synth" --out "$tmp" --scale release --fraction "$FRACTION" --seed 0 --log-level warn
  touch "$tmp/.complete"
  [ -f "$GEN/.complete" ] || { rm -rf "$GEN"; mv "$tmp" "$GEN"; }
  rm -rf "$tmp"
  echo "generated in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.0f", b - a}') s"
}

# -------------------------------------------------------------------- preprocess
preprocess() {
  local out=$WORK/processed
  rm -rf "$out"
  local args=(--config "$SRC/configs/tpugraphs.yaml" --set "data.raw_dir=$GEN/npz"
              --set "data.processed_dir=$out")
  timed preprocess "${MPI[@]}" "${RANK_TIME[@]}" "$WORK/rss-preprocess" "$BIN/tpuperf-preprocess" "${args[@]}"
  timed preprocess-rerun "${MPI[@]}" "${RANK_TIME[@]}" "$WORK/rss-preprocess-rerun" "$BIN/tpuperf-preprocess" "${args[@]}"
}

# ------------------------------------------------------------------------- train
train() {
  # The same tree with 2 folds: one round of 2 fold groups (not timed: its preprocessing
  # is the part above's).
  local out2=$WORK/processed-2folds
  rm -rf "$out2"
  echo "== preprocessing with 2 folds for the training runs"
  "${MPI[@]}" "$BIN/tpuperf-preprocess" --config "$SRC/configs/tpugraphs.yaml" --set "data.raw_dir=$GEN/npz" \
    --set "data.processed_dir=$out2" --set preprocess.folds=2 --log-level warn > "$WORK/preprocess-2folds.log" 2>&1
  local c
  for c in "${COLLECTIONS[@]}"; do
    local label=train-${c//:/-}
    rm -rf "$WORK/run-$label"
    timed "$label" "${MPI[@]}" "${RANK_TIME[@]}" "$WORK/rss-$label" "$TRAIN_BIN" --config "$SRC/configs/tpugraphs.yaml" \
      --set "data.processed_dir=$out2" --set "output.dir=$WORK/run-$label" --set "data.collections=[$c]" \
      --set train.epochs=1 --train-only --fresh
    grep -E "epoch 1/1:" "$WORK/$label.log" | sed 's/^/  /' || true
  done
}

# ------------------------------------------------------------------------ report
report() {
  PYTHONPATH="$HERE" $PY "$HERE/scale_report.py" --work "$WORK" --gen "$GEN" --results "$RESULTS" \
    --fraction "$FRACTION" --train-bin "$TRAIN_BIN"
}

case "$PART" in
  gen) gen ;;
  preprocess) gen; preprocess; report ;;
  train) gen; train; report ;;
  report) report ;;
  all) gen; preprocess; train; report ;;
  *) echo "bench_scale.sh: unknown part '$PART' (all|gen|preprocess|train|report)" >&2; exit 2 ;;
esac
