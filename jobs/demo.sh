#!/usr/bin/env bash
# The demo: on a fresh Debian machine, set up and build the four binaries it runs, generate
# a small TpuGraphs-format tree, preprocess it, train k fold models per collection with
# mpirun on the local cores, ensemble them into a submission and score it against the
# generated truth.
#   jobs/demo.sh [--np N] [--scale tiny|small]
# With TPUPERF_BIN set, the binaries there are used and the build is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bin_given=${TPUPERF_BIN:+yes}
source jobs/lib.sh

np=2
scale=small
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --scale) scale=$2; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

# Only what the demo runs (the tests are jobs/test.sh's, which builds everything).
DEMO_TARGETS="tpuperf-synth tpuperf-preprocess tpuperf-train tpuperf-score"
if [ -n "$bin_given" ]; then bash jobs/setup.sh --no-build; else bash jobs/setup.sh --targets "$DEMO_TARGETS"; fi
OUT=out/demo
start=$(date +%s)

if [ ! -f "$OUT/raw/.complete-$scale" ]; then
  echo "== generating a $scale TpuGraphs-format tree in $OUT/raw"
  rm -rf "$OUT/raw"
  "$TPUPERF_BIN/tpuperf-synth" --out "$OUT/raw" --scale "$scale" --seed 0
  touch "$OUT/raw/.complete-$scale"
fi

# Preprocessing, then training with the ensemble (prints its "== ..." headers).
bash jobs/run.sh --config configs/demo.yaml --np "$np" --stage all --fresh

echo "== scoring the submission against the generated truth"
"$TPUPERF_BIN/tpuperf-score" --submission "$OUT/run/submission.csv" --truth "$OUT/raw"

echo
echo "== demo finished in $(( $(date +%s) - start )) s"
echo "   raw data:       $OUT/raw/npz (hidden test runtimes in $OUT/raw/truth)"
echo "   processed data: $OUT/processed (manifest.yaml, shards, rejected.txt)"
echo "   submission:     $OUT/run/submission.csv"
echo "   report:         $OUT/run/report.md (learning curves: $OUT/run/*.svg)"
echo "   metrics:        $OUT/run/metrics.csv"
