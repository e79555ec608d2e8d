#!/usr/bin/env bash
# The stress tree (tpuperf-synth --scale stress-small) end to end: shapes the classic trees
# never have reach every stage. The tree holds every shape stress_plan.h promises (checked
# on the files with numpy); preprocessing on 2 ranks rejects exactly the program without
# configurable nodes, by file, key and reason, and keeps every other graph with its
# counts; tpuperf-inspect validates every file and recomputes the UTF-8-named and the
# 40k-node graphs from their sources; training 5 folds on 2 ranks writes a submission with
# a row per test graph (a full permutation for layout, all configs for a 2-config tile
# graph) that tpuperf-score scores.
# Usage: test_stress.sh BIN_DIR SRC_DIR
# Environment: STRESS_SCALE (default stress-small; tests/bench/bench_stress.sh runs the
#   full stress scale through the same checks).
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
source "$SRC/tests/tiny_train.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { local np=$1; shift; mpirun --bind-to none -np "$np" "$@"; }
step() { echo; echo "== $* ($(date +%T))"; }
fail() { echo "FAIL: $*"; exit 1; }
for b in tpuperf-synth tpuperf-preprocess tpuperf-inspect tpuperf-train tpuperf-score; do
  [ -x "$BIN/$b" ] || fail "missing $BIN/$b"
done

SCALE=${STRESS_SCALE:-stress-small}
step "generate the $SCALE tree"
"$BIN/tpuperf-synth" --out "$work/gen" --scale "$SCALE" --seed 3 --threads 2 > "$work/synth.log" 2>&1 \
  || { cat "$work/synth.log"; fail "tpuperf-synth"; }
grep "done:" "$work/synth.log"

step "the files hold every promised shape"
$PY - "$work/gen" <<'PY'
import glob, os, sys
import numpy as np
root = sys.argv[1]
def files(coll, split):
    return sorted(glob.glob(os.path.join(root, "npz", *coll.split(":"), split, "*.npz")))
def stem(f):
    return os.path.basename(f)[:-4]
def truth(f):
    return np.load(f.replace("/npz/", "/truth/"))["config_runtime"]
seen = set()
def has(name, cond):
    if cond:
        seen.add(name)
for split in ("train", "valid", "test"):
    for f in files("tile:xla", split):
        d = np.load(f)
        n, m, c = d["node_opcode"].shape[0], d["edge_index"].shape[0], d["config_feat"].shape[0]
        s = stem(f)
        s.encode("utf-8")  # a valid UTF-8 name (os.listdir decodes with surrogates otherwise)
        has("tile name without letters", split == "train" and not any(ch.isalpha() for ch in s))
        has("tile name with dots and dashes", "." in s and "-" in s)
        has("tile train name in UTF-8", split == "train" and any(ord(ch) > 127 for ch in s))
        has("tile test name in UTF-8", split == "test" and any(ord(ch) > 127 for ch in s))
        has("tile graph of 1 node, no edge", n == 1 and m == 0)
        has("tile graph of 1000+ nodes", n >= 1000)
        has("tile file of 2 configs", c == 2)
        has("tile file of one config re-measured", c > 2 and (d["config_feat"] == d["config_feat"][0]).all())
assert len(files("tile:xla", "valid")) == 1, "tile valid is not exactly one graph"
seen.add("tile valid of exactly one graph")
assert not files("layout:xla:default", "valid"), "layout:xla:default has a valid graph"
assert os.path.isdir(os.path.join(root, "npz/layout/xla/default/valid")), "the empty valid directory is missing"
seen.add("layout collection without a valid graph")
assert len(files("layout:nlp:random", "test")) == 1
seen.add("layout test split of exactly one graph")
fams = {stem(f).split("_")[0] for f in files("layout:nlp:random", "train")}
assert len(fams) == 1, fams
seen.add("layout collection of one family")
for coll in ("layout:xla:random", "layout:xla:default", "layout:nlp:random", "layout:nlp:default"):
    for split in ("train", "valid", "test"):
        for f in files(coll, split):
            d = np.load(f)
            n, c, nc = d["node_opcode"].shape[0], d["config_runtime"].shape[0], d["node_config_ids"].shape[0]
            rows = d["node_config_feat"].reshape(c, -1)
            touched = np.zeros(n, bool)
            touched[d["edge_index"].reshape(-1)] = True
            has("layout program of 40k+ nodes", n >= 40000)
            has("layout file of 100k configs", c >= 100000)
            has("layout file of 2 configs", c == 2)
            has("layout file of one config re-measured", nc > 0 and c > 2 and (rows == rows[0]).all())
            has("layout program without configurable nodes", nc == 0)
            has("node_splits of length 2", d["node_splits"].shape == (1, 2))
            has("layout nodes without edges", (~touched).sum() >= 5)
            if coll.endswith("random") and split != "test" and nc > 0 and c >= 500:
                rt = d["config_runtime"].astype(float)
                best = rt.min()
                has("converged search shape", np.percentile(rt, 10) == best and np.median(rt) / best <= 1.0025)
want = {"tile name without letters", "tile name with dots and dashes", "tile train name in UTF-8",
        "tile test name in UTF-8", "tile graph of 1 node, no edge", "tile graph of 1000+ nodes",
        "tile file of 2 configs", "tile file of one config re-measured", "tile valid of exactly one graph",
        "layout collection without a valid graph", "layout test split of exactly one graph",
        "layout collection of one family", "layout program of 40k+ nodes", "layout file of 100k configs",
        "layout file of 2 configs", "layout file of one config re-measured",
        "layout program without configurable nodes", "node_splits of length 2",
        "layout nodes without edges", "converged search shape"}
