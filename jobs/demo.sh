#!/usr/bin/env bash
# The demo: on a fresh Debian machine, set up and build, generate a small TpuGraphs-format
# tree, preprocess it, train k fold models per collection with mpirun on the local cores,
# ensemble them into a submission and score it against the generated truth.
#   jobs/demo.sh [--np N] [--scale tiny|small]
set -euo pipefail
cd "$(dirname "$0")/.."
source jobs/lib.sh

np=2
scale=small
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --scale) scale=$2; shift ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

bash jobs/setup.sh
BIN=${TPUPERF_BUILD_DIR:-build}/bin
OUT=out/demo
start=$(date +%s)

if [ ! -f "$OUT/raw/.complete-$scale" ]; then
  echo "== generating a $scale TpuGraphs-format tree in $OUT/raw"
  rm -rf "$OUT/raw"
  "$BIN/tpuperf-synth" --out "$OUT/raw" --scale "$scale" --seed 0
  touch "$OUT/raw/.complete-$scale"
fi

echo "== preprocessing with $np ranks"
rc=0
mpirun_local "$np" "$BIN/tpuperf-preprocess" --config configs/demo.yaml || rc=$?
# Exit code 3: finished, some files rejected (listed in rejected.txt).
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || exit "$rc"

echo "== training with $np ranks (threads per rank: $(threads_per_rank "$np"))"
mpirun_local "$np" "$BIN/tpuperf-train" --config configs/demo.yaml --fresh \
  --set train.threads_per_rank="$(threads_per_rank "$np")"

echo "== scoring the submission against the generated truth"
"$BIN/tpuperf-score" --submission "$OUT/run/submission.csv" --truth "$OUT/raw"

echo
echo "== demo finished in $(( $(date +%s) - start )) s"
echo "   raw data:       $OUT/raw/npz (hidden test runtimes in $OUT/raw/truth)"
echo "   processed data: $OUT/processed (manifest.yaml, shards, rejected.txt)"
echo "   submission:     $OUT/run/submission.csv"
echo "   report:         $OUT/run/report.md (learning curves: $OUT/run/*.svg)"
echo "   metrics:        $OUT/run/metrics.csv"
