#!/usr/bin/env bash
# tpuperf-score against generated truth: a perfect submission scores 1 everywhere, a
# reversed one has negative layout taus, the top-1/5/10 slowdowns of every graph equal
# numpy's from the truth files, and a submission lacking a graph is refused.
# Usage: test_score.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN_DIR=${1:?usage: test_score.sh BIN_DIR SRC_DIR}
PY=/usr/bin/python3  # Debian's numpy lives only there

WORK=$(mktemp -d /tmp/tpuperf_test_score.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$BIN_DIR/tpuperf-synth" --out "$WORK/tree" --scale tiny --seed 5 --threads 2 2>"$WORK/synth.log" ||
  { cat "$WORK/synth.log"; fail "tpuperf-synth failed"; }

# Submissions written from the truth files, independently of tpuperf's own code.
"$PY" - "$WORK/tree/truth" "$WORK" <<'PYEOF'
import glob, os, sys
import numpy as np

truth, out = sys.argv[1], sys.argv[2]
perfect, reversed_, slowdowns = {}, {}, {}
def slowdown(y, row, k):
    """Best of the first k over the best; None when the row is too short to tell."""
    if len(row) < min(k, len(y)):
        return None
    return float(y[row[:k]].min() / y.min())
for f in sorted(glob.glob(f"{truth}/**/test/*.npz", recursive=True)):
    parts = os.path.relpath(f, truth).split(os.sep)
    stem = parts[-1][:-len(".npz")]
    d = np.load(f)
    runtime = d["config_runtime"].astype(np.float64)
    if parts[0] == "tile":
        y = runtime / d["config_runtime_normalizers"]
        order = np.argsort(y, kind="stable")
        rid = f"tile:{parts[1]}:{stem}"
        perfect[rid], reversed_[rid] = order[:5], order[::-1][:5]
    else:
        order = np.argsort(runtime, kind="stable")
        rid = f"layout:{parts[1]}:{parts[2]}:{stem}"
        perfect[rid], reversed_[rid] = order, order[::-1]
        y = runtime
    slowdowns[rid] = {f"top{k}": slowdown(y, np.asarray(reversed_[rid]), k) for k in (1, 5, 10)}

def write(name, rows):
    with open(os.path.join(out, name), "w") as fh:
        fh.write("ID,TopConfigs\n")
        for rid in sorted(rows):
            fh.write(rid + "," + ";".join(str(int(c)) for c in rows[rid]) + "\n")

write("perfect.csv", perfect)
write("reversed.csv", reversed_)
dropped = sorted(perfect)[len(perfect) // 2]
write("missing.csv", {k: v for k, v in perfect.items() if k != dropped})
with open(os.path.join(out, "dropped.txt"), "w") as fh:
    fh.write(dropped)
with open(os.path.join(out, "count.txt"), "w") as fh:
    fh.write(str(len(perfect)))
import json
with open(os.path.join(out, "reversed_slowdowns.json"), "w") as fh:
    json.dump(slowdowns, fh)
PYEOF

SCORE="$BIN_DIR/tpuperf-score"
"$SCORE" --submission "$WORK/perfect.csv" --truth "$WORK/tree" --json >"$WORK/perfect.json" ||
  fail "scoring the perfect submission failed"
"$SCORE" --submission "$WORK/reversed.csv" --truth "$WORK/tree" --json >"$WORK/reversed.json" ||
  fail "scoring the reversed submission failed"

"$PY" - "$WORK" <<'PYEOF'
import json, os, sys
work = sys.argv[1]
perfect = json.load(open(os.path.join(work, "perfect.json")))
reversed_ = json.load(open(os.path.join(work, "reversed.json")))
count = int(open(os.path.join(work, "count.txt")).read())
errors = []
colls = {c["collection"]: c for c in perfect["collections"]}
if sorted(colls) != ["layout:nlp:default", "layout:nlp:random", "layout:xla:default",
                     "layout:xla:random", "tile:xla"]:
    errors.append(f"collections {sorted(colls)}")
if sum(c["graphs"] for c in colls.values()) != count:
    errors.append(f"{sum(c['graphs'] for c in colls.values())} graphs scored, {count} in the truth")
for cid, c in colls.items():
    if cid.startswith("tile"):
        if c["score"] != 1.0: errors.append(f"perfect {cid}: {c['score']} != 1")
        if not (c["random_baseline"] <= 1.0 and c["default_first_baseline"] <= 1.0):
            errors.append(f"{cid} baselines {c['random_baseline']} {c['default_first_baseline']}")
    else:
        if not c["score"] > 0.99: errors.append(f"perfect {cid}: {c['score']} <= 0.99")
        if c["default_first_baseline"] is not None: errors.append(f"{cid}: default-first not n/a")
        if not abs(c["random_baseline"]) < 0.8: errors.append(f"{cid}: random {c['random_baseline']}")
if not perfect["overall"]["score"] > 0.99:
    errors.append(f"perfect overall {perfect['overall']['score']}")
for c in reversed_["collections"]:
    if c["collection"].startswith("layout") and not c["score"] < 0:
        errors.append(f"reversed {c['collection']}: tau {c['score']} not < 0")
# Slowdowns: 1 for the perfect order's top-1; the reversed order's equal numpy's, graph by
# graph (null where the row is too short: a tile row of 5 has no top-10).
expect = json.load(open(os.path.join(work, "reversed_slowdowns.json")))
for g in perfect["graphs"]:
    if g["slowdown"]["top1"] != 1.0: errors.append(f"perfect {g['id']}: top-1 slowdown {g['slowdown']['top1']}")
got = {g["id"]: g["slowdown"] for g in reversed_["graphs"]}
if sorted(got) != sorted(expect): errors.append("reversed: per-graph slowdowns not for every graph")
for gid, want in expect.items():
    for k, v in want.items():
        have = got.get(gid, {}).get(k)
        if (v is None) != (have is None) or (v is not None and abs(have - v) > 1e-9 * v):
            errors.append(f"reversed {gid} {k}: {have} != numpy's {v}")
for c in reversed_["collections"]:
    mine = [want["top1"] for gid, want in expect.items() if gid.startswith(c["collection"] + ":")]
    if abs(c["slowdown"]["top1"] - sum(mine) / len(mine)) > 1e-9 * c["slowdown"]["top1"]:
        errors.append(f"reversed {c['collection']}: mean top-1 slowdown {c['slowdown']['top1']}")
    if not c["random_slowdown"]["top1"] >= 1.0: errors.append(f"{c['collection']}: random top-1 slowdown < 1")
if errors:
    print("FAIL:\n  " + "\n  ".join(errors))
    sys.exit(1)
PYEOF

# The table names every collection and the overall score.
"$SCORE" --submission "$WORK/perfect.csv" --truth "$WORK/tree" >"$WORK/table.txt"
for word in tile:xla layout:nlp:random overall n/a "top-1 / top-5 / top-10 slowdown"; do
  grep -q "$word" "$WORK/table.txt" || { cat "$WORK/table.txt"; fail "table lacks $word"; }
done

# A missing graph: non-zero exit, and the message names it.
DROPPED=$(cat "$WORK/dropped.txt")
if "$SCORE" --submission "$WORK/missing.csv" --truth "$WORK/tree" >/dev/null 2>"$WORK/missing.err"; then
  fail "a submission lacking $DROPPED was accepted"
fi
grep -q "$DROPPED" "$WORK/missing.err" || { cat "$WORK/missing.err"; fail "error does not name $DROPPED"; }

# A malformed row: non-zero exit naming the line.
{ head -2 "$WORK/perfect.csv"; echo "tile:xla:bad,1;x"; } >"$WORK/bad.csv"
if "$SCORE" --submission "$WORK/bad.csv" --truth "$WORK/tree" >/dev/null 2>"$WORK/bad.err"; then
  fail "a malformed submission was accepted"
fi
grep -q "line 3" "$WORK/bad.err" || { cat "$WORK/bad.err"; fail "error does not name line 3"; }

echo "test_score: ok"
