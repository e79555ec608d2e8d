#!/usr/bin/env bash
# tpuperf-preprocess end to end on a generated tiny tree, checked against the sources by
# an independent numpy implementation (check_processed.py):
#   1 rank and 2 ranks give identical graphs; bad files are rejected (exit 3, named in
#   rejected.txt) while every other file is processed; a rerun does nothing; a changed
#   valid file redoes only its unit; a transform-only setting change rewrites no shard;
#   runs killed mid-way (SIGKILL) leave the previous output intact and the next run
#   finishes with the same result as an uninterrupted one.
# Usage: test_preprocess.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
CHECK="$PY $SRC/tests/pipeline/preprocess/check_processed.py"
# The pruning of cfg.yaml: 1 hop, 2 on layout:xla:default (its collections: section),
# bridges through up to 2 pruned nodes.
HOPS=1,layout:xla:default=2,bridges=2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { local np=$1; shift; mpirun --bind-to none -np "$np" "$@"; }
step() { echo; echo "== $*"; }

"$BIN/tpuperf-synth" --out "$work/gen" --scale tiny --seed 3 >/dev/null 2>&1
RAW=$work/gen/npz

cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $RAW
  processed_dir: $work/p2
preprocess:
  prune_hops: 1
  prune_bridges: 2
  folds: 2
  shard_mb: 0.05
collections:
  layout:xla:default: {preprocess.prune_hops: 2}
YAML

step "bad inputs beside good ones"
$PY - "$RAW" <<'PY'
import os, sys, numpy as np
raw = sys.argv[1]
d = os.path.join(raw, "layout/xla/random/train")
good = sorted(f for f in os.listdir(d) if f.endswith(".npz"))[0]
z = dict(np.load(os.path.join(d, good)))
z["node_config_feat"] = z["node_config_feat"].copy()
z["node_config_feat"].flat[0] = 9          # outside -1..5
np.savez(os.path.join(d, "zzbad_value.npz"), **z)
open(os.path.join(raw, "tile/xla/valid/zzempty.npz"), "wb").close()
os.mkdir(os.path.join(raw, "tile/xla/train/zzdir.npz"))
PY
set +e
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/run1.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat "$work/run1.log"; echo "expected exit 3 (rejected files), got $rc"; exit 1; }
grep -q "zzbad_value.npz.*node_config_feat" "$work/p2/rejected.txt"
grep -q "zzempty.npz" "$work/p2/rejected.txt"
grep -q "zzdir.npz.*directory" "$work/p2/rejected.txt"
[ "$(grep -vc '^#' "$work/p2/rejected.txt")" -eq 3 ] || { cat "$work/p2/rejected.txt"; exit 1; }
grep -q "graphs, 1 rejected" "$work/run1.log"
$CHECK "$RAW" "$work/p2" "$HOPS" 2 | tee "$work/check1.txt"
grep -q "([1-9][0-9]* bridges)" "$work/check1.txt" || { echo "no bridge in the tree: nothing of them checked"; exit 1; }

step "the bad files removed: the same graphs as with them"
rm -rf "$RAW/layout/xla/random/train/zzbad_value.npz" "$RAW/tile/xla/valid/zzempty.npz" "$RAW/tile/xla/train/zzdir.npz"
mpi 1 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.processed_dir="$work/p1" > "$work/run_np1.log" 2>&1 \
  || { cat "$work/run_np1.log"; exit 1; }
[ "$(grep -vc '^#' "$work/p1/rejected.txt")" -eq 0 ]
$CHECK "$RAW" "$work/p1" "$HOPS" 2 "$work/p2"

step "1 and 2 ranks agree (fresh 2-rank run without bad files)"
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/run2.log" 2>&1 || { cat "$work/run2.log"; exit 1; }
$CHECK "$RAW" "$work/p2" "$HOPS" 2 "$work/p1"

