#!/usr/bin/env bash
# Evaluation cadence (issue #46): what scoring the held-out and valid graphs every k-th
# epoch (train.eval_every = k) and fewer configs a layout graph (train.eval_max_configs = m)
# would cost in model selection, at the defaults, on the bench tree. Prints the figures and
# writes the "Evaluation cadence" section of tests/bench/RESULTS.md. Not a test; not in ctest.
#
# Per collection, seed and m: one `mpirun -np 2 tpuperf-train --fresh` of configs/tpugraphs.yaml's
# model and training keys (10 epochs) on the bench tree (tpuperf-synth --scale bench --seed 0)
# preprocessed with the defaults (5 folds), scored after every epoch (train.eval_every=1).
# Training does not depend on scoring, so eval_cadence.py reads from a run's metrics.csv what
# any cadence would have kept, and runs of one seed at different m train the same (it checks
# the train losses), so what an m-run keeps is scored on the first m's run (the reference,
# today's default 1000). The release's evaluation share is the "Release scale" section's
# (bench_scale.sh), quoted by reference, not by value.
#
# Each run is kept in $WORK/<collection>-s<seed>-m<m>/ (a .done file beside it: not rerun) and
# each collection's table in $WORK/<collection>.json; the section is written from every such
# file, so collections can be run one invocation at a time.
#
# Usage: bench_eval_cadence.sh [BIN_DIR]     (default: <repo>/build/bin)
# Environment: COLLECTIONS (default: the four layout collections; set and empty: only rewrite
#   the section), SEEDS (default "0 1"), MAX_CONFIGS (default "1000 250"; the first is the
#   reference), CADENCES (default 1,2,3,5,10), TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench),
#   TPUPERF_BENCH_RAW (default $TPUPERF_BENCH_DIR/raw), RESULTS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
GEN=${TPUPERF_BENCH_RAW:-$CACHE/raw}
WORK=$CACHE/eval-cadence
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
COLLECTIONS=${COLLECTIONS-layout:xla:random layout:xla:default layout:nlp:random layout:nlp:default}
CADENCES=${CADENCES:-1,2,3,5,10}
SEEDS=${SEEDS:-0 1}
MAX_CONFIGS=${MAX_CONFIGS:-1000 250}
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { mpirun --bind-to none --oversubscribe -np 2 "$@" < /dev/null; }
load1() { cut -d' ' -f1 /proc/loadavg; }
stamp() { date -u '+%Y-%m-%d %H:%M UTC'; }
mkdir -p "$WORK"

source "$HERE/bench_tree.sh"
ensure_bench_tree "$BIN" "$GEN"

if [ -n "$COLLECTIONS" ] && [ ! -f "$WORK/processed/manifest.yaml" ]; then
  echo "== preprocessing the bench tree with the defaults"
  mpi "$BIN/tpuperf-preprocess" --config "$SRC/configs/tpugraphs.yaml" --set data.raw_dir="$GEN/npz" --set data.processed_dir="$WORK/processed" \
    > "$WORK/preprocess.log" 2>&1 || { tail -20 "$WORK/preprocess.log"; exit 1; }
fi

