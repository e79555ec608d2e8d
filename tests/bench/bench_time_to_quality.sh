#!/usr/bin/env bash
# Time to quality (issue #20 step 3): for each collection of the bench tree, the project's
# default settings trained at several step budgets, each budget's held-out scores against
# its training wall time on 2 ranks. Prints the figures and writes the "Time to quality"
# section of tests/bench/RESULTS.md. Not a test; not part of ctest.
#
# Data: the bench tree (tpuperf-synth --scale bench --seed 0, shared with the other
# benches), preprocessed with the schema's defaults (5 folds). Each run: `mpirun -np 2
# tpuperf-train --fresh` with the defaults, the one collection, and the budget as the
# collection's floor on a one-pass epoch, collections.<collection>.train.min_steps_per_epoch
# = B (a bench tree fold's one pass is below every budget here, so each
# epoch trains B steps; 10 epochs). Scores: test (tpuperf-score against the tree's
# truth), valid (the fold ensemble on the valid split) and cv (mean out-of-fold score of
# the best epochs). The
# section names each collection's choice: the cheapest budget whose cv is within 0.005 of
# the best budget's.
#
# Each collection's runs are kept in $WORK/runs-<collection>.txt, and the section is written
# from every such file, so collections can be run (or rerun) one invocation at a time. The
# curves are also drawn in tests/bench/time_to_quality.svg (score against wall time).
#
# Usage: bench_time_to_quality.sh [BIN_DIR]     (default: <repo>/build/bin)
# Environment: COLLECTIONS (default "tile:xla"; any of the five; empty: only rewrite the
#   section from the kept runs), BUDGETS (default
#   "20 40 60 100 150"), TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench), TPUPERF_BENCH_RAW
#   (default $TPUPERF_BENCH_DIR/raw), RESULTS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
GEN=${TPUPERF_BENCH_RAW:-$CACHE/raw}
WORK=$CACHE/time-to-quality
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
COLLECTIONS=${COLLECTIONS-tile:xla}  # set and empty: train nothing, rewrite the section
BUDGETS=${BUDGETS:-20 40 60 100 150}
ALL="[tile:xla,layout:xla:random,layout:xla:default,layout:nlp:random,layout:nlp:default]"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { local n=$1; shift; mpirun --bind-to none --oversubscribe -np "$n" "$@" < /dev/null; }
load1() { cut -d' ' -f1 /proc/loadavg; }
mkdir -p "$WORK"

source "$HERE/bench_tree.sh"
ensure_bench_tree "$BIN" "$GEN"
cat > "$WORK/config.yaml" <<YAML
data:
  raw_dir: $GEN/npz
  processed_dir: $WORK/processed
  collections: $ALL
YAML
echo "== preprocessing the bench tree (the defaults: 5 folds)"
mpi 2 "$BIN/tpuperf-preprocess" --config "$WORK/config.yaml" > "$WORK/preprocess.log" 2>&1 ||
  { tail -20 "$WORK/preprocess.log"; exit 1; }

for coll in $COLLECTIONS; do
  kind=layout
  [[ $coll == tile:* ]] && kind=tile
  # tpuperf-score scores every graph of its truth tree: give it this collection's alone.
  ctag=$(echo "$coll" | tr : _)
  sub=$(echo "$coll" | cut -d: -f2- | tr : /)
  mkdir -p "$WORK/truth-$ctag/$kind/$(dirname "$sub")"
  ln -sfn "$GEN/truth/$kind/$sub" "$WORK/truth-$ctag/$kind/$sub"
  : > "$WORK/runs-$ctag.txt"
  for b in $BUDGETS; do
    out=$WORK/$ctag-$b
    echo "== $coll: $b steps per epoch"
    l0=$(load1); t0=$(date +%s.%N)
    mpi 2 "$BIN/tpuperf-train" --config "$WORK/config.yaml" --fresh --set "data.collections=[$coll]" \
      --set "collections.$coll.train.min_steps_per_epoch=$b" --set "output.dir=$out" > "$out.log" 2>&1 ||
      { tail -20 "$out.log"; exit 1; }
    wall=$(echo "$(date +%s.%N) - $t0" | bc)
    "$BIN/tpuperf-score" --submission "$out/submission.csv" --truth "$WORK/truth-$ctag" --json > "$out.score.json"
    echo "$coll $b $wall $l0 $(load1) $out" >> "$WORK/runs-$ctag.txt"
  done
