#!/usr/bin/env bash
# Tuning-loop bench (issue #57 item 4): an autotuner's loop on graphs whose runtimes are all
# known, rounds of "pick BATCH configs -> measure them (look the runtimes up) -> update", and
# the best measured runtime over the graph's true best against the number of configs
# measured, for random search, the run as trained measuring its top-B, the tpuperf loop
# (Ranker::adapted, the blend, + Ranker::suggest), a GBT refit each round (Ansor's way) and
# the AutoTVM transfer recipe (the run's prediction as a decaying base margin of a GBT).
# Writes the "Tuning loop" section of tests/bench/RESULTS.md and tests/bench/tuning_loop.svg.
# Not a test.
#
# 1. The run: the adaptation-budget bench's (bench_run.sh: ONE run trained on the bench tree's
#    train graphs, RUN_SETTINGS), from its cache $TPUPERF_BENCH_DIR/adapt-budget/run when that
#    was trained for the same request (settings, schema defaults, tree); else this bench trains
#    the same into $TPUPERF_BENCH_DIR/tuning-loop/run (and never writes under adapt-budget/).
# 2. The graphs: every test graph of the bench tree's five collections (runtimes from its
#    truth/) and the real graphs of tests/data/real (the records of ../shared/data/real)
#    featurized by tpuperf-featurize, each reduced to its distinct configs, at most MAX_CONFIGS
#    of them (a seeded sample); graphs with at most BATCH distinct configs are left out
#    (tuning_loop.py sources).
# 3. The tpuperf loop and the run's order: tests/bench/tuning_loop.cpp (build target
#    tuning_loop), one process per collection, the ranker library in process (one thread).
# 4. Random search, the GBT loop and AutoTVM: tuning_loop.py strategies, DRAWS draws per graph.
# 5. tuning_loop.py report: the section and the SVG (their methods are described there and in
#    tuning_loop.py's docstring).
#
# Usage: bench_tuning_loop.sh [BIN_DIR] [--no-results]
#   --no-results: print the section, write the SVG into the work directory, leave RESULTS.md.
#   --report-only: only the report, from the kept records and meta.json of the last bench.
# Environment: TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench), TPUPERF_BENCH_RAW (default
#   $TPUPERF_BENCH_DIR/raw, generated when absent), RESULTS (default <repo>/tests/bench/RESULTS.md),
#   BUDGETS ("8 16 32 64 128 256": the figures' n; the loops run to the largest), BATCH (8),
#   DRAWS (5), WARMUP (64: the GBT loop's random measurements), GBT_MAX_ITER (50), MAX_CONFIGS
#   (1000), MAX_GRAPHS (0 = all; else at most that many graphs per group, for a quick try),
#   NICE (10).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$SRC/build/bin
WRITE=1
REPORT_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --no-results) WRITE=0 ;;
    --report-only) REPORT_ONLY=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (see --help)"; exit 2 ;;
    *) BIN=$1 ;;
  esac
  shift
done
BIN=$(cd "$BIN" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
RAW=${TPUPERF_BENCH_RAW:-$CACHE/raw}
WORK=$CACHE/tuning-loop
RECORDS=$WORK/records.jsonl
SHARED_RUN=$CACHE/adapt-budget
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
REAL=$SRC/tests/data/real
BUDGETS=${BUDGETS:-8 16 32 64 128 256}
BATCH=${BATCH:-8}
DRAWS=${DRAWS:-5}
WARMUP=${WARMUP:-64}
GBT_MAX_ITER=${GBT_MAX_ITER:-50}
MAX_CONFIGS=${MAX_CONFIGS:-1000}
MAX_GRAPHS=${MAX_GRAPHS:-0}
NICE_N=${NICE:-10}
NICE="nice -n $NICE_N"
PY=/usr/bin/python3
TL="$PY $HERE/tuning_loop.py"
BUDGET=$(echo $BUDGETS | tr ' ' '\n' | sort -n | tail -1)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

for b in tpuperf-synth tpuperf-featurize tpuperf-preprocess tpuperf-train tuning_loop; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build first: make tuning_loop tpuperf-featurize ...)"; exit 2; }
done
$PY -c "import sklearn, scipy, numpy" 2>/dev/null \
  || { echo "needs numpy, scipy and sklearn for $PY: apt-get install -y python3-sklearn"; exit 2; }
