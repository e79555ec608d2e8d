#!/usr/bin/env bash
# Adaptation budget bench (issue #48 item 3): how much measuring a few configs of a graph the
# run never saw helps to rank the rest of its configs. Prints the table and writes the
# "Adaptation budget" section of tests/bench/RESULTS.md. Not a test.
#
# 1. The run: ONE tpuperf run trained on the bench tree's train graphs (tpuperf-synth
#    --scale bench --seed 0; all five collections) with the demo's model widths (RUN_SETTINGS
#    below: 2 folds, 8 epochs of 20 steps, hidden 32 x 2 layers) and
#    output.tile_keep_default=false (the held-out configs' config 0 is no compiler default).
#    Cached in $TPUPERF_BENCH_DIR/adapt-budget/run: a rerun whose settings, schema defaults
#    and tree are the same keeps it.
# 2. The graphs it never saw: the bench tree's GRAPHS test graphs per collection with the
#    most distinct configs (runtimes from its truth/), the real layout module and the real
#    tile kernel with the most configs (tests/data/real, the same records as
#    ../shared/data/real, featurized by tpuperf-featurize). For each budget B in BUDGETS and
#    draw d < DRAWS: `baselines.py make-within --train-size B --seed d --max-test MAX_HELD
#    --held` writes MEASURED (B distinct configs drawn at random, with runtimes) and HELD
#    (the next MAX_HELD of the same permutation, with runtimes); a graph whose HELD would
#    hold fewer than MIN_HELD configs is skipped at that budget. On HELD:
#      (a) the run as trained: tpuperf-rank --json
#      (b) the run adapted: tpuperf-rank --adapt MEASURED --seed d --json (the default method,
#          the blend); the seconds quoted are a timing pass's, the same adaptations rerun
#          after the cells under one flock /work/bench.lock (the machine's timing lock)
#      (b') the run fine-tuned: the same with --adapt-method finetune (default steps and lr)
#      (c) ridge and GBT fit on MEASURED only: baselines.py within --gbt-max-iter GBT_MAX_ITER
#      (d) tpuperf from scratch on MEASURED only: tpuperf-preprocess + tpuperf-train with
#          preprocess.folds=1 and SCRATCH_SETTINGS (one tree per slot: the i-th graph of
#          every generated collection, or the two real graphs; the collections train apart)
#    (a), (b) and (d) also rank MEASURED (their fit to the measurements, for the analysis).
# 3. adapt_budget.py collect / report: the records, the table, RESULTS.md.
#
# Usage: bench_adapt_budget.sh [BIN_DIR] [--no-results] [--timing-only]
#   --timing-only: only the timing pass and the report, over the kept run and cells of the last
#   full bench (e.g. when its timing pass could not get the lock); the quality figures stay.
# Environment: TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench): cache and scratch root;
#   TPUPERF_BENCH_RAW (default $TPUPERF_BENCH_DIR/raw): the bench tree, generated when absent;
#   RESULTS (default <repo>/tests/bench/RESULTS.md); GRAPHS (1: with 2, a cell took 8 min), BUDGETS ("16 64 256"),
#   DRAWS (3), MAX_HELD (1000), MIN_HELD (20), GBT_MAX_ITER (100); NICE (default 10): the niceness of every
#   heavy command.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$SRC/build/bin
WRITE=1
TIMING_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --no-results) WRITE=0 ;;
    --timing-only) TIMING_ONLY=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (see --help)"; exit 2 ;;
    *) BIN=$1 ;;
  esac
  shift
