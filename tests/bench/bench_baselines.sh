#!/usr/bin/env bash
# Baselines benchmark (issue #20 step 1): tpuperf against flat models (ridge and
# gradient-boosted trees, sklearn, tests/bench/baselines.py) on the same configs and splits;
# prints figures and writes the "Baselines" section of tests/bench/RESULTS.md. Not a test.
#
#   within  (task a) within one graph: a random 70/30 split of a graph's distinct configs
#           (identical config rows collapsed to their least runtime, as preprocess.dedup=min
#           does); both sides train on the 70% part and rank the held-out part. Graphs: the
#           real layout module of tests/data/real (91 distinct configs; WITHIN_REAL_SEEDS
#           splits: a split holds out only 27 configs, so scores move by about 0.1 (sd)
#           between splits) and the real tile kernel with the most configs (579; only the
#           first WITHIN_REAL_TILE_SEEDS splits: every model scores 1.000 on it, so more
#           splits add nothing), both featurized by
#           tpuperf-featurize; the WITHIN_LAYOUT_GEN train files with the most configs of each
#           generated layout collection of the bench tree (one file was not enough: the
#           largest xla:default file was lost by 0.007, the third largest by 0.06) and its
#           WITHIN_TILE_GEN largest tile files (at most
#           WITHIN_MAX_TRAIN train and WITHIN_MAX_TEST held-out configs per graph).
#           tpuperf: each split is written as a release tree (train/ the 70% with runtimes,
#           empty valid/, test/ the held-out configs with zeroed runtimes), preprocessed with
#           preprocess.folds=1 (the one fold model trains on every train config; no out-of-
#           fold or valid score, so the last epoch is kept), trained with the schema's
#           defaults (a fold of one graph trains its collection's floor on the steps of an
#           epoch, raised to train.single_graph_min_config_passes_per_epoch passes over its
#           configs and capped at train.max_config_passes_per_epoch: the generated layout
#           files train more steps than the floor, the real graphs fewer; the run's
#           metrics.csv has them), and output.tile_keep_default=false (config 0 of a held-out part is no default);
#           scored with tpuperf-score against the held-out runtimes. Generated graphs are
#           also scored against their noise-free runtimes (the bench tree's noise_free/):
#           every model, and the noise-free order against the measured runtimes (what a
#           model that learned the cost model exactly would score).
#   across  (task b) unseen graphs: the bench tree (tpuperf-synth --scale bench --seed 0),
#           all five collections, test graphs scored against its truth. tpuperf: the
#           project's defaults (configs/tpugraphs.yaml: 5 folds, 10 epochs, default models)
#           and, with --bench-settings, also the settings of bench_train.sh --bench-tree
#           (2 folds, 8 epochs x 20 steps, the demo-sized models). Baselines: trained on the
#           train split (ACROSS_PER_GRAPH configs sampled per layout graph, every tile
#           config), hyper-parameters chosen on the valid split, per-graph normalized log
#           runtime as target; tile predictions keep config 0 among the top 5 as tpuperf's do.
#
# Times: tpuperf "train" is the wall time of tpuperf-train (loading, the folds' training,
# per-epoch evaluation, test prediction; 2 ranks), and the training steps alone from
# metrics.csv; predictions/s is the test configs over the wall time of tpuperf-rank on the
# test files (model loading included, one thread). Baselines: train = features + fit (one
# thread, OMP_NUM_THREADS=1), predictions/s = test configs over features + predict.
#
# Usage: bench_baselines.sh [BIN_DIR] [--skip-within] [--skip-across] [--bench-settings]
#                           [--reuse-tpuperf] [--no-results]
# --skip-within / --skip-across: the part not run keeps its table in RESULTS.md as an earlier
# bench wrote it (each table names its run's date and machine).
# --reuse-tpuperf keeps the tpuperf runs of an earlier bench (their tpuperf.json in the work
# dir; the splits are deterministic, so the trees are the same) that trained the same
# collections with the same settings, the same schema defaults (tpuperf-train --help-config)
# and the same WITHIN_MAX_* limits, and reruns only the flat models and the tables.
# Environment: TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench): cache and scratch root;
#   TPUPERF_BENCH_RAW (default $TPUPERF_BENCH_DIR/raw): the bench tree, generated when
#   absent; RESULTS (default <repo>/tests/bench/RESULTS.md); WITHIN_REAL_SEEDS (10),
#   WITHIN_REAL_TILE_SEEDS (3), WITHIN_LAYOUT_GEN (3), WITHIN_TILE_GEN (2), WITHIN_MAX_TRAIN (2000),
#   WITHIN_MAX_TEST (1000), ACROSS_PER_GRAPH (1000); NICE (default 19): the niceness of
#   every heavy command.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$SRC/build/bin
DO_WITHIN=1 DO_ACROSS=1 DO_BENCH_SETTINGS=0 WRITE=1 REUSE_TPUPERF=0
while [ $# -gt 0 ]; do
  case $1 in
    --skip-within) DO_WITHIN=0 ;;
    --skip-across) DO_ACROSS=0 ;;
    --bench-settings) DO_BENCH_SETTINGS=1 ;;
    --no-results) WRITE=0 ;;
    --reuse-tpuperf) REUSE_TPUPERF=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (see --help)"; exit 2 ;;
    *) BIN=$1 ;;
  esac
  shift