mkdir -p "$WORK"
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}'; }
stamp() { date -u '+%Y-%m-%d %H:%M UTC'; }
mpi() { $NICE mpirun --bind-to none --oversubscribe -np 2 "$@" < /dev/null; }
if [ "$REPORT_ONLY" = 1 ]; then
  for f in "$WORK/records.jsonl" "$WORK/meta.json"; do
    [ -f "$f" ] || { echo "--report-only needs the last bench's $f (run without it first)"; exit 2; }
  done
else
L0=$(load1); T_START=$(now)
echo "tuning loop bench started $(stamp); load: $(uptime)"

echo "== self-tests of the metric and aggregation code"
$TL --self-test > "$WORK/self-test.log" || { cat "$WORK/self-test.log"; exit 1; }
grep -c '^ok' "$WORK/self-test.log" | xargs echo "checks passed:"

source "$HERE/bench_tree.sh"
source "$HERE/bench_run.sh"
ensure_bench_tree "$BIN" "$RAW" $NICE

# ------------------------------------------------------------------------------ the run
echo "== the run"
REQUEST=$(bench_run_request "$BIN" "$RAW")
if [ -f "$SHARED_RUN/run/submission.csv" ] && [ "$(cat "$SHARED_RUN/run-request.txt" 2>/dev/null)" = "$REQUEST" ]; then
  RUN=$SHARED_RUN/run
  RUN_NOTE="the adaptation-budget bench's run, kept from $(cat "$SHARED_RUN/run-when.txt"), trained in $(cat "$SHARED_RUN/run-seconds.txt") s"
elif [ -f "$WORK/run/submission.csv" ] && [ "$(cat "$WORK/run-request.txt" 2>/dev/null)" = "$REQUEST" ]; then
  RUN=$WORK/run
  RUN_NOTE="the run kept from $(cat "$WORK/run-when.txt"), trained in $(cat "$WORK/run-seconds.txt") s"
else
  RUN=$WORK/run
  rm -f "$WORK/run-request.txt"
  t0=$(now)
  train_tree "$WORK/run-tree" "$RAW/npz" "$BENCH_RUN_COLLECTIONS" "$RUN" "${RUN_SETTINGS[@]}"
  since "$t0" > "$WORK/run-seconds.txt"; stamp > "$WORK/run-when.txt"
  echo "$REQUEST" > "$WORK/run-request.txt"
  RUN_NOTE="the run trained by this bench in $(cat "$WORK/run-seconds.txt") s"
fi
echo "$RUN_NOTE"

# ------------------------------------------------------------------------------ the graphs
echo "== the graphs"
rm -rf "$WORK/real-npz" "$WORK/sources"
"$BIN/tpuperf-featurize" --out "$WORK/real-npz" --split train --source xla --search random \
  "$REAL/module_tuning_data_layout.pb" 2> "$WORK/featurize.log"
"$BIN/tpuperf-featurize" --out "$WORK/real-npz" --split train --prefix op_tuning_data \
  "$REAL/op_tuning_data.pb" 2>> "$WORK/featurize.log"
real=(--real "layout:xla:random=$(ls "$WORK/real-npz/npz/layout/xla/random/train/"*.npz),real_layout_module")
for f in "$WORK/real-npz/npz/tile/xla/train/"*.npz; do
  real+=(--real "tile:xla=$f,real_$(basename "$f" .npz)")
done
$NICE $TL sources --raw "$RAW" --out "$WORK/sources" --max-configs "$MAX_CONFIGS" --min-configs "$BATCH" \
  --skipped "$WORK/skipped.txt" "${real[@]}" > "$WORK/sources-all.txt"
if [ "$MAX_GRAPHS" -gt 0 ]; then
  awk -v k="$MAX_GRAPHS" '++n[$1] <= k' "$WORK/sources-all.txt" > "$WORK/sources.txt"
else
  cp "$WORK/sources-all.txt" "$WORK/sources.txt"
fi
echo "$(wc -l < "$WORK/sources.txt") graphs ($(wc -l < "$WORK/skipped.txt") left out with at most $BATCH distinct configs):"
awk '{ n[$1]++; c[$1] += $4 } END { for (g in n) printf "  %s: %d graphs, %d configs\n", g, n[g], c[g] }' "$WORK/sources.txt" | sort