missing = want - seen
assert not missing, f"missing shapes: {sorted(missing)}"
print(f"{len(want)} shapes present")
PY

step "every file validates"
find "$work/gen/npz" -name "*.npz" -print0 | xargs -0 "$BIN/tpuperf-inspect" --validate > "$work/inspect.txt" 2>&1 \
  || { tail -20 "$work/inspect.txt"; fail "tpuperf-inspect --validate"; }
echo "$(grep -c ", valid$" "$work/inspect.txt") files valid"

cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $work/gen/npz
  processed_dir: $work/processed
preprocess:
  folds: 5
output:
  dir: $work/run
$(tiny_train_yaml 1 16 1 1)
YAML

step "preprocess on 2 ranks: only the program without configurable nodes is rejected, by name"
rc=0
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 || rc=$?
[ "$rc" -eq 3 ] || { tail -30 "$work/pre.log"; fail "preprocess exit code $rc, expected 3 (one file rejected)"; }
grep -v "^#" "$work/processed/rejected.txt" > "$work/rejected.txt"
cat "$work/rejected.txt"
[ "$(wc -l < "$work/rejected.txt")" -eq 1 ] || fail "expected exactly one rejected file"
grep -qP "^layout/xla/random/train/[^\t]+\.npz\tnode_config_ids\tno configurable node" "$work/rejected.txt" \
  || fail "the rejection does not name the file, the key and the reason"
$PY - "$work/gen/npz" "$work/processed/manifest.yaml" <<'PY'
import glob, json, os, sys
raw, manifest = sys.argv[1:]
m = json.load(open(manifest))
kept = {(g["collection"], g["split"], g["name"]) for g in m["graphs"]}
files = set()
for f in glob.glob(os.path.join(raw, "**", "*.npz"), recursive=True):
    rel = os.path.relpath(f, raw).split("/")
    coll = "tile:xla" if rel[0] == "tile" else f"layout:{rel[1]}:{rel[2]}"
    files.add((coll, rel[-2], rel[-1][:-4]))
missing = files - kept
assert len(missing) == 1 and next(iter(missing))[0] == "layout:xla:random", missing
for g in m["graphs"]:
    if g["split"] != "test":
        assert 1 <= g["num_configs"] <= g["configs_before"], g
    else:
        assert g["num_configs"] == g["configs_before"], g  # test configs keep their indices
one = [g for g in m["graphs"] if g["num_configs"] == 1 and g["split"] != "test"]
assert one, "no re-measured-only file collapsed to one config"
print(f"{len(kept)} graphs kept of {len(files)} files; {len(one)} collapsed to one config by dedup")
PY

step "shards of the UTF-8 and the 40k-node graphs match their sources"
utf8=$($PY -c "
import os, sys
print(next(f[:-4] for f in sorted(os.listdir(sys.argv[1])) if any(ord(c) > 127 for c in f)))" "$work/gen/npz/tile/xla/train")
big=$($PY -c "
import glob, os, numpy as np, sys
for f in glob.glob(sys.argv[1] + '/npz/layout/*/*/train/*.npz'):
    if np.load(f)['node_opcode'].shape[0] >= 40000: print(os.path.basename(f)[:-4])" "$work/gen")
for name in "$utf8" "$big"; do
  shard=$($PY -c "
import json, sys
print(next(g['shard'] for g in json.load(open(sys.argv[1]))['graphs'] if g['name'] == sys.argv[2]))" \
    "$work/processed/manifest.yaml" "$name")
  "$BIN/tpuperf-inspect" "$work/processed/$shard" --graph "$name" --compare > "$work/compare.txt" 2>&1 \
    || { cat "$work/compare.txt"; fail "compare of $name"; }
  grep -q "identical: every field matches" "$work/compare.txt" || { cat "$work/compare.txt"; fail "$name differs"; }
  echo "$name: identical"
done

step "train 5 folds on 2 ranks; the submission covers every test graph and scores"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" > "$work/train.log" 2>&1 || { tail -30 "$work/train.log"; fail "tpuperf-train"; }
$PY - "$work/gen" "$work/run/submission.csv" <<'PY'
import csv, glob, os, sys
csv.field_size_limit(sys.maxsize)  # a layout row lists 100k configs
import numpy as np
root, sub = sys.argv[1:]
rows = {r["ID"]: r["TopConfigs"] for r in csv.DictReader(open(sub, encoding="utf-8"))}
n = 0
for f in glob.glob(os.path.join(root, "npz", "**", "test", "*.npz"), recursive=True):
    rel = os.path.relpath(f, os.path.join(root, "npz")).split("/")
    coll = "tile:xla" if rel[0] == "tile" else f"layout:{rel[1]}:{rel[2]}"
    key = f"{coll}:{rel[-1][:-4]}"
    assert key in rows, f"no row for {key}"
    c = np.load(f)["config_runtime"].shape[0]
    idx = [int(x) for x in rows[key].split(";")]
    assert len(set(idx)) == len(idx) and all(0 <= i < c for i in idx), key
    if coll == "tile:xla":
        assert len(idx) == min(5, c), (key, len(idx), c)
    else:
        assert sorted(idx) == list(range(c)), f"{key}: not a permutation of its {c} configs"
    n += 1
assert n == len(rows), (n, len(rows))
print(f"{n} rows, one per test graph")
PY
"$BIN/tpuperf-score" --submission "$work/run/submission.csv" --truth "$work/gen" > "$work/score.txt" 2>&1 \
  || { cat "$work/score.txt"; fail "tpuperf-score"; }
cat "$work/score.txt"
grep -qE "^overall +[-0-9.]+" "$work/score.txt" || fail "no overall score"
echo "PASS test_stress"
