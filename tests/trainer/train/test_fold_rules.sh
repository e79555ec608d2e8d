#!/usr/bin/env bash
# Folds on data not shaped like the generator's: a tree whose train names all start with
# the same word (one model family, as a user's own tuning dumps often are) preprocesses
# with preprocess.folds=5 into 5 non-empty folds (graphs dealt alone, said once), trains
# on 2 ranks and writes a submission that scores; fold_by=family refuses such a tree at
# preprocessing, naming the way out; a collection with a single train graph is refused by
# tpuperf-train in one line before any rank starts work.
# Usage: test_fold_rules.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
source "$SRC/tests/tiny_train.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { local np=$1; shift; mpirun --bind-to none -np "$np" "$@"; }
step() { echo; echo "== $*"; }

"$BIN/tpuperf-synth" --out "$work/gen" --scale tiny --seed 7 >/dev/null 2>&1
# Two collections are enough here (tpuperf-score wants every truth graph predicted).
rm -rf "$work/gen/npz/layout/nlp" "$work/gen/npz/layout/xla/default" "$work/gen/truth/layout/nlp" \
  "$work/gen/truth/layout/xla/default"
# Every train and valid file renamed to one family: dump_<n>.
$PY - "$work/gen/npz" <<'PY'
import os, sys
root = sys.argv[1]
for d, _, files in os.walk(root):
    if os.path.basename(d) not in ("train", "valid"):
        continue
    for i, f in enumerate(sorted(files)):
        os.rename(os.path.join(d, f), os.path.join(d, f"dump_{i:03d}.npz"))
PY
cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $work/gen/npz
  processed_dir: $work/processed
  collections: [tile:xla, layout:xla:random]
preprocess:
  folds: 5
output:
  dir: $work/run
$(tiny_train_yaml 2 16 1 1)
YAML

step "one family, 5 folds: graphs are dealt alone and every fold holds graphs"
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 || { tail -30 "$work/pre.log"; exit 1; }
grep "folds assign graphs, not families" "$work/pre.log"
[ "$(grep -c "tile:xla: 1 model family for 5 folds" "$work/pre.log")" -eq 1 ] || { echo "the fallback was not said exactly once"; exit 1; }
$PY - "$work/processed/manifest.yaml" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for c in ("tile:xla", "layout:xla:random"):
    folds = sorted({g["fold"] for g in m["graphs"] if g["collection"] == c and g["split"] == "train"})
    n = sum(1 for g in m["graphs"] if g["collection"] == c and g["split"] == "train")
    print(c, n, "train graphs in folds", folds)
    assert folds == list(range(min(5, n))), folds
PY

step "train 5 folds on 2 ranks, submission scores"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" > "$work/train.log" 2>&1 || { tail -30 "$work/train.log"; exit 1; }
"$BIN/tpuperf-score" --submission "$work/run/submission.csv" --truth "$work/gen" > "$work/score.txt" 2>&1 \
  || { cat "$work/score.txt"; exit 1; }
grep -E "^(tile:xla|layout:xla:random|overall)" "$work/score.txt"

step "fold_by=family refuses a tree whose families cannot fill the folds"
set +e
mpi 1 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set preprocess.fold_by=family \
  --set data.processed_dir="$work/processed_family" > "$work/family.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "1 model families cannot fill 5 folds" "$work/family.log" \
  || { tail -5 "$work/family.log"; echo "expected a refusal naming the counts (rc $rc)"; exit 1; }
grep "error" "$work/family.log" | head -2

step "a collection with one train graph is refused by tpuperf-train in one line"
mkdir -p "$work/one/tile/xla"
cp -r "$work/gen/npz/tile/xla/test" "$work/gen/npz/tile/xla/valid" "$work/one/tile/xla/"
mkdir -p "$work/one/tile/xla/train"
cp "$(ls "$work/gen/npz/tile/xla/train/"*.npz | head -1)" "$work/one/tile/xla/train/"
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.raw_dir="$work/one" \
  --set data.processed_dir="$work/processed_one" --set data.collections=[tile:xla] > "$work/pre_one.log" 2>&1 \
  || { tail -20 "$work/pre_one.log"; exit 1; }
set +e
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --set data.processed_dir="$work/processed_one" \
  --set data.collections=[tile:xla] --set output.dir="$work/run_one" > "$work/train_one.log" 2>&1
rc=$?
set -e
cat "$work/train_one.log" | grep -v "^\[" || true
[ "$rc" -ne 0 ] || { echo "training one graph in 5 folds was not refused"; exit 1; }
[ "$(grep -c "error" "$work/train_one.log")" -eq 1 ] \
  && grep -q "tile:xla has 1 train graph(s) for 5 folds" "$work/train_one.log" \
  || { cat "$work/train_one.log"; echo "expected exactly one error line naming the collection"; exit 1; }
! grep -q "epoch" "$work/train_one.log" || { echo "training started before the refusal"; exit 1; }
echo "PASS test_fold_rules"
