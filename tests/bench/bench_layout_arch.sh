#!/usr/bin/env bash
# Layout architectures side by side: prints figures and writes the "Layout architectures"
# section of tests/bench/RESULTS.md. Not a test; not part of ctest.
#
# The bench tree's four layout collections (tpuperf-synth --scale bench --seed 0, shared
# with the other benches), preprocessed once with 2 folds, then for each architecture the
# same tpuperf-train run on 2 ranks (the training bench's quality settings: hidden 32,
# 2 layers, 4 attention heads, 8 epochs of 20 steps, seed 0) with only model.layout.arch
# changed. Scores: the submission's test Kendall tau by tpuperf-score, and the run's
# validation figures (fold ensemble, cv = mean out-of-fold score of the best epochs).
#
# Usage: bench_layout_arch.sh [BIN_DIR]     (default: <repo>/build/bin)
# Environment: ARCHS (default "sage sage_shape_context": the registered layout models);
#   TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench); TPUPERF_BENCH_RAW (default
#   $TPUPERF_BENCH_DIR/raw); RESULTS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
GEN=${TPUPERF_BENCH_RAW:-$CACHE/raw}
WORK=$CACHE/layout-arch
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
ARCHS=${ARCHS:-sage sage_shape_context}
COLLS="[layout:xla:random,layout:xla:default,layout:nlp:random,layout:nlp:default]"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { local n=$1; shift; mpirun --bind-to none --oversubscribe -np "$n" "$@"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
mkdir -p "$WORK"

source "$HERE/bench_tree.sh"
ensure_bench_tree "$BIN" "$GEN"
# tpuperf-score scores every graph of its truth tree: give it the layout part alone.
mkdir -p "$WORK/truth"
ln -sfn "$GEN/truth/layout" "$WORK/truth/layout"

cat > "$WORK/preprocess.yaml" <<YAML
data:
  raw_dir: $GEN/npz
  processed_dir: $WORK/processed
preprocess:
  folds: 2
  seed: 0
  shard_mb: 64
YAML
echo "== preprocessing the layout collections (2 folds)"
mpi 2 "$BIN/tpuperf-preprocess" --config "$WORK/preprocess.yaml" --set "data.collections=$COLLS" \
  > "$WORK/preprocess.log" 2>&1 || { tail -20 "$WORK/preprocess.log"; exit 1; }

for arch in $ARCHS; do
  out=$WORK/$arch
  mkdir -p "$out"
  # The training bench's quality settings (quality_settings.yaml), the architecture by --set.
  { echo "data:"; echo "  processed_dir: $WORK/processed"
    grep -v '^#' "$HERE/quality_settings.yaml"
    echo "output:"; echo "  dir: $out/run"; } > "$out/train.yaml"
  echo "== $arch"
  l0=$(load1); t0=$(date +%s.%N)
  mpi 2 "$BIN/tpuperf-train" --config "$out/train.yaml" --fresh --set "data.collections=$COLLS" --set "model.layout.arch=$arch" \
    > "$out/train.log" 2>&1 || { tail -20 "$out/train.log"; exit 1; }
  echo "$(echo "$(date +%s.%N) - $t0" | bc) $l0 $(load1)" > "$out/time.txt"
  "$BIN/tpuperf-score" --submission "$out/run/submission.csv" --truth "$WORK/truth" --json > "$out/score.json"
done

python3 - "$WORK" "$RESULTS" "$HERE" "$(date -u '+%Y-%m-%d %H:%M UTC')" $ARCHS <<'PY'
import json, re, sys
work, results, here, when, *archs = sys.argv[1:]
sys.path.insert(0, here)
from results_md import machine, replace_section

def run_of(arch):
    wall, l0, l1 = open(f"{work}/{arch}/time.txt").read().split()
    score = json.load(open(f"{work}/{arch}/score.json"))
    test = {c["collection"]: c["score"] for c in score["collections"]}
    valid = {}
    for line in open(f"{work}/{arch}/train.log"):
        m = re.search(r"\] (\S+): valid score ensemble (\S+) .*cv (\S+)", line)
        if m: valid[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return dict(wall=float(wall), load=(l0, l1), test=test, overall=score["overall"]["score"], valid=valid)

runs = {a: run_of(a) for a in archs}
colls = sorted(runs[archs[0]]["test"])
lines = ["## Layout architectures", "",
         f"Run {when} by `tests/bench/bench_layout_arch.sh` (this section is written by the script).", "",
         f"Machine: {machine()}; other jobs may share it (load per run below).", "",
         "Data: the bench tree (`tpuperf-synth --scale bench --seed 0`), its four layout collections, "
         "`preprocess.folds=2`. Each run: `mpirun -np 2 tpuperf-train` with the training bench's quality "
         "settings (hidden 32, 2 layers, 4 attention heads, dropout 0.1 for every collection, 8 epochs of "
         "20 steps of 8 graphs, slate 16, lr 0.003, seed 0), only `model.layout.arch` differing. Test: "
         "Kendall tau of the submission by tpuperf-score (2 test graphs per collection: noisy); valid: "
         "the fold ensemble on the valid split; cv: the mean out-of-fold score of the best epochs (the "
         "figure least exposed to the few test graphs).", "",
         "| collection | " + " | ".join(f"{a} test / valid / cv" for a in archs) + " |",
         "|---|" + "---|" * len(archs)]
for c in colls:
    cells = []
    for a in archs:
        v = runs[a]["valid"].get(c, (float("nan"), float("nan")))
        cells.append(f"{runs[a]['test'][c]:.4f} / {v[0]:.4f} / {v[1]:.4f}")
    lines.append(f"| {c} | " + " | ".join(cells) + " |")
lines.append("| overall test | " + " | ".join(f"{runs[a]['overall']:.4f}" for a in archs) + " |")
lines.append("| tpuperf-train wall s (load) | " + " | ".join(
    f"{runs[a]['wall']:.0f} ({runs[a]['load'][0]} → {runs[a]['load'][1]})" for a in archs) + " |")
lines += ["", "sage (trainer/models/layout_sage.cpp) pools each config's node states per graph by mean "
          "and max over all nodes. sage_shape_context, the default (trainer/models/layout_shape_context.cpp), "
          "also pools the graph's configurable nodes alone (their share of an all-node mean shrinks as "
          "graphs grow), embeds the layouts' shape features (minor dims, padding, waste: "
          "trainer/models/shape_features.h) with their values, and adds a wide term summed over the "
          "configurable nodes whose per-node weights come from the node's config-free state after the "
          "SAGE blocks (its neighbourhood). Every run here has the same 8 x 20 steps, so the differences "
          "are the architectures'.", ""]
replace_section(results, "Layout architectures", "\n".join(lines))
print("\n".join(lines))
print(f"wrote {results}")
PY
