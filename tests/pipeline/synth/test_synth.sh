#!/usr/bin/env bash
# tpuperf-synth writes files that numpy reads exactly like the real TpuGraphs release:
# the real keys, dtypes and shapes, test runtimes hidden in truth/ files.
# Usage: test_synth.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN_DIR=${1:?usage: test_synth.sh BIN_DIR SRC_DIR}
PY=/usr/bin/python3  # Debian's numpy lives only there

WORK=$(mktemp -d /tmp/tpuperf_test_synth.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$BIN_DIR/tpuperf-synth" --help | grep -q -- "--scale" || { echo "FAIL: --help lacks --scale"; exit 1; }
if "$BIN_DIR/tpuperf-synth" --out "$WORK/bad" --scale huge 2>/dev/null; then
  echo "FAIL: an unknown scale was accepted"; exit 1
fi

"$BIN_DIR/tpuperf-synth" --out "$WORK/tree" --scale tiny --seed 3 --threads 2 2>"$WORK/log"
grep -q "tile:xla" "$WORK/log" || { echo "FAIL: no progress line for tile:xla"; cat "$WORK/log"; exit 1; }
grep -q "done:" "$WORK/log" || { echo "FAIL: no summary line"; cat "$WORK/log"; exit 1; }

# Only some collections: the others stay absent.
"$BIN_DIR/tpuperf-synth" --out "$WORK/one" --scale tiny --collections layout:nlp:default 2>/dev/null
[ -d "$WORK/one/npz/layout/nlp/default/train" ] || { echo "FAIL: layout:nlp:default missing"; exit 1; }
[ ! -e "$WORK/one/npz/tile" ] || { echo "FAIL: tile written though not asked for"; exit 1; }

"$PY" - "$WORK/tree" <<'EOF'
import glob, os, re, sys
import numpy as np

root = sys.argv[1]
errors = []

def check(cond, msg):
    if not cond:
        errors.append(msg)

def expect(arr, dtype, ndim, what):
    check(arr.dtype == np.dtype(dtype), f"{what}: dtype {arr.dtype}, want {dtype}")
    check(arr.ndim == ndim, f"{what}: shape {arr.shape}, want {ndim} dims")

def common(d, f):
    nf, op, ei = d["node_feat"], d["node_opcode"], d["edge_index"]
    expect(nf, "<f4", 2, f + ":node_feat")
    check(nf.shape[1] == 140, f"{f}: node_feat has {nf.shape[1]} columns")
    expect(op, "u1", 1, f + ":node_opcode")
    check(op.shape[0] == nf.shape[0], f"{f}: {op.shape[0]} opcodes for {nf.shape[0]} nodes")
    check(op.max() <= 120, f"{f}: opcode {op.max()}")
    expect(ei, "<i8", 2, f + ":edge_index")
    check(ei.shape[1] == 2, f"{f}: edge_index shape {ei.shape}")
    check((ei[:, 0] > ei[:, 1]).all(), f"{f}: an edge [u, v] with u <= v")
    check(ei.max() < nf.shape[0], f"{f}: edge endpoint out of range")
    order = np.lexsort((ei[:, 1], ei[:, 0]))
    check((order == np.arange(len(order))).all(), f"{f}: edges not sorted")
    return nf.shape[0]

hex32 = re.compile(r"^[0-9a-f]{32}$")
counts = {}
for split in ["train", "valid", "test"]:
    files = sorted(glob.glob(f"{root}/npz/tile/xla/{split}/*.npz"))
    counts[("tile", split)] = len(files)
    for f in files:
        d = np.load(f)
        check(set(d.files) == {"node_feat", "node_opcode", "edge_index", "config_feat",
                               "config_runtime", "config_runtime_normalizers"}, f"{f}: keys {d.files}")
        common(d, f)
        cf, rt, nm = d["config_feat"], d["config_runtime"], d["config_runtime_normalizers"]
        expect(cf, "<f4", 2, f + ":config_feat")
        check(cf.shape[1] == 24, f"{f}: config_feat shape {cf.shape}")
        expect(rt, "<i8", 1, f + ":config_runtime")
        expect(nm, "<i8", 1, f + ":config_runtime_normalizers")
        check(rt.shape[0] == cf.shape[0] == nm.shape[0], f"{f}: config counts differ")
        stem = os.path.basename(f)[:-4]
        if split == "test":
            check(bool(hex32.match(stem)), f"{f}: test name is not 32 hex digits")
            check((rt == 0).all() and (nm == 1).all(), f"{f}: test runtimes not hidden")
            t = np.load(f"{root}/truth/tile/xla/test/{stem}.npz")
            check(t["config_runtime"].dtype == np.int64, f"{f}: truth dtype")
            check(t["config_runtime"].shape == rt.shape, f"{f}: truth shape")
            check((t["config_runtime"] > 0).all(), f"{f}: truth runtimes not positive")
            check((t["config_runtime_normalizers"] > 0).all(), f"{f}: truth normalizers")
        else:
            check((rt > 0).all() and (nm > 0).all(), f"{f}: runtimes not positive")

for src in ["xla", "nlp"]:
    for search in ["random", "default"]:
        for split in ["train", "valid", "test"]:
            files = sorted(glob.glob(f"{root}/npz/layout/{src}/{search}/{split}/*.npz"))
            counts[(src + ":" + search, split)] = len(files)
            for f in files:
                d = np.load(f)
                check(set(d.files) == {"node_feat", "node_opcode", "edge_index", "node_config_feat",
                                       "node_config_ids", "node_splits", "config_runtime"},
                      f"{f}: keys {d.files}")
                n = common(d, f)
                ids, feat, sp, rt = (d["node_config_ids"], d["node_config_feat"], d["node_splits"],
                                     d["config_runtime"])
                expect(ids, "<i8", 1, f + ":node_config_ids")
                expect(feat, "<f4", 3, f + ":node_config_feat")
                expect(sp, "<i8", 2, f + ":node_splits")
                expect(rt, "<i8", 1, f + ":config_runtime")
                check(sp.shape[0] == 1 and sp[0, 0] == 0 and sp[0, -1] == n, f"{f}: node_splits {sp}")
                check(feat.shape[1] == ids.shape[0] and feat.shape[2] == 18,
                      f"{f}: node_config_feat shape {feat.shape} for {ids.shape[0]} nodes")
                check(feat.shape[0] == rt.shape[0], f"{f}: config counts differ")
                check(feat.min() >= -1 and feat.max() <= 5, f"{f}: config values out of -1..5")
                check(set(np.unique(d["node_opcode"][ids])) <= {26, 34, 75},
                      f"{f}: configurable opcodes {np.unique(d['node_opcode'][ids])}")
                check((feat == -1).all(axis=(1, 2)).any(), f"{f}: no default (all -1) config")
                stem = os.path.basename(f)[:-4]
                if split == "test":
                    check(bool(hex32.match(stem)), f"{f}: test name is not 32 hex digits")
                    check((rt == 0).all(), f"{f}: test runtimes not hidden")
                    t = np.load(f"{root}/truth/layout/{src}/{search}/test/{stem}.npz")
                    check(t["config_runtime"].dtype == np.int64, f"{f}: truth dtype")
                    check(t["config_runtime"].shape == rt.shape, f"{f}: truth shape")
                    check((t["config_runtime"] > 0).all(), f"{f}: truth runtimes not positive")
                else:
                    check((rt > 0).all(), f"{f}: runtimes not positive")

for key, n in sorted(counts.items()):
    check(n > 0, f"no files for {key}")
if errors:
    print("\n".join(errors[:50]))
    print(f"FAIL: {len(errors)} problems")
    sys.exit(1)
print(f"ok: {sum(counts.values())} files checked")
EOF
