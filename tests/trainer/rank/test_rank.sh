#!/usr/bin/env bash
# tpuperf-rank and the installed ranker library on a run trained on a generated tiny tree
# (2 ranks, 2 folds, every collection):
# - the one prediction path: tpuperf-rank --csv of every test file equals the run's
#   submission.csv row for row (tile's top 5, layout's full permutations);
# - text and JSON output; --top; identical configs share one score; with measured runtimes
#   in the input, --json's score and top-k slowdowns equal values computed here;
# - inputs outside a release tree: the collection from the file's kind, or --collection;
# - the real TPU v3 records of tests/data/real, featurized, rank in their tree's collections;
# - errors name the input and the reason (exit 3, the other inputs still ranked); a run
#   directory that lacks something says what (exit 2);
# - --adapt: blended (the default) or fine-tuned on a file's measured configs (the
#   generator's true runtimes of half of a test graph's configs), deterministic for a seed;
#   another graph is rejected naming both (exit 3), a measured file without runtimes names
#   file and key (exit 2);
# - --suggest: K distinct configs, deterministic, none of --adapt's measured ones; usage
#   errors for the options that need it;
# - cmake --install to a prefix; the example project finds it with find_package(tpuperf),
#   builds against it alone, and ranks as tpuperf-rank does.
# Usage: test_rank.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
source "$SRC/tests/tiny_train.sh"
work=$(mktemp -d "$(cd "$BIN/.." && pwd)/test_rank.XXXXXX")  # under the build directory
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
step() { echo; echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }
# expect_rc RC LOG COMMAND...: run COMMAND with its stdout in LOG (stderr in LOG.err).
expect_rc() {
  local want=$1 log=$2 rc=0
  shift 2
  "$@" > "$log" 2> "$log.err" || rc=$?
  [ "$rc" -eq "$want" ] || { tail -20 "$log" "$log.err"; fail "exit code $rc, expected $want: $*"; }
}
rank() { "$BIN/tpuperf-rank" --run "$work/run" "$@"; }

"$BIN/tpuperf-synth" --out "$work/gen" --scale tiny --seed 11 > /dev/null 2>&1
cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $work/gen/npz
  processed_dir: $work/processed
preprocess:
  folds: 2
output:
  dir: $work/run
$(tiny_train_yaml 2 16 1 1)
YAML
mpirun --bind-to none -np 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 \
  || { tail "$work/pre.log"; fail "preprocessing"; }
mpirun --bind-to none -np 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" > "$work/train.log" 2>&1 \
  || { tail "$work/train.log"; fail "training"; }
[ -s "$work/run/preprocess_settings.yaml" ] || fail "the run lacks preprocess_settings.yaml"

step "tpuperf-rank --csv of every test file equals submission.csv"
mapfile -t tests < <(find "$work/gen/npz" -path '*/test/*.npz' | sort)
expect_rc 0 "$work/rank.csv" rank --csv "${tests[@]}"
cmp "$work/rank.csv" "$work/run/submission.csv" || { diff "$work/rank.csv" "$work/run/submission.csv" | head; fail "rank != submission"; }
echo "${#tests[@]} test files: rows equal the submission's"

step "text and JSON output, --top"
tile=$(find "$work/gen/npz/tile/xla/test" -name '*.npz' | sort | head -1)
layout=$(find "$work/gen/npz/layout/nlp/random/test" -name '*.npz' | sort | head -1)
expect_rc 0 "$work/top.txt" rank --top 3 "$tile"
head -1 "$work/top.txt" | grep -q "^# $tile: tile:xla:[0-9a-f]*, .* configs (.* distinct), 2 fold models" || fail "no header line"
[ "$(tail -n +3 "$work/top.txt" | wc -l)" -eq 3 ] || fail "--top 3 printed $(tail -n +3 "$work/top.txt" | wc -l) rows"
expect_rc 0 "$work/all.json" rank --json "$tile" "$layout"
$PY - "$work/all.json" "$layout" <<'PY'
import json, sys
import numpy as np
doc = json.load(open(sys.argv[1]))
assert not doc["rejected"], doc["rejected"]
for r in doc["results"]:
    n = r["configs"]
    assert sorted(r["order"]) == list(range(n)), (r["input"], "order is not a permutation")
    assert r["score"] == sorted(r["score"]) or r["collection"] == "tile:xla", "layout scores not ascending"
    assert r["folds"] == 2
layout = doc["results"][1]
assert layout["configs"] == len(np.load(sys.argv[2])["node_config_feat"]), "layout: not every config ranked"
print("JSON: orders are permutations of every config")
PY