done
BIN=$(cd "$BIN" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
RAW=${TPUPERF_BENCH_RAW:-$CACHE/raw}
WORK=$CACHE/adapt-budget
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
REAL=$SRC/tests/data/real
GRAPHS=${GRAPHS:-1}
BUDGETS=${BUDGETS:-16 64 256}
DRAWS=${DRAWS:-3}
MAX_HELD=${MAX_HELD:-1000}
MIN_HELD=${MIN_HELD:-20}
# (c)'s GBT: at most 100 boosting rounds, not baselines.py's 500 (no early stopping below 200
# rows): at 64 measured configs of the layout:xla:random graph 500 rounds scored 0.6839 and
# took 49 s a fit, 100 rounds 0.6836 in 14 s (one thread, load 3-4).
GBT_MAX_ITER=${GBT_MAX_ITER:-100}
NICE_N=${NICE:-10}
NICE="nice -n $NICE_N"
PY=/usr/bin/python3
BL="$PY $HERE/baselines.py"
AB="$PY $HERE/adapt_budget.py"
# The run's collections ($ALL), RUN_SETTINGS, bench_run_request and train_tree: shared with
# bench_tuning_loop.sh, which ranks with the same run.
source "$HERE/bench_run.sh"
ALL=$BENCH_RUN_COLLECTIONS
# From scratch on B configs of one graph: 4 epochs of 10 steps at the run's lr and widths. A
# fixed step count: the trainer's own for a fold of one small graph is 1-2 steps an epoch at
# B = 16 (a tile slate of 64 holds all 16 configs), which leaves the model untrained; 40
# steps in all keep the bench's 9 cells x 2 scratch runs within its time.
SCRATCH_SETTINGS=(--set preprocess.folds=1 --set train.epochs=4 --set train.steps_per_epoch=10 --set train.lr=0.003
  --set model.tile.hidden=32 --set model.tile.layers=2 --set model.layout.hidden=32 --set model.layout.layers=2
  --set output.tile_keep_default=false)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

for b in tpuperf-synth tpuperf-featurize tpuperf-preprocess tpuperf-train tpuperf-rank; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build first)"; exit 2; }
done
$PY -c "import sklearn, scipy, numpy" 2>/dev/null \
  || { echo "needs numpy, scipy and sklearn for $PY: apt-get install -y python3-sklearn"; exit 2; }
mkdir -p "$WORK"
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}'; }
stamp() { date -u '+%Y-%m-%d %H:%M UTC'; }
# stdin from /dev/null: mpirun forwards stdin to rank 0 and would eat a loop's input.
mpi() { $NICE mpirun --bind-to none --oversubscribe -np 2 "$@" < /dev/null; }
L0=$(load1); T_START=$(now)
echo "adaptation budget bench started $(stamp); load: $(uptime)"

echo "== self-tests of the metric and aggregation code"
$BL --self-test > "$WORK/self-test.log" || { cat "$WORK/self-test.log"; exit 1; }
$AB --self-test >> "$WORK/self-test.log" || { cat "$WORK/self-test.log"; exit 1; }
grep -c '^ok' "$WORK/self-test.log" | xargs echo "checks passed:"

source "$HERE/bench_tree.sh"
ensure_bench_tree "$BIN" "$RAW" $NICE

RUN=$WORK/run
RECORDS=$WORK/records.jsonl
if [ "$TIMING_ONLY" = 1 ]; then
  for f in "$RUN/submission.csv" "$WORK/meta.json" "$WORK/records.jsonl"; do
    [ -f "$f" ] || { echo "--timing-only needs the last full bench's $f (run without it first)"; exit 2; }
  done
else
# ------------------------------------------------------------------------------ the run
echo "== the run"
REQUEST=$(bench_run_request "$BIN" "$RAW")
if [ -f "$RUN/submission.csv" ] && [ "$(cat "$WORK/run-request.txt" 2>/dev/null)" = "$REQUEST" ]; then
  RUN_NOTE="the run kept from $(cat "$WORK/run-when.txt"), trained in $(cat "$WORK/run-seconds.txt") s"
  echo "$RUN_NOTE"
else
  rm -f "$WORK/run-request.txt"
  t0=$(now)
  train_tree "$WORK/run-tree" "$RAW/npz" "$ALL" "$RUN" "${RUN_SETTINGS[@]}"
  since "$t0" > "$WORK/run-seconds.txt"; stamp > "$WORK/run-when.txt"
  echo "$REQUEST" > "$WORK/run-request.txt"
  RUN_NOTE="the run trained by this bench in $(cat "$WORK/run-seconds.txt") s"
  echo "$RUN_NOTE"
fi

# ------------------------------------------------------------------------------ the graphs
echo "== the graphs"
rm -rf "$WORK/real-npz" "$WORK/sources" "$WORK/cells"
"$BIN/tpuperf-featurize" --out "$WORK/real-npz" --split train --source xla --search random \
  "$REAL/module_tuning_data_layout.pb" 2> "$WORK/featurize.log"
"$BIN/tpuperf-featurize" --out "$WORK/real-npz" --split train --prefix op_tuning_data \
  "$REAL/op_tuning_data.pb" 2>> "$WORK/featurize.log"
