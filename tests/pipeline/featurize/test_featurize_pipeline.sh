#!/usr/bin/env bash
# The whole pipeline on real tuning records: the 15 kernels of the real tile record are
# split at the wire level into three TuningData files (9 train, 3 valid, 3 test kernels),
# each featurized with tpuperf-featurize --split, the layout record joins as the one train
# graph of layout:xla:random; then tpuperf-preprocess, tpuperf-train (1 fold, a tiny
# model) and tpuperf-score against the featurized test files (they keep their runtimes).
# Passing needs every stage to succeed, the processed manifest to hold exactly the
# featurized graphs, a submission whose rows are the 3 test kernels, each with 5 distinct
# configs of that kernel, and a tile score above random order. The scores are printed; the
# default-first baseline is not asserted: 9 small train kernels teach a model little.
# Usage: test_featurize_pipeline.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
REAL=$SRC/tests/data/real
source "$SRC/tests/tiny_train.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
step() { echo; echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }

step "split the tile record by kernel: train 9, valid 3, test 3"
# Kernels in record order; the test and valid ones have 10-61 configs, so that the top-5
# score means something. A TuningData is its kernels' fields 1 one after another.
SRC=$SRC $PY - "$REAL/op_tuning_data.pb" "$work" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["SRC"], "tests", "pipeline", "featurize"))
import reference_featurize as ref
from reencode_records import encode_field
src, work = sys.argv[1], sys.argv[2]
kernels = [encode_field(n, wt, v) for n, wt, v in ref.iter_fields(memoryview(open(src, "rb").read()))]
assert len(kernels) == 15
splits = {"valid": [2, 3, 6], "test": [0, 5, 7]}
splits["train"] = [k for k in range(15) if k not in splits["valid"] + splits["test"]]
for split, ks in splits.items():
    with open(f"{work}/{split}.pb", "wb") as f:
        f.write(b"".join(kernels[k] for k in ks))
    print(split, ks)
PY

step "featurize"
for split in train valid test; do
  "$BIN/tpuperf-featurize" --out "$work/raw" --split "$split" --prefix op_tuning_data "$work/$split.pb" \
    2> "$work/feat_$split.log" || { rc=$?; cat "$work/feat_$split.log"; fail "featurize $split: exit $rc"; }
done
"$BIN/tpuperf-featurize" --out "$work/raw" --split train --source xla --search random \
  "$REAL/module_tuning_data_layout.pb" 2> "$work/feat_layout.log" || { cat "$work/feat_layout.log"; fail "featurize layout"; }
# Preprocessing wants every split directory of a collection; the one layout record is a
# train graph only.
mkdir -p "$work/raw/npz/layout/xla/random/valid" "$work/raw/npz/layout/xla/random/test"
for split in train:9 valid:3 test:3; do
  n=$(find "$work/raw/npz/tile/xla/${split%:*}" -name '*.npz' | wc -l)
  [ "$n" -eq "${split#*:}" ] || fail "${split%:*}: $n tile files"
done

step "preprocess"
cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $work/raw/npz
  processed_dir: $work/processed
  collections: [tile:xla, layout:xla:random]
preprocess:
  folds: 1
output:
  dir: $work/run
$(tiny_train_yaml 20 32 2 1)
YAML
mpirun --bind-to none -np 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 \
  || { rc=$?; cat "$work/pre.log"; fail "preprocess: exit $rc"; }
$PY - "$work/processed/manifest.yaml" <<'PY'
import collections, sys, yaml
m = yaml.safe_load(open(sys.argv[1]))
count = collections.Counter((g["collection"], g["split"]) for g in m["graphs"])
print(dict(count))
want = {("tile:xla", "train"): 9, ("tile:xla", "valid"): 3, ("tile:xla", "test"): 3, ("layout:xla:random", "train"): 1}
assert dict(count) == want, dict(count)
layout = next(g for g in m["graphs"] if g["collection"] == "layout:xla:random")
print("layout graph after pruning:", {k: layout[k] for k in layout if k.startswith(("num_", "nodes", "edges", "configs"))})
# The featurized module as it came: 3,163 nodes, 5,112 edges, 112 configs before dedup.
assert (layout["nodes_before"], layout["edges_before"], layout["configs_before"]) == (3163, 5112, 112), layout
PY

step "train and predict"
mpirun --bind-to none -np 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" > "$work/train.log" 2>&1 \
  || { rc=$?; tail -40 "$work/train.log"; fail "train: exit $rc"; }
grep -E "layout:xla:random|valid" "$work/train.log" | tail -4 || true
[ -s "$work/run/submission.csv" ] || fail "no submission.csv"

step "the submission covers the test kernels; their scores"
"$BIN/tpuperf-score" --submission "$work/run/submission.csv" --truth "$work/raw/npz" --json > "$work/score.json"
$PY - "$work" <<'PY'
import csv, glob, json, os, sys
import numpy as np
work = sys.argv[1]
rows = {r["ID"]: [int(x) for x in r["TopConfigs"].split(";")] for r in csv.DictReader(open(f"{work}/run/submission.csv"))}
tests = {"tile:xla:" + os.path.basename(p)[:-4]: p for p in glob.glob(f"{work}/raw/npz/tile/xla/test/*.npz")}
assert set(rows) == set(tests), (sorted(rows), sorted(tests))
for gid, p in tests.items():
    c = len(np.load(p)["config_runtime"])
    top = rows[gid]
    assert len(top) >= 5 and len(set(top)) == len(top) and all(0 <= x < c for x in top), (gid, top, c)
s = json.load(open(f"{work}/score.json"))
for coll in s["collections"]:
    print(json.dumps(coll))
tile = next(c for c in s["collections"] if c["collection"] == "tile:xla")
assert tile["graphs"] == 3 and tile["score"] > tile["random_baseline"], tile
# The first pick was decided on the 3 real valid kernels, and the submission follows it.
pick = json.load(open(f"{work}/run/first_pick.json"))["tile:xla"]
assert pick["setting"] == "auto" and pick["valid_graphs"] == 3, pick
assert pick["default_first"] == (pick["valid_top1_default"] < pick["valid_top1_model"]), pick
if pick["default_first"]:
    assert all(top[0] == 0 for top in rows.values()), (pick, rows)
print("first pick:", pick)
PY
echo "PASS test_featurize_pipeline"
