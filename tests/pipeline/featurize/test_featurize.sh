#!/usr/bin/env bash
# tpuperf-featurize on the two real tuning records (tests/data/real) against the
# independent reference (tests/pipeline/featurize/reference_featurize.py, numpy and a hand-written
# wire decoder): the same files, keys, dtypes, shapes and values, exactly (and so does the
# reference parsing with the protobuf library, the featurizing bench's peer); every output
# passes tpuperf-inspect --validate; re-encodings that protobuf must read alike (unpacked
# repeated fields, split sub-messages, unknown and mistyped fields) give the same files;
# --extra-features adds node_feat_extra equal to tests/pipeline/featurize/reference_extra_features.py's
# and leaves the release keys alone; the naming options and the clash of two inputs' names
# behave as documented.
# Usage: test_featurize.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
REAL=$SRC/tests/data/real
REF="$PY $SRC/tests/pipeline/featurize/reference_featurize.py"
COMPARE="$PY $SRC/tests/pipeline/featurize/compare_trees.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { echo; echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }

step "--help names the outputs"
"$BIN/tpuperf-featurize" --help > "$work/help.txt"
grep -q "OUT/npz/tile/xla/SPLIT/PREFIX_HEX.npz" "$work/help.txt" || fail "--help does not name the tile outputs"
grep -q "exit codes: 0 ok, 2 error" "$work/help.txt" || fail "--help does not give the exit codes"

