#!/usr/bin/env bash
# The Python package tests' shared run (ctest fixture integration.python_tiny_run): a
# generated tiny tree, preprocessed into 2 folds and trained on every collection with the
# tiny models of tests/tiny_train.sh, as tests/trainer/rank/test_rank.sh trains its own.
# Writes OUT/gen (with the generator's truth/), OUT/processed, OUT/run.
# Usage: tiny_run.sh BIN_DIR SRC_DIR OUT
set -euo pipefail
BIN=$1
SRC=$2
OUT=$3
source "$SRC/tests/tiny_train.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$OUT"
mkdir -p "$OUT"
"$BIN/tpuperf-synth" --out "$OUT/gen" --scale tiny --seed 11 > "$OUT/synth.log" 2>&1
cat > "$OUT/cfg.yaml" <<YAML
data:
  raw_dir: $OUT/gen/npz
  processed_dir: $OUT/processed
preprocess:
  folds: 2
output:
  dir: $OUT/run
$(tiny_train_yaml 2 16 1 1)
YAML
mpirun --bind-to none -np 2 "$BIN/tpuperf-preprocess" --config "$OUT/cfg.yaml" > "$OUT/preprocess.log" 2>&1 \
  || { tail "$OUT/preprocess.log"; exit 1; }
mpirun --bind-to none -np 2 "$BIN/tpuperf-train" --config "$OUT/cfg.yaml" > "$OUT/train.log" 2>&1 \
  || { tail "$OUT/train.log"; exit 1; }
[ -s "$OUT/run/submission.csv" ] && [ -s "$OUT/run/metrics.csv" ] || { echo "the run wrote no submission or metrics"; exit 1; }
echo "trained $OUT/run: $(ls "$OUT/run/checkpoints" | wc -l) collections"