step "--json with measured runtimes: the score and top-k slowdowns, as computed here"
vtile=$(find "$work/gen/npz/tile/xla/valid" -name '*.npz' | sort | head -1)
vlayout=$(find "$work/gen/npz/layout/xla/random/valid" -name '*.npz' | sort | head -1)
expect_rc 0 "$work/measured.json" rank --json "$vtile" "$vlayout" "$tile"
$PY - "$work/measured.json" <<'PY'
import json, sys
import numpy as np
doc = json.load(open(sys.argv[1]))
tile, layout, hidden = doc["results"]
assert "slowdown" not in hidden and "score_vs_runtimes" not in hidden, "a test file's zero runtimes were scored"
def tau_b(x, y):  # Kendall's tau-b over all pairs, ties in either
    x, y = np.asarray(x, float), np.asarray(y, float)
    dx = np.sign(x[:, None] - x[None, :]); dy = np.sign(y[:, None] - y[None, :])
    iu = np.triu_indices(len(x), 1)
    dx, dy = dx[iu], dy[iu]
    return (dx * dy).sum() / np.sqrt((dx != 0).sum() * (dy != 0).sum())
for r in (tile, layout):
    g = np.load(r["input"])
    y = g["config_runtime"].astype(float)
    if r is tile:
        y = y / g["config_runtime_normalizers"]
    order = r["order"]
    for k in (1, 5, 10):
        want = y[order[:k]].min() / y.min()
        got = r["slowdown"][f"top{k}"]
        assert abs(got - want) < 1e-9, (r["input"], k, got, want)
    if r is tile:
        want = 2 - y[order[:5]].min() / y.min()
    else:
        pos = np.empty(len(order)); pos[order] = np.arange(len(order))
        want = tau_b(pos, y)
    assert abs(r["score_vs_runtimes"] - want) < 1e-9, (r["input"], r["score_vs_runtimes"], want)
print("tile", tile["slowdown"], "layout", layout["slowdown"], "match the values computed here")
PY

step "identical configs share one score; files outside a release tree"
$PY - "$tile" "$work/dups.npz" <<'PY'
import sys
import numpy as np
d = dict(np.load(sys.argv[1]))
cf = d["config_feat"]
cf[5] = cf[2]; cf[9] = cf[2]  # configs 2, 5, 9 identical
np.savez_compressed(sys.argv[2], **d)
PY
expect_rc 0 "$work/dups.json" rank --json "$work/dups.npz"
$PY - "$work/dups.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
score = dict(zip(r["order"], r["score"]))
assert score[2] == score[5] == score[9], (score[2], score[5], score[9])
assert r["distinct_configs"] <= r["configs"] - 2
print("identical configs 2, 5, 9 share score", score[2])
PY
cp "$layout" "$work/mine.npz"
expect_rc 3 "$work/amb.txt" rank "$work/mine.npz"
grep -q "mine.npz: a layout file outside a release tree: pass --collection (the run has " "$work/amb.txt.err" \
  || { cat "$work/amb.txt.err"; fail "an ambiguous layout file is not refused by name"; }
expect_rc 0 "$work/mine.txt" rank --collection layout:nlp:random "$work/mine.npz"
expect_rc 0 "$work/tree.txt" rank "$layout"
diff <(tail -n +2 "$work/mine.txt") <(tail -n +2 "$work/tree.txt") || fail "--collection ranks differently"

step "featurized real TPU records (tests/data/real) rank like any release file"
"$BIN/tpuperf-featurize" --out "$work/real" --split test "$SRC/tests/data/real/op_tuning_data.pb" \
  "$SRC/tests/data/real/module_tuning_data_layout.pb" > "$work/featurize.log" 2>&1 \
  || { tail "$work/featurize.log"; fail "featurize the real records"; }
mapfile -t real < <(find "$work/real/npz" -name '*.npz' | sort)
[ "${#real[@]}" -ge 2 ] || fail "the real records featurized to ${#real[@]} files"
expect_rc 0 "$work/real.json" rank --json "${real[@]}"
$PY - "$work/real.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
kinds = sorted({r["collection"].split(":")[0] for r in doc["results"]})
assert kinds == ["layout", "tile"], kinds
for r in doc["results"]:
    assert sorted(r["order"]) == list(range(r["configs"])), r["input"]
print(len(doc["results"]), "real files ranked:", ", ".join(f'{r["collection"]} {r["configs"]} configs' for r in doc["results"][:3]), "...")
PY