step "featurize both real files"
"$BIN/tpuperf-featurize" --out "$work/cpp" --rejected "$work/rejected.tsv" "$REAL"/*.pb 2> "$work/cpp.log" \
  || { rc=$?; cat "$work/cpp.log"; fail "tpuperf-featurize exited with $rc"; }
cat "$work/cpp.log"
[ "$(find "$work/cpp/npz/tile/xla/train" -name '*.npz' | wc -l)" -eq 15 ] || fail "expected 15 tile files"
[ -f "$work/cpp/npz/layout/xla/random/train/module_tuning_data_layout.npz" ] || fail "no layout file"
[ -f "$work/cpp/npz/tile/xla/train/op_tuning_data_-8a7557b856e7b3b.npz" ] || fail "no file named as the release would"
[ "$(grep -vc '^#' "$work/rejected.tsv")" -eq 0 ] || fail "rejections on good records"

step "the reference featurizer gives the same arrays"
$REF --out "$work/ref" "$REAL"/*.pb
$COMPARE "$work/cpp" "$work/ref"

step "the reference parsing with the protobuf library (the featurizing bench's peer) gives the same arrays"
$REF --decoder protobuf --out "$work/ref_pb" "$REAL"/*.pb
$COMPARE "$work/ref_pb" "$work/ref"

step "tpuperf-inspect --validate accepts every output"
mapfile -t outputs < <(find "$work/cpp/npz" -name '*.npz' | sort)
"$BIN/tpuperf-inspect" --validate --json "${outputs[@]}" > "$work/inspect.json"
$PY - "$work/inspect.json" <<'PY'
import json, sys
files = json.load(open(sys.argv[1]))["files"]
assert len(files) == 16, len(files)
kinds = sorted(f["summary"]["kind"] for f in files)
assert kinds == ["layout"] + ["tile"] * 15, kinds
assert all(f["summary"]["validated"] for f in files)
layout = next(f for f in files if f["summary"]["kind"] == "layout")["summary"]
assert (layout["nodes"], layout["edges"], layout["configs"], layout["config_nodes"]) == (3163, 5112, 112, 62), layout
print("16 files validated")
PY

step "re-encodings protobuf reads alike give the same files"
for mode in unpacked split unknown; do
  mkdir -p "$work/$mode"
  for f in module_tuning_data_layout op_tuning_data; do
    $PY "$SRC/tests/pipeline/featurize/reencode_records.py" "$mode" "$REAL/$f.pb" "$work/$mode/$f.pb"
  done
  "$BIN/tpuperf-featurize" --out "$work/out_$mode" "$work/$mode"/*.pb 2> "$work/$mode.log" \
    || { rc=$?; cat "$work/$mode.log"; fail "$mode: exit $rc"; }
  diff -r "$work/cpp/npz" "$work/out_$mode/npz" || fail "$mode: the npz files differ"
  echo "$mode: byte-identical npz files"
done

step "--extra-features: node_feat_extra as the numpy reference computes it, the release keys unchanged"
"$BIN/tpuperf-featurize" --out "$work/extra" --extra-features "$REAL"/*.pb 2> "$work/extra.log" \
  || { rc=$?; cat "$work/extra.log"; fail "--extra-features: exit $rc"; }
$PY "$SRC/tests/pipeline/featurize/reference_extra_features.py" --out "$work/ref_extra" "$REAL"/*.pb > /dev/null
$COMPARE "$work/extra" "$work/ref_extra" --only-keys-of
$COMPARE "$work/extra" "$work/cpp" --only-keys-of
$PY - "$work/extra/npz/tile/xla/train/op_tuning_data_579e7b2c540f0929.npz" <<'PY'
import sys, numpy as np
z = np.load(sys.argv[1])
assert z["node_feat_extra"].dtype == np.float32 and z["node_feat_extra"].shape == (20, 56), z["node_feat_extra"].shape
PY
"$BIN/tpuperf-inspect" --validate "$work/extra/npz/layout/xla/random/train/module_tuning_data_layout.npz" > /dev/null

step "split, source, search and prefix choose the paths"
"$BIN/tpuperf-featurize" --out "$work/named" --split valid --source nlp --search default --prefix resnet \
  "$REAL"/*.pb 2> "$work/named.log" || { rc=$?; cat "$work/named.log"; fail "named run: exit $rc"; }
[ -f "$work/named/npz/layout/nlp/default/valid/resnet.npz" ] || fail "layout path"
[ -f "$work/named/npz/tile/xla/valid/resnet_579e7b2c540f0929.npz" ] || fail "tile path"
cmp "$work/named/npz/tile/xla/valid/resnet_579e7b2c540f0929.npz" \
  "$work/cpp/npz/tile/xla/train/op_tuning_data_579e7b2c540f0929.npz" || fail "a name changed the content"

step "two inputs with one output name: the second is rejected, the first kept"
mkdir -p "$work/again"
cp "$REAL/module_tuning_data_layout.pb" "$work/again/"
set +e
"$BIN/tpuperf-featurize" --out "$work/clash" "$REAL/module_tuning_data_layout.pb" \
  "$work/again/module_tuning_data_layout.pb" 2> "$work/clash.log"
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat "$work/clash.log"; fail "clash: exit $rc, expected 3"; }
grep -q "rejected $work/again/module_tuning_data_layout.pb: module main__.10904: output .* was already written by" \
  "$work/clash.log" || { cat "$work/clash.log"; fail "clash not reported"; }
cmp "$work/clash/npz/layout/xla/random/train/module_tuning_data_layout.npz" \
  "$work/cpp/npz/layout/xla/random/train/module_tuning_data_layout.npz"

step "an output that cannot be written stops the run: exit 2, naming the file"
# Files of at most 16 kB (SIGXFSZ ignored, so writes fail with EFBIG): the layout file and
# the larger tile files cannot be written, on whichever writer thread they are.
set +e
bash -c 'trap "" XFSZ; ulimit -f 16; exec "$@"' sh "$BIN/tpuperf-featurize" --out "$work/full" "$REAL"/*.pb \
  2> "$work/full.log"
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$work/full.log"; fail "write failure: exit $rc, expected 2"; }
grep -Eq "tpuperf-featurize: error: $work/full/npz/.*\.npz: write failed: File too large" "$work/full.log" \
  || { cat "$work/full.log"; fail "the write failure does not name the file and the reason"; }
[ -z "$(find "$work/full" -name '*.tmp')" ] || fail "temporary files left behind"
touch "$work/a_file"
set +e
"$BIN/tpuperf-featurize" --out "$work/a_file" "$REAL/op_tuning_data.pb" 2> "$work/notdir.log"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "cannot create directory" "$work/notdir.log" || { cat "$work/notdir.log"; fail "--out a file: exit $rc"; }

step "usage errors exit 2"
for args in "--split dev" "--source tpu" "--prefix a/b" "--kind both"; do
  set +e
  # shellcheck disable=SC2086
  "$BIN/tpuperf-featurize" --out "$work/x" $args "$REAL/op_tuning_data.pb" 2> "$work/usage.log"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "'$args': exit $rc, expected 2"
  grep -q "tpuperf-featurize: error:" "$work/usage.log" || fail "'$args': no error line"
done
echo "PASS test_featurize"