done
BIN=$(cd "$BIN" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
RAW=${TPUPERF_BENCH_RAW:-$CACHE/raw}
WORK=$CACHE/baselines-work
RES=$CACHE/baselines-results
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
REAL=$SRC/tests/data/real
WITHIN_REAL_SEEDS=${WITHIN_REAL_SEEDS:-10}
WITHIN_REAL_TILE_SEEDS=${WITHIN_REAL_TILE_SEEDS:-3}
WITHIN_LAYOUT_GEN=${WITHIN_LAYOUT_GEN:-3}
WITHIN_TILE_GEN=${WITHIN_TILE_GEN:-2}
WITHIN_MAX_TRAIN=${WITHIN_MAX_TRAIN:-2000}
WITHIN_MAX_TEST=${WITHIN_MAX_TEST:-1000}
SCHEMA_DIGEST=$("$BIN/tpuperf-train" --help-config | sha256sum | cut -c1-16)
ACROSS_PER_GRAPH=${ACROSS_PER_GRAPH:-1000}
NICE="nice -n ${NICE:-19}"
PY=/usr/bin/python3
BL="$PY $HERE/baselines.py"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

for b in tpuperf-synth tpuperf-featurize tpuperf-preprocess tpuperf-train tpuperf-score tpuperf-rank; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build first)"; exit 2; }
done
$PY -c "import sklearn, scipy, numpy" 2>/dev/null \
  || { echo "needs numpy, scipy and sklearn for $PY: apt-get install -y python3-sklearn"; exit 2; }
mkdir -p "$WORK" "$RES"
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}'; }
# stdin from /dev/null: mpirun forwards stdin to rank 0 and would eat a loop's input.
mpi() { local np=$1; shift; $NICE mpirun --bind-to none --oversubscribe -np "$np" "$@" < /dev/null; }
stamp() { date -u '+%Y-%m-%d %H:%M UTC'; }
# Each table names the machine it ran on: a bench that reruns one part keeps the other's table.
MACHINE=$(PYTHONPATH="$HERE" $PY -c 'from results_md import machine; print(machine())')
echo "baselines bench started $(stamp); load: $(uptime)"
T_START=$(now)

echo "== baselines.py --self-test"
$BL --self-test > "$WORK/self-test.log" || { cat "$WORK/self-test.log"; exit 1; }
tail -1 "$WORK/self-test.log"

# The bench tree, shared with the other bench scripts: generated only when absent, under a
# temporary name renamed into place.
source "$HERE/bench_tree.sh"
ensure_bench_tree "$BIN" "$RAW" $NICE