# One run per (collection, seed, eval_max_configs), kept in $WORK/<collection>-s<seed>-m<max>/;
# a run whose .done file exists is not rerun, so an interrupted bench resumes.
run_one() {  # collection seed max_configs
  local coll=$1 seed=$2 m=$3 out=$WORK/${1//:/_}-s$2-m$3
  [ -f "$out.done" ] && return 0
  echo "== $coll seed $seed eval_max_configs $m: the defaults, 10 epochs, scored after every epoch (load $(load1))"
  local l0 t0; l0=$(load1); t0=$(date +%s)
  mpi "$BIN/tpuperf-train" --config "$SRC/configs/tpugraphs.yaml" --fresh --set data.processed_dir="$WORK/processed" --set output.dir="$out" \
    --set "data.collections=[$coll]" --set train.epochs=10 --set train.eval_every=1 --set train.seed="$seed" \
    --set train.eval_max_configs="$m" --train-only > "$out.log" 2>&1 || { tail -20 "$out.log"; exit 1; }
  echo "$(stamp) $l0 $(load1) $(( $(date +%s) - t0 ))" > "$out.done"
}

for coll in $COLLECTIONS; do
  name=${coll//:/_}
  for seed in $SEEDS; do for m in $MAX_CONFIGS; do run_one "$coll" "$seed" "$m"; done; done
  ref=${MAX_CONFIGS%% *}
  mains=(); for seed in $SEEDS; do mains+=("$WORK/$name-s$seed-m$ref/metrics.csv"); done
  for m in $MAX_CONFIGS; do
    sels=(); for seed in $SEEDS; do sels+=("$WORK/$name-s$seed-m$m/metrics.csv"); done
    $PY "$HERE/eval_cadence.py" "${mains[@]}" --select-by "${sels[@]}" --cadences "$CADENCES" --json "$WORK/$name-m$m.part"
  done
  $PY - "$WORK" "$name" "$coll" "$SEEDS" "$MAX_CONFIGS" <<'PY'
import json, os, sys
work, name, coll, seeds, maxes = sys.argv[1:]
runs = [open(os.path.join(work, f"{name}-s{s}-m{m}.done")).read().split() for s in seeds.split() for m in maxes.split()]
t = {"seeds": seeds.split(), "when": " ".join(runs[-1][:3]), "wall_s": sum(int(r[5]) for r in runs),
     "load": [min(float(r[3]) for r in runs), max(float(r[4]) for r in runs)], "by_max": {}}
for m in maxes.split():
    p = os.path.join(work, f"{name}-m{m}.part")
    t["by_max"][m] = json.load(open(p))[coll]
    os.remove(p)
json.dump({coll: t}, open(os.path.join(work, f"{name}.json"), "w"), indent=1)
PY
done

PYTHONPATH="$HERE" $PY - "$WORK" "$RESULTS" "$GEN" <<'PY'
import glob, json, os, sys
from results_md import machine, replace_section
work, results, gen = sys.argv[1:]
tables = {}
for p in sorted(glob.glob(os.path.join(work, "*.json"))):
    tables.update(json.load(open(p)))
L = ["## Evaluation cadence", "", "Written by `tests/bench/bench_eval_cadence.sh`: what scoring the held-out and valid graphs "
     "every k-th epoch (`train.eval_every` = k, and always the last) and fewer configs a layout graph "
     "(`train.eval_max_configs` = m) would keep. Training does not depend on scoring, so per collection, "
     "seed and m one run scored after every epoch tells what any k keeps; runs of the same seed train "
     "the same (checked: every epoch's train loss equal), so epochs kept by an m-run's scores are "
     "read off the reference run (m = 1000, the schema's default). Data: the bench tree "
     f"(`tpuperf-synth --scale bench --seed 0`, {gen}) preprocessed with the defaults (5 folds); "
     "`mpirun -np 2 tpuperf-train` with configs/tpugraphs.yaml's model and training keys, 10 epochs. "
     "cv: the mean over seeds and folds of the kept epoch's out-of-fold score as the m-run scored it "
     "(what the trainer keeps by and reports; a maximum over fewer epochs is less optimistic); oof and "
     "valid: the kept epochs' scores at m = 1000 (valid is not used to choose: the unbiased one). "
     "Evaluation cost: scored epochs x m against 10 x 1000 (every epoch, the schema's defaults) (layout graphs of the release hold "
     "thousands of configs, so it scales so there).", "", f"Machine: {machine()}.", ""]
for coll, t in tables.items():
    L += [f"**{coll}** (seeds {', '.join(t['seeds'])}; 5 folds, 10 epochs; last run {t['when']}, "
          f"{t['wall_s']} s of runs, load {t['load'][0]:.2f} to {t['load'][1]:.2f}):", "",
          "| m | k | epochs scored | evaluation cost | cv | oof at 1000 | valid at 1000 | valid − (1000, 1) | kept epochs |",
          "|---|---|---|---|---|---|---|---|---|"]
    ref = next(iter(t["by_max"].values()))["rows"][0]
    for m, tm in t["by_max"].items():
        for r in tm["rows"]:
            valid = "n/a" if r["valid"] is None else f"{r['valid']:.4f} | {r['valid'] - ref['valid']:+.4f}"
            L.append(f"| {m} | {r['k']} | {r['scored']} | {r['scored'] * int(m) / 10000:.2f} | {r['cv']:.4f} | "
                     f"{r['oof']:.4f} | {valid} | {' '.join(map(str, r['kept']))} |")
    L.append("")
replace_section(results, "Evaluation cadence", "\n".join(L))
print("\n".join(L))
PY
echo "wrote $RESULTS"