step "bad inputs are named, the others still ranked (exit 3); a bad run directory (exit 2)"
printf 'not a zip' > "$work/broken.npz"
expect_rc 3 "$work/bad.csv" rank --csv "$work/broken.npz" "$tile" "$work/missing.npz" --collection tile:xla
grep -q "broken.npz" "$work/bad.csv.err" || fail "the broken input is not named"
grep -q "missing.npz" "$work/bad.csv.err" || fail "the missing input is not named"
[ "$(wc -l < "$work/bad.csv")" -eq 2 ] || fail "the good input was not ranked"
expect_rc 3 "$work/kind.txt" rank --collection tile:xla "$layout"
grep -q "tile" "$work/kind.txt.err" || fail "a layout file given to a tile ranker is not refused"
mkdir -p "$work/empty_run"
expect_rc 2 "$work/norun.txt" "$BIN/tpuperf-rank" --run "$work/empty_run" "$tile"
grep -q "train_config.yaml" "$work/norun.txt.err" || { cat "$work/norun.txt.err"; fail "a bad run dir does not say what it lacks"; }
expect_rc 2 "$work/usage.txt" "$BIN/tpuperf-rank" --run "$work/run" --top zero "$tile"
grep -q -- "--top" "$work/usage.txt.err" || fail "a bad --top is not named"

step "--adapt: fine-tuned on measured configs of the input's graph, that graph only"
# The first tile test file with the generator's true runtimes of its even configs (0: the
# odd ones were not measured), outside the release tree.
$PY - "$tile" "$work/gen/truth/tile/xla/test/$(basename "$tile")" "$work/measured.npz" <<'PY'
import sys
import numpy as np
d = dict(np.load(sys.argv[1]))
runtime = np.load(sys.argv[2])["config_runtime"].copy()
runtime[1::2] = 0
d["config_runtime"] = runtime
np.savez(sys.argv[3], **d)
PY
expect_rc 0 "$work/blended.json" rank --adapt "$work/measured.npz" --json "$tile"
grep -q "adapted tile:xla to $work/measured.npz (.* measured configs) by blending: " "$work/blended.json.err" \
  || { cat "$work/blended.json.err"; fail "the blend is not logged"; }
expect_rc 0 "$work/blended2.json" rank --adapt "$work/measured.npz" --json "$tile"
ft=(--adapt-method finetune)
expect_rc 0 "$work/adapted.json" rank --adapt "$work/measured.npz" "${ft[@]}" --json "$tile"
grep -q "adapted 2 fold models of tile:xla to $work/measured.npz (.*) by fine-tuning" "$work/adapted.json.err" \
  || { cat "$work/adapted.json.err"; fail "the fine-tuning is not logged"; }
expect_rc 0 "$work/adapted2.json" rank --adapt "$work/measured.npz" "${ft[@]}" --json "$tile"
expect_rc 0 "$work/seed7.json" rank --adapt "$work/measured.npz" "${ft[@]}" --seed 7 --adapt-steps 20 --adapt-lr 0.001 --json "$tile"
expect_rc 0 "$work/trained.json" rank --json "$tile"
$PY - "$work/adapted.json" "$work/adapted2.json" "$work/seed7.json" "$work/trained.json" "$work/blended.json" "$work/blended2.json" <<'PY'
import json, sys
a, again, seed7, trained, blend, blend2 = (json.load(open(f))["results"][0] for f in sys.argv[1:])
for r in (a, blend):
    assert sorted(r["order"]) == list(range(r["configs"])), "the adapted order is not a permutation"
assert (a["order"], a["score"]) == (again["order"], again["score"]), "the same seed fine-tunes differently"
assert (blend["order"], blend["score"]) == (blend2["order"], blend2["score"]), "the same seed blends differently"
assert a["score"] != trained["score"], "fine-tuning changed no score"
assert a["score"] != seed7["score"], "other steps, lr and seed changed no score"
print("adapted: permutations, the same for the same seed; fine-tuning other than the run's as trained")
PY
expect_rc 2 "$work/stepsblend.txt" rank --adapt "$work/measured.npz" --adapt-steps 5 "$tile"
grep -q -- "--adapt-steps needs --adapt-method finetune" "$work/stepsblend.txt.err" || fail "--adapt-steps with the blend is not refused"
expect_rc 2 "$work/method.txt" rank --adapt "$work/measured.npz" --adapt-method magic "$tile"
grep -q -- "--adapt-method is 'magic': blend or finetune" "$work/method.txt.err" || fail "a bad --adapt-method is not named"

step "--suggest: what to measure next, none of the measured configs, deterministic"
expect_rc 0 "$work/suggest.json" rank --suggest 4 --json "$tile" "$layout"
expect_rc 0 "$work/suggest_m.json" rank --adapt "$work/measured.npz" --suggest 4 --json "$tile"
expect_rc 0 "$work/suggest_m2.json" rank --adapt "$work/measured.npz" --suggest 4 --json "$tile"
expect_rc 0 "$work/suggest.txt" rank --adapt "$work/measured.npz" --suggest 3 --exploration 0 --diversity 2 "$tile"
grep -q "^# $tile: tile:xla:.*, suggest 3 of .* configs (.* measured excluded)" "$work/suggest.txt" \
  || { cat "$work/suggest.txt"; fail "no --suggest header line"; }