# ------------------------------------------------------------------ the tpuperf loop (C++)
echo "== the tpuperf loop (tuning_loop, suggest $BATCH -> measure -> adapt, to $BUDGET)"
LOOP=$WORK/loop.jsonl
: > "$LOOP"
t0=$(now)
for coll in $(cut -d' ' -f2 "$WORK/sources.txt" | sort -u); do
  files=$(awk -v c="$coll" '$2 == c { print $3 }' "$WORK/sources.txt")
  t1=$(now)
  # shellcheck disable=SC2086
  $NICE "$BIN/tuning_loop" "$RUN" "$coll" "$BUDGET" "$BATCH" 0 "$LOOP" $files > "$WORK/loop-${coll//:/_}.log" 2>&1 \
    || { tail -5 "$WORK/loop-${coll//:/_}.log"; exit 1; }
  echo "  $coll: $(echo $files | wc -w) graphs, $(since "$t1") s"
done
LOOP_S=$(since "$t0")

# ------------------------------------------------------------- the Python strategies
echo "== random search, the GBT loop, AutoTVM ($DRAWS draws)"
: > "$RECORDS"
t0=$(now)
$NICE $TL strategies --sources "$WORK/sources.txt" --loop "$LOOP" --draws "$DRAWS" --budget "$BUDGET" \
  --batch "$BATCH" --warmup "$WARMUP" --gbt-max-iter "$GBT_MAX_ITER" --out "$RECORDS" | tee "$WORK/strategies.log"
STRAT_S=$(since "$t0")

# ---------------------------------------------------------------------------- the report
SECONDS_ALL=$(since "$T_START")
echo "bench total: $SECONDS_ALL s (tpuperf loop $LOOP_S s, Python strategies $STRAT_S s)"
ISA=$(grep -m1 '^flags' /proc/cpuinfo | grep -qw avx512f && echo "AVX-512 (avx512f)" \
  || { grep -m1 '^flags' /proc/cpuinfo | grep -qw avx2 && echo "AVX2" || echo "no AVX2"; })
PYTHONPATH="$HERE" $PY - "$WORK/meta.json" <<PY
import json, sys
skipped = [l.strip() for l in open("$WORK/skipped.txt") if l.strip()]
json.dump(dict(when="$(stamp)", machine=__import__("results_md").machine(), isa="$ISA", load=[$L0, $(load1)],
               seconds=$SECONDS_ALL, loop_seconds=$LOOP_S, strategies_seconds=$STRAT_S, nice=$NICE_N,
               budgets=sorted(int(b) for b in "$BUDGETS".split()), batch=$BATCH, draws=$DRAWS, warmup=$WARMUP,
               gbt_max_iter=$GBT_MAX_ITER, min_configs=$BATCH, skipped=skipped, run_note="$RUN_NOTE",
               run_settings="tpuperf-preprocess + \`mpirun --bind-to none -np 2 tpuperf-train --fresh\` on "
                            "the bench tree (\`tpuperf-synth --scale bench --seed 0\`; train and valid graphs of "
                            "all five collections) with \`${RUN_SETTINGS[*]}\` (the rest the schema's defaults; "
                            "\`tests/bench/bench_run.sh\`, shared with the adaptation-budget bench)",
               graphs_note="every test graph of the bench tree's five collections (runtimes from its truth/) and "
                           "the real layout module and tile kernels of tests/data/real (the records of "
                           "../shared/data/real) featurized by tpuperf-featurize, each reduced to its distinct "
                           "configs (the least runtime of re-measured copies) and at most $MAX_CONFIGS of them "
                           "(a seeded sample)" + (" (a quick try: at most $MAX_GRAPHS graphs per group)" if $MAX_GRAPHS else "") + "."),
          open(sys.argv[1], "w"), indent=1)
PY
fi
if [ "$WRITE" = 1 ]; then
  PYTHONPATH="$HERE" $TL report --records "$RECORDS" --meta "$WORK/meta.json" --results "$RESULTS" \
    --svg "$HERE/tuning_loop.svg"
  echo "wrote $RESULTS and $HERE/tuning_loop.svg"
else
  PYTHONPATH="$HERE" $TL report --records "$RECORDS" --meta "$WORK/meta.json" --svg "$WORK/tuning_loop.svg"
  echo "wrote $WORK/tuning_loop.svg"
fi
