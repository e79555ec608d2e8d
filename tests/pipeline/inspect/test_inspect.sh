#!/usr/bin/env bash
# tpuperf-inspect --json on files numpy writes (savez and savez_compressed) reports
# exactly numpy's view of them: every key, dtype string and shape; and a graph summary
# that matches the arrays, also for Fortran-order and big-endian members, which --validate
# accepts. Usage: test_inspect.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
n, m, c = 7, 9, 5
tile = dict(
    node_feat=rng.random((n, 140), dtype=np.float32),
    node_opcode=rng.integers(1, 120, n).astype(np.uint8),
    edge_index=np.stack([np.arange(1, m + 1) % n, np.arange(m) % n], 1).astype(np.int64),
    config_feat=rng.random((c, 24), dtype=np.float32),
    config_runtime=np.array([50, 20, 30, 90, 40], dtype=np.int64),
    config_runtime_normalizers=np.full(c, 10, dtype=np.int64),
)
np.savez(f"{d}/tile_plain.npz", **tile)
np.savez_compressed(f"{d}/tile_deflated.npz", **tile)
odd = dict(tile, node_feat=np.asfortranarray(tile["node_feat"]), config_runtime=tile["config_runtime"].astype(">i8"),
           config_feat=np.asfortranarray(tile["config_feat"]).astype(">f4"))
np.savez(f"{d}/tile_odd.npz", **odd)
np.savez_compressed(f"{d}/misc.npz", b=np.array([True, False]), i4=np.arange(6, dtype=np.int32).reshape(2, 3),
                    f8=np.zeros((0, 4)), scalar=np.float32(3.5))
PY

for f in tile_plain tile_deflated tile_odd misc; do
  "$BIN/tpuperf-inspect" --json "$work/$f.npz" > "$work/$f.json"
done
"$BIN/tpuperf-inspect" --validate "$work/tile_odd.npz" | grep -q "tile graph: 7 nodes, 9 edges, 5 configs, runtime 20..90 ns"
# Text mode names the graph summary.
"$BIN/tpuperf-inspect" "$work/tile_plain.npz" | grep -q "tile graph: 7 nodes, 9 edges, 5 configs, runtime 20..90 ns"

"$PY" - "$work" <<'PY'
import json, sys, numpy as np
d = sys.argv[1]
for f in ["tile_plain", "tile_deflated", "tile_odd", "misc"]:
    out = json.load(open(f"{d}/{f}.json"))["files"][0]
    z = np.load(f"{d}/{f}.npz")
    assert sorted(out["keys"]) == sorted(z.files), (f, out["keys"].keys(), z.files)
    for k in z.files:
        a = z[k]
        assert out["keys"][k]["dtype"] == a.dtype.str, (f, k, out["keys"][k], a.dtype.str)
        assert out["keys"][k]["shape"] == list(a.shape), (f, k, out["keys"][k], a.shape)
    if f.startswith("tile"):
        s = out["summary"]
        assert s["kind"] == "tile" and s["nodes"] == 7 and s["edges"] == 9 and s["configs"] == 5, s
        assert s["runtime_min"] == 20 and s["runtime_max"] == 90, s
    else:
        assert "summary" not in out
print("inspect json matches numpy")
PY

# A file that cannot be read: reported with its path, exit code 2, the others still listed.
echo "not a zip" > "$work/bad.npz"
set +e
"$BIN/tpuperf-inspect" --json "$work/misc.npz" "$work/bad.npz" > "$work/mixed.json" 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "expected exit 2, got $rc"; exit 1; }
grep -q "bad.npz" "$work/err.txt"
"$PY" -c "import json,sys; f=json.load(open('$work/mixed.json'))['files']; assert len(f)==2 and 'error' in f[1] and 'keys' in f[0], f"
echo "PASS test_inspect"