[ "$(tail -n +3 "$work/suggest.txt" | wc -l)" -eq 3 ] || fail "--suggest 3 printed another number of rows"
$PY - "$work/suggest.json" "$work/suggest_m.json" "$work/suggest_m2.json" "$work/measured.npz" <<'PY'
import json, sys
import numpy as np
plain, m, m2 = (json.load(open(f)) for f in sys.argv[1:4])
for r in plain["results"] + m["results"]:
    assert len(r["suggest"]) == 4 == len(set(r["suggest"])), (r["input"], r["suggest"])
    assert len(r["score"]) == len(r["uncertainty"]) == 4
    assert all(u >= 0 for u in r["uncertainty"])
g = np.load(sys.argv[4])
runtime, feat = g["config_runtime"], g["config_feat"]
measured_rows = {feat[c].tobytes() for c in np.nonzero(runtime > 0)[0]}
r = m["results"][0]
# The measured configs and their copies among the input's.
assert r["excluded"] == sum(feat[c].tobytes() in measured_rows for c in range(len(feat))), r["excluded"]
assert all(runtime[c] == 0 for c in r["suggest"]), ("a measured config was suggested", r["suggest"])
assert r["suggest"] == m2["results"][0]["suggest"], "the same inputs suggest differently"
print("suggest: 4 distinct configs each, none measured, the same twice")
PY
expect_rc 2 "$work/suggestcsv.txt" rank --suggest 2 --csv "$tile"
grep -q -- "--suggest prints its own rows" "$work/suggestcsv.txt.err" || fail "--suggest with --csv is not refused"
expect_rc 2 "$work/explore.txt" rank --exploration 2 "$tile"
grep -q -- "--exploration needs --suggest K" "$work/explore.txt.err" || fail "--exploration without --suggest is not refused"
other_tile=$(find "$work/gen/npz/tile/xla/test" -name '*.npz' | sort | sed -n 2p)
expect_rc 3 "$work/other.txt" rank --adapt "$work/measured.npz" "$tile" "$other_tile" "$layout"
grep -q "$other_tile: graph .* is not the graph this ranker was adapted to ($work/measured.npz)" "$work/other.txt.err" \
  || { cat "$work/other.txt.err"; fail "another tile graph is not refused naming both"; }
grep -q "$layout: is a layout:nlp:random input, not the graph --adapt measured ($work/measured.npz, tile:xla)" \
  "$work/other.txt.err" || { cat "$work/other.txt.err"; fail "a layout input is not refused"; }
grep -q "^# $tile: " "$work/other.txt" || fail "the measured graph was not ranked beside the rejected inputs"
expect_rc 2 "$work/noruntimes.txt" rank --adapt "$tile" "$tile"
grep -q "$tile: key 'config_runtime': holds no runtimes" "$work/noruntimes.txt.err" \
  || { cat "$work/noruntimes.txt.err"; fail "a measured file without runtimes is not refused by file and key"; }
expect_rc 2 "$work/seedonly.txt" rank --seed 3 "$tile"
grep -q -- "--seed needs --adapt" "$work/seedonly.txt.err" || fail "--seed without --adapt is not refused"

step "the installed library: find_package(tpuperf) from an example project"
cmake --install "$BIN/.." --prefix "$work/prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; }
[ -f "$work/prefix/include/tpuperf/ranker.h" ] || fail "the header is not installed"
cmake -S "$SRC/trainer/rank/examples" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/example.log" 2>&1 || { cat "$work/example.log"; fail "configure the example"; }
cmake --build "$work/example" >> "$work/example.log" 2>&1 || { cat "$work/example.log"; fail "build the example"; }
ldd "$work/example/rank_candidates" > "$work/ldd.txt"  # (not piped into grep -q: SIGPIPE under pipefail)
grep -q "$work/prefix/lib.*/libtpuperf_ranker.so" "$work/ldd.txt" \
  || { cat "$work/ldd.txt"; fail "the example does not use the installed library"; }
! grep -qi "libmpi" "$work/ldd.txt" || fail "the ranker library needs MPI"
"$work/example/rank_candidates" "$work/run" layout:nlp:random "$layout" > "$work/example.txt" \
  || fail "the example failed"
expect_rc 0 "$work/layout.json" rank --json "$layout"
$PY - "$work/example.txt" "$work/layout.json" <<'PY'
import json, sys
ex = [int(l.split()[0]) for l in open(sys.argv[1])]
r = json.load(open(sys.argv[2]))["results"][0]
assert ex == r["order"], "the example's order differs from tpuperf-rank's"
print("the example ranks", len(ex), "configs as tpuperf-rank does")
PY
"$work/example/rank_candidates" "$work/run" tile:xla > "$work/memory.txt" || fail "in-memory candidates"
[ "$(wc -l < "$work/memory.txt")" -eq 4 ] || fail "the in-memory kernel's 4 candidates are not all ranked"
echo "PASS"