step "tpuperf-inspect reads shards and compares a stored graph with its source"
shard=$(ls "$work/p2"/layout_nlp_random/train/*.h5 | head -1)
"$BIN/tpuperf-inspect" "$shard" | grep -q "shard of layout:nlp:random train"
name=$("$BIN/tpuperf-inspect" "$shard" | sed -n 2p | awk '{print $1}')
"$BIN/tpuperf-inspect" "$shard" --graph "$name" --compare | grep -q "identical: every field matches"
other=$(ls "$RAW"/layout/nlp/random/train/*.npz | grep -v "/$name.npz" | head -1)
set +e
"$BIN/tpuperf-inspect" "$shard" --graph "$name" --compare --source "$other" > "$work/cmp.txt"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q "DIFFERENT fields" "$work/cmp.txt" || { cat "$work/cmp.txt"; echo "compare missed a difference"; exit 1; }
"$BIN/tpuperf-inspect" --json "$shard" | $PY -c "import json,sys; d=json.load(sys.stdin)['files'][0]; assert d['type']=='shard' and len(d['graphs'])>0, d"

step "inspect --compare prunes as the manifest says, also a manifest from before per-collection hops and bridges"
# compare_xla_default DIR: the first xla:default train graph of DIR recomputes identically.
compare_xla_default() {
  local shard name
  shard=$(ls "$1"/layout_xla_default/train/*.h5 | head -1)
  name=$("$BIN/tpuperf-inspect" "$shard" | sed -n 2p | awk '{print $1}')
  "$BIN/tpuperf-inspect" "$shard" --graph "$name" --compare > "$work/cmp_xd.txt" \
    || { cat "$work/cmp_xd.txt"; echo "compare of $1 found a difference"; exit 1; }
}
compare_xla_default "$work/p2"
# Preprocessed with 1 hop everywhere and no bridges, then the bridges removed from the
# recorded settings and the per-collection list of that time added, as a manifest written
# before the collections: section: --compare must prune as that run did (PruneRules::saved
# reads the bridges' missing key as 0, not the schema's 3; the list reads as the section).
mpi 1 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.processed_dir="$work/p_old" \
  --set "data.collections=[layout:xla:default]" --set "collections.layout:xla:default.preprocess.prune_hops=null" \
  --set preprocess.prune_bridges=0 > "$work/old.log" 2>&1 || { cat "$work/old.log"; exit 1; }
$PY - "$work/p_old/manifest.yaml" <<'PY'
import json, sys, yaml
path = sys.argv[1]
m = json.load(open(path))  # manifest.yaml is JSON, a subset of YAML
settings = yaml.safe_load(m["settings"])
assert "collections" not in settings, settings
assert settings["preprocess"].pop("prune_bridges") == 0, settings
settings["preprocess"]["prune_hops_by_collection"] = []
m["settings"] = yaml.safe_dump(settings)
json.dump(m, open(path, "w"))
PY
compare_xla_default "$work/p_old"

step "a rerun does nothing"
before=$(stat -c %Y.%s "$work/p2/manifest.yaml"; ls -R "$work/p2" | md5sum)
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/run3.log" 2>&1
grep -q "nothing to do" "$work/run3.log" || { cat "$work/run3.log"; exit 1; }
after=$(stat -c %Y.%s "$work/p2/manifest.yaml"; ls -R "$work/p2" | md5sum)
[ "$before" = "$after" ] || { echo "rerun changed the output"; exit 1; }

step "a changed valid file redoes only its unit (and removes a killed run's temporary files)"
train_shards=$(ls "$work/p2/layout_nlp_default/train")
touch "$work/p2/rejected.txt.tmp.99999" "$work/p2/manifest.yaml.tmp.99999" "$work/p2/preprocess_config.yaml.tmp.99999"
$PY - "$RAW" <<'PY'
import os, sys, numpy as np
d = os.path.join(sys.argv[1], "layout/nlp/default/valid")
f = os.path.join(d, sorted(os.listdir(d))[0])
z = dict(np.load(f)); z["config_runtime"] = z["config_runtime"] + 7
np.savez_compressed(f, **z)
PY
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/run4.log" 2>&1 || { cat "$work/run4.log"; exit 1; }
grep -q "redo layout:nlp:default valid" "$work/run4.log" || { cat "$work/run4.log"; exit 1; }
[ "$(grep -c "redo " "$work/run4.log")" -eq 1 ] || { grep "redo " "$work/run4.log"; echo "more than one unit redone"; exit 1; }
[ "$(ls "$work/p2/layout_nlp_default/train")" = "$train_shards" ] || { echo "train shards were rewritten"; exit 1; }
$CHECK "$RAW" "$work/p2" "$HOPS" 2

! ls "$work/p2/"*.tmp.99999 2> /dev/null || { echo "a killed run's temporary files were left"; exit 1; }
step "a transform-only setting refits without rewriting shards"
shards_before=$(find "$work/p2" -name 'g*-r*.h5' | sort | md5sum)
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set preprocess.log_columns=false > "$work/run5.log" 2>&1 \
  || { cat "$work/run5.log"; exit 1; }
grep -q "transform settings changed" "$work/run5.log"
[ "$(find "$work/p2" -name 'g*-r*.h5' | sort | md5sum)" = "$shards_before" ] || { echo "shards were rewritten"; exit 1; }

step "killed runs are recovered"
cp -r "$work/p2" "$work/reference"   # an uninterrupted run's output (log_columns=false)
for fault in preprocess.file_done:1 preprocess.file_done:5 preprocess.before_manifest preprocess.after_manifest; do
  set +e
  TPUPERF_FAULT=$fault mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set preprocess.log_columns=false \
    --force > "$work/kill.log" 2>&1
  rc=$?
  set -e
  [ "$rc" -ne 0 ] || { cat "$work/kill.log"; echo "fault $fault did not kill the run"; exit 1; }
  # Whatever the kill left, the manifest describes a complete output...
  $CHECK "$RAW" "$work/p2" "$HOPS" 2 > /dev/null
  # ...and the next run finishes with the uninterrupted result.
  mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set preprocess.log_columns=false > "$work/rec.log" 2>&1 \
    || { cat "$work/rec.log"; exit 1; }
  $CHECK "$RAW" "$work/p2" "$HOPS" 2 "$work/reference" > /dev/null
  leftovers=$(find "$work/p2" -name '*.tmp*' | wc -l)
  [ "$leftovers" -eq 0 ] || { echo "temporary files left after recovery"; exit 1; }
  on_disk=$(find "$work/p2" -name 'g*-r*.h5' | wc -l)
  listed=$($PY -c "import yaml,sys; print(len(yaml.safe_load(open(sys.argv[1]))['shards']))" "$work/p2/manifest.yaml")
  [ "$on_disk" -eq "$listed" ] || { echo "unreferenced shards left: $on_disk on disk, $listed listed"; exit 1; }
  echo "recovered after kill at $fault"
done
step "a rerun over fewer collections leaves the others' shards on disk"
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.collections=[tile:xla] \
  --set preprocess.prune_hops=2 > "$work/fewer.log" 2>&1 || { cat "$work/fewer.log"; exit 1; }
ls "$work/p2"/layout_nlp_random/train/*.h5 > /dev/null || { echo "other collections' shards were deleted"; exit 1; }
echo "PASS test_preprocess"
