#!/usr/bin/env bash
# Evaluation cadence (issue #46): what scoring the held-out and valid graphs every k-th
# epoch instead of every epoch (train.eval_every = k) would cost in model selection, at the
# defaults, on the bench tree. Prints the figures and writes the "Evaluation cadence"
# section of tests/bench/RESULTS.md. Not a test; not part of ctest.
#
# Per collection: one `mpirun -np 2 tpuperf-train --fresh` of the schema's defaults (the
# settings configs/tpugraphs.yaml trains; 10 epochs) on the bench tree (tpuperf-synth
# --scale bench --seed 0) preprocessed with the defaults (5 folds), scored after every
# epoch (train.eval_every=1). Training does not depend on scoring, so eval_cadence.py reads
# from its metrics.csv what any cadence would have kept: per k the cv (mean over folds of the
# kept epoch's out-of-fold score, what the trainer selects by) and the kept epochs' valid
# score. The release's evaluation share at each cadence is the "Release scale" section's
# (bench_scale.sh), which this section quotes by reference, not by value.
#
# Each collection's run is kept in $WORK/<collection>/ and its table in
# $WORK/<collection>.json; the section is written from every such file, so collections can
# be run one invocation at a time.
#
# Usage: bench_eval_cadence.sh [BIN_DIR]     (default: <repo>/build/bin)
# Environment: COLLECTIONS (default: the four layout collections; set and empty: only rewrite
#   the section), CADENCES (default 1,2,3,5,10), TPUPERF_BENCH_DIR (default
#   /tmp/tpuperf-bench), TPUPERF_BENCH_RAW (default $TPUPERF_BENCH_DIR/raw), RESULTS.
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

for coll in $COLLECTIONS; do
  name=${coll//:/_}
  out=$WORK/$name
  echo "== $coll: the defaults, 10 epochs, scored after every epoch (load $(load1))"
  l0=$(load1); t0=$(date +%s)
  mpi "$BIN/tpuperf-train" --config "$SRC/configs/tpugraphs.yaml" --fresh --set data.processed_dir="$WORK/processed" --set output.dir="$out" \
    --set "data.collections=[$coll]" --set train.epochs=10 --set train.eval_every=1 --train-only \
    > "$WORK/$name.log" 2>&1 || { tail -20 "$WORK/$name.log"; exit 1; }
  $PY "$HERE/eval_cadence.py" "$out/metrics.csv" --cadences "$CADENCES" --json "$WORK/$name.json"
  $PY - "$WORK/$name.json" "$(stamp)" "$l0" "$(load1)" "$(( $(date +%s) - t0 ))" <<'PY'
import json, sys
p, when, l0, l1, wall = sys.argv[1:]
t = json.load(open(p))
for v in t.values():
    v.update(when=when, load=[float(l0), float(l1)], wall_s=int(wall))
json.dump(t, open(p, "w"), indent=1)
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
     "every k-th epoch (`train.eval_every` = k, and always the last) would keep, read from one run "
     "per collection scored after every epoch (training does not depend on scoring). Data: the bench "
     f"tree (`tpuperf-synth --scale bench --seed 0`, {gen}) preprocessed with the defaults (5 folds); "
     "`mpirun -np 2 tpuperf-train` with the schema's defaults (configs/tpugraphs.yaml's model and "
     "training keys), 10 epochs. cv: the mean over folds of the kept epoch's out-of-fold score "
     "(what the trainer keeps by; a maximum over fewer epochs is less optimistic, so its drop "
     "overstates the loss); valid: the kept epochs' mean valid score (not used to choose). What "
     "each cadence saves at the release: the 'Release scale' section's evaluation share, which "
     "falls about k-fold with the scored epochs.", "", f"Machine: {machine()}.", ""]
for coll, t in tables.items():
    L += [f"**{coll}** ({t['folds']} folds, {t['epochs']} epochs; run {t['when']}, {t['wall_s']} s, "
          f"load {t['load'][0]:.2f} → {t['load'][1]:.2f}):", "",
          "| k (train.eval_every) | epochs scored | cv | cv(1) − cv(k) | valid of the kept epochs | kept epoch per fold |",
          "|---|---|---|---|---|---|"]
    for r in t["rows"]:
        valid = "n/a" if r["valid"] is None else f"{r['valid']:.4f}"
        L.append(f"| {r['k']} | {r['scored']} | {r['cv']:.4f} | {r['cv_drop']:+.4f} | {valid} | "
                 f"{', '.join(map(str, r['kept']))} |")
    L.append("")
replace_section(results, "Evaluation cadence", "\n".join(L))
print("\n".join(L))
PY
echo "wrote $RESULTS"