done

python3 - "$WORK" "$RESULTS" "$HERE" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$("$BIN/tpuperf-train" --help-config)" <<'PY'
import csv, glob, json, math, os, re, sys, time
work, results, here, when, help_config = sys.argv[1:]
sys.path.insert(0, here)
from results_md import collection_floor, machine, replace_section, schema_default

def default(key):
    return schema_default(help_config, key)

def floor(coll):
    return collection_floor(help_config, coll)

CV_TOLERANCE = 0.005  # about the cv's run-to-run spread (a seed-1 tile run: +0.003)

def utc(t):
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))

def steps_seconds(run_dir, coll):
    """Seconds in the training steps, summed over the folds (metrics.csv elapsed_s)."""
    total = 0.0
    for r in csv.DictReader(open(f"{run_dir}/metrics.csv")):
        if r["collection"] == coll and r["split"] == "train":
            total += float(r["elapsed_s"])
    return total

def run_arch(run_dir, coll):
    """The model the run trained for the collection's kind (its saved effective config)."""
    kind = "tile" if coll.startswith("tile") else "layout"
    text = open(f"{run_dir}/train_config.yaml").read()
    m = re.search(r"^  %s:\n(?:    .*\n)*?    arch: \"?([a-z_]+)" % kind, text, flags=re.M)
    return m.group(1) if m else "?"

rows = {}
lines_of_runs = [l for f in sorted(glob.glob(f"{work}/runs-*.txt")) for l in open(f)]
finished = []  # when each run ended (its score file's time): the section can be rewritten later
for line in lines_of_runs:
    coll, b, wall, l0, l1, out = line.split()
    finished.append(os.path.getmtime(f"{out}.score.json"))
    score = json.load(open(f"{out}.score.json"))["collections"][0]["score"]
    m = re.search(r"\] %s: valid score ensemble (\S+) .*cv (\S+)" % re.escape(coll), open(f"{out}.log").read())
    rows.setdefault(coll, []).append(dict(b=int(b), wall=float(wall), load=(l0, l1), test=score,
                                          valid=float(m.group(1)), cv=float(m.group(2)),
                                          steps_s=steps_seconds(out, coll), arch=run_arch(out, coll)))