real_layout=$(ls "$WORK/real-npz/npz/layout/xla/random/train/"*.npz)
real_tile=$($PY -c "
import glob, numpy as np
print(max(sorted(glob.glob('$WORK/real-npz/npz/tile/xla/train/*.npz')), key=lambda f: len(np.load(f)['config_runtime'])))")
$AB sources --raw "$RAW" --graphs "$GRAPHS" --out "$WORK/sources" \
  --real "tile:xla=$real_tile,real_tile_kernel" --real "layout:xla:random=$real_layout,real_layout_module" \
  > "$WORK/sources.txt"
cat "$WORK/sources.txt"

# ------------------------------------------------------------------------------ the cells
: > "$RECORDS"
: > "$WORK/skipped.txt"
# cell B D: every graph measured at budget B in draw D, ranked by (a)-(d); see
# adapt_budget.py collect for the layout of the cell's directory.
cell() {
  local B=$1 D=$2 cell=$WORK/cells/b$1-d$2
  mkdir -p "$cell/b" "$cell/f" "$cell/c" "$cell/d"
  : > "$cell/graphs.txt"
  local slot coll file distinct name
  while read -r slot coll file distinct name; do
    if [ $((distinct - B)) -lt "$MIN_HELD" ]; then
      [ "$D" = 0 ] && echo "$name ($coll, $distinct distinct configs) at budget $B" >> "$WORK/skipped.txt"
      continue
    fi
    $BL make-within --src "$file" --collection "$coll" --out "$cell/$slot" --seed "$D" --train-size "$B" \
      --max-test "$MAX_HELD" --held --name "$name" > /dev/null
    echo "$slot $coll $name" >> "$cell/graphs.txt"
  done < "$WORK/sources.txt"
  local measured=() held=()
  while read -r slot coll name; do
    measured+=("$cell/$slot/npz/${coll//://}/train/$name.npz")
    held+=("$cell/$slot/held/${coll//://}/test/$name.npz")
  done < "$cell/graphs.txt"
  # (a) the run as trained, every graph of the cell in one call.
  $NICE "$BIN/tpuperf-rank" --run "$RUN" --json "${measured[@]}" "${held[@]}" > "$cell/a.json" 2> "$cell/a.log" \
    || { tail -5 "$cell/a.log"; exit 1; }
  local i=0
  while read -r slot coll name <&3; do
    local cu=${coll//:/_}
    # (b) adapted to MEASURED (its seconds are not quoted: the timing pass below times).
    $NICE "$BIN/tpuperf-rank" --run "$RUN" --adapt "${measured[$i]}" --seed "$D" --json \
      "${measured[$i]}" "${held[$i]}" > "$cell/b/$slot-$cu.json" 2> "$cell/b/$slot-$cu.log" \
      || { tail -5 "$cell/b/$slot-$cu.log"; exit 1; }
    # (b') fine-tuned to MEASURED.
    $NICE "$BIN/tpuperf-rank" --run "$RUN" --adapt "${measured[$i]}" --adapt-method finetune --seed "$D" --json \
      "${measured[$i]}" "${held[$i]}" > "$cell/f/$slot-$cu.json" 2> "$cell/f/$slot-$cu.log" \
      || { tail -5 "$cell/f/$slot-$cu.log"; exit 1; }
    # (c) ridge and GBT on MEASURED.
    $NICE $BL within --tree "$cell/$slot" --collection "$coll" --gbt-max-iter "$GBT_MAX_ITER" \
      --out "$cell/c/$slot-$cu.json" > /dev/null
    i=$((i + 1))
  done 3< "$cell/graphs.txt"
  # (d) from scratch: one run per slot tree (its collections train apart).
  for slot in $(cut -d' ' -f1 "$cell/graphs.txt" | sort -u); do
    local colls m=() h=()
    colls="[$(awk -v s="$slot" '$1 == s { printf "%s%s", n++ ? "," : "", $2 }' "$cell/graphs.txt")]"
    train_tree "$cell/$slot" "$cell/$slot/npz" "$colls" "$cell/$slot/run" "${SCRATCH_SETTINGS[@]}"
    while read -r s coll name; do
      [ "$s" = "$slot" ] || continue
      m+=("$cell/$slot/npz/${coll//://}/train/$name.npz"); h+=("$cell/$slot/held/${coll//://}/test/$name.npz")
    done < "$cell/graphs.txt"
    $NICE "$BIN/tpuperf-rank" --run "$cell/$slot/run" --json "${m[@]}" "${h[@]}" > "$cell/d/$slot.json" \
      2> "$cell/d/$slot.log" || { tail -5 "$cell/d/$slot.log"; exit 1; }
  done
  $AB collect --cell "$cell" --budget "$B" --draw "$D" --out "$RECORDS"
}

for B in $BUDGETS; do
  for D in $(seq 0 $((DRAWS - 1))); do
    t0=$(now)
    cell "$B" "$D"
    echo "budget $B draw $D: $(since "$t0") s"
  done
done

fi

# ------------------------------------------------------------------------ the timing pass
# The adaptations again, alone on the machine's timing lock (one wait for the whole pass):
# every graph, budget and draw, one LibTorch thread; their seconds are the ones quoted.
echo "== timing pass (flock /work/bench.lock)"
rm -rf "$WORK/timing"; mkdir -p "$WORK/timing"
: > "$WORK/timing.txt"
for B in $BUDGETS; do
  for D in $(seq 0 $((DRAWS - 1))); do
    while read -r slot coll name; do
      echo "$B $slot $coll $name $WORK/timing/b$B-d$D-$slot-${coll//:/_}.log" >> "$WORK/timing.txt"
    done < "$WORK/cells/b$B-d$D/graphs.txt"
  done
done
t0=$(now)
flock /work/bench.lock bash -c '
  while read -r B slot coll name log; do
    D=$(basename "$log" | cut -d- -f2 | tr -d d)
    m=$4/cells/b$B-d$D/$slot/npz/${coll//://}/train/$name.npz
    $1 "$2/tpuperf-rank" --run "$3" --adapt "$m" --seed "$D" --top 1 "$m" > /dev/null 2> "$log" || { tail -5 "$log"; exit 1; }
  done < "$4/timing.txt"' _ "$NICE" "$BIN" "$RUN" "$WORK"
TIMING_NOTE="a timing pass after the quality runs: $(wc -l < "$WORK/timing.txt") adaptations (every graph, budget and draw) under flock /work/bench.lock and nice -n $NICE_N, $(since "$t0") s with the lock wait, load $(load1) at its end"
echo "$TIMING_NOTE"

# ---------------------------------------------------------------------------- the report
SECONDS_ALL=$(since "$T_START")
echo "bench total: $SECONDS_ALL s"
if [ "$TIMING_ONLY" = 1 ]; then
  $PY - "$WORK/meta.json" "$TIMING_NOTE" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
meta["timing_note"] = sys.argv[2] + " (rerun alone with --timing-only, after the quality runs of " + meta["when"] + ")"
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PY
else
PYTHONPATH="$HERE" $PY - "$WORK/meta.json" <<PY
import json, sys
skipped = [l.strip() for l in open("$WORK/skipped.txt") if l.strip()]
json.dump(dict(when="$(stamp)", machine=__import__("results_md").machine(), load=[$L0, $(load1)],
               seconds=$SECONDS_ALL, nice=$NICE_N, budgets=[int(b) for b in "$BUDGETS".split()], draws=$DRAWS,
               max_held=$MAX_HELD, timing_note="$TIMING_NOTE", gbt_max_iter=$GBT_MAX_ITER, min_held=$MIN_HELD, skipped=skipped, run_note="$RUN_NOTE",
               run_settings="tpuperf-preprocess + \`mpirun --bind-to none -np 2 tpuperf-train --fresh\` on "
                            "the bench tree (\`tpuperf-synth --scale bench --seed 0\`; train and valid graphs of "
                            "all five collections) with \`${RUN_SETTINGS[*]}\` (the rest the schema's defaults)",
               graphs_note="the bench tree's $GRAPHS test graphs per collection with the most distinct configs "
                           "(runtimes from its truth/), the real layout module (91 distinct configs) and the real "
                           "tile kernel with the most configs (579 distinct) of tests/data/real (the records of "
                           "../shared/data/real), featurized by tpuperf-featurize.",
               scratch_settings="one tpuperf-preprocess + tpuperf-train per (slot, budget, draw) on the measured "
                                "configs (the slot's graphs, each collection its own model) with "
                                "\`${SCRATCH_SETTINGS[*]}\` (40 steps whatever the budget)"), open(sys.argv[1], "w"), indent=1)
PY
fi
if [ "$WRITE" = 1 ]; then
  PYTHONPATH="$HERE" $AB report --records "$RECORDS" --meta "$WORK/meta.json" --timing "$WORK/timing.txt" --results "$RESULTS"
  echo "wrote $RESULTS"
else
  PYTHONPATH="$HERE" $AB report --records "$RECORDS" --meta "$WORK/meta.json" --timing "$WORK/timing.txt"
fi