# run_tpuperf NAME TREE COLLECTIONS EXTRA_SETTINGS...: preprocess TREE/npz and train with
# the schema's defaults plus the given --set options; the run in $WORK/NAME/run; timings
# and scores appended to $WORK/NAME/tpuperf.json.
run_tpuperf() {
  local name=$1 tree=$2 colls=$3; shift 3
  local dir=$WORK/$name
  # What the run was asked for; --reuse-tpuperf keeps only a run asked for the same. The
  # schema's defaults count: a run of older defaults is not what the defaults give now.
  local request="$colls $* defaults:$SCHEMA_DIGEST within:$WITHIN_MAX_TRAIN/$WITHIN_MAX_TEST"
  if [ "$REUSE_TPUPERF" = 1 ] && [ -f "$dir/tpuperf.json" ] &&
    [ "$(cat "$dir/request.txt" 2>/dev/null)" = "$request" ]; then
    echo "$name: the earlier tpuperf run kept (--reuse-tpuperf)"
    return
  fi
  rm -f "$dir/request.txt"
  rm -rf "$dir/processed" "$dir/run"
  mkdir -p "$dir"
  cat > "$dir/config.yaml" <<YAML
data:
  raw_dir: $tree/npz
  processed_dir: $dir/processed
  collections: $colls
output:
  dir: $dir/run
YAML
  local t0 pre_s l0 l1 wall
  t0=$(now)
  mpi 2 "$BIN/tpuperf-preprocess" --config "$dir/config.yaml" "$@" > "$dir/preprocess.log" 2>&1 \
    || { tail -20 "$dir/preprocess.log"; exit 1; }
  pre_s=$(since "$t0")
  l0=$(load1); t0=$(now)
  mpi 2 "$BIN/tpuperf-train" --config "$dir/config.yaml" --fresh "$@" > "$dir/train.log" 2>&1 \
    || { tail -30 "$dir/train.log"; exit 1; }
  wall=$(since "$t0"); l1=$(load1)
  "$BIN/tpuperf-score" --submission "$dir/run/submission.csv" --truth "$tree/truth" --json > "$dir/score.json"
  $BL score --submission "$dir/run/submission.csv" --truth "$tree/truth" --out "$dir/score-baselines-py.json" > /dev/null
  # Predictions per second: tpuperf-rank on the test files, one call per collection.
  : > "$dir/rank.txt"
  for c in $(echo "$colls" | tr -d '[]' | tr , ' '); do
    local files=("$tree/npz/$(echo "$c" | tr : /)/test/"*.npz) t1
    t1=$(now)
    $NICE "$BIN/tpuperf-rank" --run "$dir/run" --collection "$c" --csv "${files[@]}" > "$dir/rank-$c.csv" 2> "$dir/rank-$c.log" \
      || { tail -5 "$dir/rank-$c.log"; exit 1; }
    echo "$c $(since "$t1") ${#files[@]}" >> "$dir/rank.txt"
  done
  $PY - "$dir" "$tree" "$wall" "$pre_s" "$l0" "$l1" "$(stamp)" "$*" <<'PY'
import csv, glob, json, os, sys
import numpy as np
d, tree, wall, pre_s, l0, l1, when, sets = sys.argv[1:]
score = json.load(open(f"{d}/score.json"))
mine = json.load(open(f"{d}/score-baselines-py.json"))
rows = [r for r in csv.DictReader(open(f"{d}/run/metrics.csv")) if r["split"] == "train"]
steps_s = {}
for r in rows:
    steps_s[r["collection"]] = steps_s.get(r["collection"], 0.0) + float(r["elapsed_s"] or 0)
rank = {}
for line in open(f"{d}/rank.txt"):
    c, secs, nfiles = line.split()
    n = 0
    for f in glob.glob(os.path.join(tree, "npz", c.replace(":", "/"), "test", "*.npz")):
        with np.load(f) as z:
            n += len(z["config_runtime"])
    rank[c] = dict(seconds=float(secs), files=int(nfiles), configs=n, per_s=n / max(float(secs), 1e-9))
valid = {}
import re
for line in open(f"{d}/train.log"):
    m = re.search(r"\] (\S+): valid score ensemble (\S+) \(random (\S+)", line)
    if m:
        valid[m[1]] = float(m[2])
out = dict(when=when, wall_s=float(wall), preprocess_s=float(pre_s), load=[float(l0), float(l1)], settings=sets,
           score=score, per_graph=mine, steps_s=steps_s, rank=rank, valid=valid)
json.dump(out, open(f"{d}/tpuperf.json", "w"), indent=1)
for c in score["collections"]:
    m = mine[c["collection"]]["mean"]
    # The bench's own metric code must agree with tpuperf-score.
    assert abs(m - c["score"]) < 1e-6, (c, m)
print(f"{os.path.basename(d)}: tpuperf-train {float(wall):.0f} s; " +
      ", ".join(f"{c['collection']} {c['score']:.4f}" for c in score["collections"]))
PY
  echo "$request" > "$dir/request.txt"
}

# score_noise_free NAME TREE: a generated TREE's noise-free test runtimes (TREE/noise_free,
# from tpuperf-synth --noise-free or make-within --noise-free) score the run's submission
# into $WORK/NAME/score-noise-free.json (also for a run kept by --reuse-tpuperf).
score_noise_free() {
  local dir=$WORK/$1 tree=$2
  rm -f "$dir/score-noise-free.json"
  [ -d "$tree/noise_free" ] || return 0
  $BL score --submission "$dir/run/submission.csv" --truth "$tree/noise_free" \
    --out "$dir/score-noise-free.json" > /dev/null
}