def svg(rows):
    """Score (test solid, cv dashed) against tpuperf-train wall seconds, one colour per
    collection: a plain SVG, no plotting library needed."""
    W, H, L, B = 640, 360, 60, 40
    xs = [r["wall"] for rs in rows.values() for r in rs]
    ys = [r[k] for rs in rows.values() for r in rs for k in ("test", "cv")]
    # The y range: the scores' tenths (tile's curve lives in 0.9-1.0, layout's lower).
    x1, y0 = max(xs) * 1.05, math.floor(min(ys) * 10) / 10
    y1 = max(y0 + 0.1, math.ceil(max(ys) * 10) / 10)
    X = lambda x: L + (W - L - 20) * x / x1
    Y = lambda y: H - B - (H - B - 20) * (y - y0) / (y1 - y0)
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
           f'font-size="11"><rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{L}" y2="20" stroke="black"/>',
           f'<text x="{(W + L) / 2}" y="{H - 8}" text-anchor="middle">tpuperf-train wall s (2 ranks)</text>',
           f'<text x="14" y="{(H - B) / 2}" transform="rotate(-90 14 {(H - B) / 2})" text-anchor="middle">'
           'score (test solid, cv dashed)</text>']
    for t in range(5):
        y = y0 + (y1 - y0) * t / 4
        out.append(f'<text x="{L - 6}" y="{Y(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
        x = x1 * t / 4
        out.append(f'<text x="{X(x):.1f}" y="{H - B + 14}" text-anchor="middle">{x:.0f}</text>')
    for i, (coll, rs) in enumerate(sorted(rows.items())):
        c = colours[i % len(colours)]
        rs = sorted(rs, key=lambda r: r["wall"])
        for key, dash in (("test", ""), ("cv", ' stroke-dasharray="4 3"')):
            pts = " ".join(f"{X(r['wall']):.1f},{Y(r[key]):.1f}" for r in rs)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for r in rs:
            out.append(f'<circle cx="{X(r["wall"]):.1f}" cy="{Y(r["test"]):.1f}" r="3" fill="{c}"/>'
                       f'<text x="{X(r["wall"]) + 4:.1f}" y="{Y(r["test"]) - 5:.1f}" fill="{c}">{r["b"]}</text>')
        out.append(f'<text x="{L + 10}" y="{32 + 14 * i}" fill="{c}">{coll} (labels: steps per epoch)</text>')
    return "\n".join(out + ["</svg>"]) + "\n"


with open(os.path.join(here, "time_to_quality.svg"), "w") as f:
    f.write(svg(rows))
lines = ["## Time to quality", "",
         f"Runs ended {utc(min(finished))} to {utc(max(finished))}; written {when} by "
         "`tests/bench/bench_time_to_quality.sh` (this section is written by the script).", "",
         f"Machine: {machine()}; other jobs may share it (load per run below).", "",
         "Data: the bench tree (`tpuperf-synth --scale bench --seed 0`), preprocessed with the defaults "
         "(5 folds). Each row: `mpirun --bind-to none -np 2 tpuperf-train --fresh` with the project's "
         "defaults of the time (configs/tpugraphs.yaml, i.e. the schema's) on that collection alone, with the "
         "collection's floor on a one-pass epoch `collections.<collection>.train.min_steps_per_epoch` = "
         "the budget (before 2026-11-28: the same floor as a per-collection list entry; before 2026-11-26 08:29 UTC: the kind's floor "
         "`train.{tile,layout}_min_steps_per_epoch`, the same for a run of one collection): "
         "a bench-tree fold's pass is shorter, so every epoch trains that many steps, 10 epochs, "
         "5 fold models, two at a time (one per rank). Test: tpuperf-score on the test graphs "
         "(tile: 30, layout: 2 per collection); valid: the fold ensemble on the valid split; cv: "
         "the mean out-of-fold score of the best epochs. Wall: the whole tpuperf-train run "
         "(loading, training, per-epoch evaluation, test prediction); steps: the seconds in "
         "training steps summed over the 5 folds (metrics.csv). The curves: "
         "[time_to_quality.svg](time_to_quality.svg).", ""]
for coll, rs in rows.items():
    kind = "tile" if coll.startswith("tile") else "layout"
    archs = sorted({r["arch"] for r in rs})
    lines += [f"**{coll}** (the schema's default floor: {floor(coll)}; "
              f"loss {default(f'train.{kind}_loss')}; the runs trained {', '.join(archs)}, "
              f"the default model now is {default(f'model.{kind}.arch')}):", "",
              "| steps per epoch | test | valid | cv | wall s | steps s (5 folds) | load |",
              "|---|---|---|---|---|---|---|"]
    for r in sorted(rs, key=lambda r: r["b"]):
        lines.append(f"| {r['b']} | {r['test']:.4f} | {r['valid']:.4f} | {r['cv']:.4f} | {r['wall']:.0f} | "
                     f"{r['steps_s']:.0f} | {r['load'][0]} → {r['load'][1]} |")
    # The default the curve chooses: the cheapest budget whose cv (out-of-fold over every
    # train graph: the most graphs of the three scores) is within CV_TOLERANCE of the best.
    best_cv = max(r["cv"] for r in rs)
    chosen = min(r["b"] for r in rs if r["cv"] >= best_cv - CV_TOLERANCE)
    lines += ["", f"The curve's choice, the cheapest budget whose cv is within {CV_TOLERANCE} of the best "
              f"({best_cv:.4f}): **{chosen}** steps per epoch; the default: "
              f"{floor(coll)}.", ""]
replace_section(results, "Time to quality", "\n".join(lines))
print("\n".join(lines))
print(f"wrote {results}")
PY