# ------------------------------------------------------------------------------ within
if [ "$DO_WITHIN" = 1 ]; then
  echo "== within one graph"
  l0=$(load1); T0=$(now)
  rm -rf "$WORK/within" "$WORK/real-npz"
  mkdir -p "$WORK/within"
  # The real records as release npz.
  "$BIN/tpuperf-featurize" --out "$WORK/real-npz" --split train --source xla --search random \
    "$REAL/module_tuning_data_layout.pb" 2> "$WORK/featurize.log"
  "$BIN/tpuperf-featurize" --out "$WORK/real-npz" --split train --prefix op_tuning_data \
    "$REAL/op_tuning_data.pb" 2>> "$WORK/featurize.log"
  real_layout=$(ls "$WORK/real-npz/npz/layout/xla/random/train/"*.npz)
  real_tile=$($PY -c "
import glob, numpy as np
print(max(glob.glob('$WORK/real-npz/npz/tile/xla/train/*.npz'), key=lambda f: len(np.load(f)['config_runtime'])))")
  # The generated graphs: the files with the most configs per collection, as "<tree index>
  # <collection> <file>" (tree gen-i holds the i-th largest file of each collection).
  mapfile -t gen < <($PY - "$RAW/npz" "$WITHIN_LAYOUT_GEN" "$WITHIN_TILE_GEN" <<'PY'
import glob, os, sys
import numpy as np
raw, nlayout, ntile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def n(f):
    with np.load(f) as z:
        return len(z["config_runtime"])
for c, k in [("layout/xla/random", nlayout), ("layout/xla/default", nlayout), ("layout/nlp/random", nlayout),
             ("layout/nlp/default", nlayout), ("tile/xla", ntile)]:
    # Largest first; equal sizes in name order.
    for i, f in enumerate(sorted(sorted(glob.glob(f"{raw}/{c}/train/*.npz")), key=n, reverse=True)[:k]):
        print(i, c.replace("/", ":"), f)
PY
)
  : > "$WORK/within/tasks.txt"
  # Trees: real-<seed> holds the real layout module and (the first WITHIN_REAL_TILE_SEEDS)
  # the real tile kernel; gen-0 the four generated layout graphs and the first generated
  # tile file; gen-<i> the other tile files.
  for s in $(seq 0 $((WITHIN_REAL_SEEDS - 1))); do
    $BL make-within --src "$real_layout" --collection layout:xla:random --out "$WORK/within/real-$s" --seed "$s" \
      --name real_layout_module > /dev/null
    colls=layout:xla:random
    if [ "$s" -lt "$WITHIN_REAL_TILE_SEEDS" ]; then
      $BL make-within --src "$real_tile" --collection tile:xla --out "$WORK/within/real-$s" --seed "$s" \
        --name real_tile_kernel > /dev/null
      colls=$colls,tile:xla
    fi
    echo "real-$s [$colls]" >> "$WORK/within/tasks.txt"
  done
  declare -A gen_colls=()
  for line in "${gen[@]}"; do
    read -r i c f <<< "$line"
    $NICE $BL make-within --src "$f" --collection "$c" --out "$WORK/within/gen-$i" --seed 0 \
      --max-train "$WITHIN_MAX_TRAIN" --max-test "$WITHIN_MAX_TEST" \
      --noise-free "$RAW/noise_free/${f#"$RAW/npz/"}" > /dev/null
    gen_colls[$i]=${gen_colls[$i]:+${gen_colls[$i]},}$c
  done
  for i in $(printf '%s\n' "${!gen_colls[@]}" | sort -n); do
    echo "gen-$i [${gen_colls[$i]}]" >> "$WORK/within/tasks.txt"
  done
  while read -r tree colls <&3; do
    # Steps per epoch: the trainer's own for a fold of one graph, at least
    # train.single_graph_min_config_passes_per_epoch passes over its configs, within
    # train.max_config_passes_per_epoch (a one-pass epoch over one graph is one step).
    echo "-- $tree $colls"
    run_tpuperf "within-$tree" "$WORK/within/$tree" "$colls" --set preprocess.folds=1 \
      --set output.tile_keep_default=false
    score_noise_free "within-$tree" "$WORK/within/$tree"
    for c in $(echo "$colls" | tr -d '[]' | tr , ' '); do
      imp=()
      [[ $tree == gen-0 || $tree == real-0 ]] && imp=(--importances)
      $NICE $BL within --tree "$WORK/within/$tree" --collection "$c" "${imp[@]}" \
        --out "$WORK/within-$tree/baselines-$(echo "$c" | tr : _).json" > /dev/null
    done
  done 3< "$WORK/within/tasks.txt"
  $PY - "$WORK" "$RES/within.json" "$(stamp)" "$l0" "$(load1)" "$(since "$T0")" "$MACHINE" <<'PY'
import glob, json, os, sys
work, out, when, l0, l1, secs, machine = sys.argv[1:]
tasks = []
for line in open(f"{work}/within/tasks.txt"):
    tree = line.split()[0]
    tp = json.load(open(f"{work}/within-{tree}/tpuperf.json"))
    nf_path = f"{work}/within-{tree}/score-noise-free.json"
    nf = {c: v["mean"] for c, v in json.load(open(nf_path)).items()} if os.path.exists(nf_path) else {}
    for f in sorted(glob.glob(f"{work}/within/{tree}/split-*.json")):
        s = json.load(open(f))
        c = s["collection"]
        b = json.load(open(f"{work}/within-{tree}/baselines-{c.replace(':', '_')}.json"))
        sc = next(x for x in tp["score"]["collections"] if x["collection"] == c)
        tasks.append(dict(tree=tree, split=s, tpuperf=dict(score=sc["score"], random=sc["random_baseline"],
                                                           train_wall_s=tp["wall_s"], steps_s=tp["steps_s"].get(c),
                                                           rank=tp["rank"].get(c), settings=tp["settings"],
                                                           when=tp["when"],
                                                           noise_free=nf.get(c)),
                          baselines=b))
json.dump(dict(when=when, machine=machine, load=[float(l0), float(l1)], seconds=float(secs), tasks=tasks),
          open(out, "w"), indent=1)
PY
  echo "within: $(since "$T0") s"
fi

# ------------------------------------------------------------------------------ across
ALL="[tile:xla,layout:xla:random,layout:xla:default,layout:nlp:random,layout:nlp:default]"
if [ "$DO_ACROSS" = 1 ]; then
  echo "== across graphs: the bench tree"
  l0=$(load1); T0=$(now)
  # configs/tpugraphs.yaml is the schema's defaults with the release's paths: the same
  # settings, here on the bench tree.
  run_tpuperf across-defaults "$RAW" "$ALL"
  score_noise_free across-defaults "$RAW"
  if [ "$DO_BENCH_SETTINGS" = 1 ]; then
    run_tpuperf across-bench "$RAW" "$ALL" --set preprocess.folds=2 --set train.epochs=8 \
      --set train.steps_per_epoch=20 --set train.lr=0.003 --set train.tile_slate=64 \
      --set train.eval_max_configs=100 --set model.tile.hidden=32 --set model.tile.layers=2 \
      --set model.layout.hidden=32 --set model.layout.layers=2
    score_noise_free across-bench "$RAW"
  fi
  $NICE $BL across --raw "$RAW" --truth "$RAW/truth" --noise-free "$RAW/noise_free" --per-graph "$ACROSS_PER_GRAPH" \
    --analysis --out "$WORK/across-baselines.json" > /dev/null
  $PY - "$WORK" "$RES/across.json" "$(stamp)" "$l0" "$(load1)" "$(since "$T0")" "$RAW" "$MACHINE" <<'PY'
import json, os, sys
work, out, when, l0, l1, secs, raw, machine = sys.argv[1:]
runs = {}
for name in ("across-defaults", "across-bench"):
    p = f"{work}/{name}/tpuperf.json"
    if os.path.exists(p):
        runs[name] = json.load(open(p))
        nf = f"{work}/{name}/score-noise-free.json"
        if os.path.exists(nf):
            runs[name]["noise_free"] = json.load(open(nf))
json.dump(dict(when=when, machine=machine, load=[float(l0), float(l1)], seconds=float(secs), tree=raw, tpuperf=runs,
               baselines=json.load(open(f"{work}/across-baselines.json"))), open(out, "w"), indent=1)
PY
  echo "across: $(since "$T0") s"
fi
echo "bench total: $(since "$T_START") s"

# ---------------------------------------------------------------------------- RESULTS.md
[ "$WRITE" = 1 ] || exit 0
PYTHONPATH="$HERE" $PY "$HERE/baselines_md.py" "$RES" "$RESULTS"
echo "wrote $RESULTS"
