#!/usr/bin/env bash
# A run whose config gives collections their own values (the collections: section) on a
# generated tiny tree (2 ranks, 2 folds, three collections):
# - layout:xla:random trains a narrower model (model.layout.hidden 16) and its graphs are
#   pruned by 0 hops (preprocess.prune_hops), the others as the top level says;
# - the log and train_config.yaml hold the merged section (the file's entries and the
#   schema's default ones), and each fold logs the model its collection asked for;
# - each checkpoint records its collection's model: tpuperf-rank ranks as the run
#   predicted even when train_config.yaml no longer holds the section;
# - tpuperf-rank prunes as the preprocessing did: its --csv equals submission.csv, and
#   without the collection's own hops in preprocess_settings.yaml it does not;
# - a run directory of an older version (*_by_collection keys in its files) still ranks.
# Usage: test_rank_overlay.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
source "$SRC/tests/tiny_train.sh"
work=$(mktemp -d "$BIN/../test_rank_overlay.XXXXXX")  # under the build directory
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
step() { echo; echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }
# expect_line FILE FIXED-STRING: FILE holds the string.
expect_line() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
# drop_entry YAML_FILE KEY...: removes the entry at the nested KEYs of a YAML file.
drop_entry() {
  python3 - "$@" <<'PY'
import sys, yaml
path, *keys = sys.argv[1:]
doc = yaml.safe_load(open(path))
node = doc
for key in keys[:-1]:
    node = node[key]
del node[keys[-1]]
yaml.safe_dump(doc, open(path, "w"))
PY
}
# rank_csv RUN_DIR OUT: tpuperf-rank --csv of every test file of the run's collections.
rank_csv() { "$BIN/tpuperf-rank" --run "$1" --csv "${tests[@]}" > "$2" 2> "$2.err" || { cat "$2.err"; fail "rank $1"; }; }

"$BIN/tpuperf-synth" --out "$work/gen" --scale tiny --seed 11 > /dev/null 2>&1
cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $work/gen/npz
  processed_dir: $work/processed
  collections: [tile:xla, layout:xla:random, layout:nlp:random]
preprocess:
  folds: 2
output:
  dir: $work/run
$(tiny_train_yaml 2 32 1 1)
collections:
  layout:xla:random:
    preprocess.prune_hops: 0
    model: {layout: {hidden: 16}}
YAML
mpirun --bind-to none -np 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 \
  || { tail "$work/pre.log"; fail "preprocessing"; }
mpirun --bind-to none -np 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" \
  --set collections.layout:nlp:random.train.lr=0.002 > "$work/train.log" 2>&1 \
  || { tail "$work/train.log"; fail "training"; }

step "the log and train_config.yaml hold the merged section"
for line in "collections.layout:xla:random.preprocess.prune_hops = 0" \
            "collections.layout:xla:random.model.layout.hidden = 16" \
            "collections.layout:xla:random.model.layout.dropout = 0.29999999999999999" \
            "collections.layout:nlp:random.train.lr = 0.002" \
            "collections.tile:xla.train.ema_decay = 0"; do
  expect_line "$work/train.log" "$line"
done
python3 - "$work/run/train_config.yaml" "$work/run/preprocess_settings.yaml" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
own = cfg["collections"]
assert own["layout:xla:random"]["model.layout.hidden"] == 16, own
assert own["layout:xla:random"]["preprocess.prune_hops"] == 0, own
assert abs(own["layout:xla:random"]["model.layout.dropout"] - 0.3) < 1e-12, own  # the default entry
assert own["layout:nlp:random"]["train.lr"] == 0.002, own  # from --set
assert own["layout:nlp:random"]["model.layout.attention_heads"] == 0, own
assert own["tile:xla"]["train.ema_decay"] == 0, own
assert cfg["model"]["layout"]["hidden"] == 32 and cfg["preprocess"]["prune_hops"] == 1, cfg
settings = yaml.safe_load(open(sys.argv[2]))
assert settings["collections"] == {"layout:xla:random": {"preprocess.prune_hops": 0}}, settings["collections"]
print("train_config.yaml:", {k: v for k, v in own.items()})
PY

step "each fold trains the model its collection asked for"
expect_line "$work/train.log" "layout:xla:random fold 0: model sage_shape_context (hidden 16, 1 layers, dropout 0.3, 4 attention heads)"
expect_line "$work/train.log" "layout:nlp:random fold 1: model sage_shape_context (hidden 32, 1 layers, dropout 0.1, 0 attention heads)"

step "tpuperf-rank ranks as the run predicted (the collection's pruning and model)"
mapfile -t tests < <(find "$work/gen/npz/tile" "$work/gen/npz/layout/xla/random" "$work/gen/npz/layout/nlp/random" \
  -path '*/test/*.npz' | sort)
rank_csv "$work/run" "$work/rank.csv"
cmp "$work/rank.csv" "$work/run/submission.csv" || { diff "$work/rank.csv" "$work/run/submission.csv" | head; fail "rank != submission"; }
echo "${#tests[@]} test files: rows equal the submission's"

step "the checkpoints record each collection's model"
# Without the section in train_config.yaml the configured model of layout:xla:random would
# be 32 wide: the ranking can only stay the same if the checkpoints say 16.
cp -r "$work/run" "$work/no_section"
drop_entry "$work/no_section/train_config.yaml" collections layout:xla:random model.layout.hidden
rank_csv "$work/no_section" "$work/no_section.csv"
cmp "$work/no_section.csv" "$work/run/submission.csv" || fail "the checkpoints do not carry layout:xla:random's model"
echo "ranked the same without the section's model entry"

step "without the collection's own hops the ranker prunes otherwise"
cp -r "$work/run" "$work/one_hop"
drop_entry "$work/one_hop/preprocess_settings.yaml" collections
rank_csv "$work/one_hop" "$work/one_hop.csv"
if cmp -s "$work/one_hop.csv" "$work/run/submission.csv"; then fail "the pruning did not change the ranking"; fi
diff <(grep -v '^layout:xla:random' "$work/one_hop.csv") <(grep -v '^layout:xla:random' "$work/run/submission.csv") \
  || fail "other collections changed"
echo "layout:xla:random's rows differ with 1 hop; the other collections' do not"

step "a run directory of an older version (the lists in its files) still ranks"
cp -r "$work/run" "$work/old"
python3 - "$work/old/train_config.yaml" "$work/old/preprocess_settings.yaml" <<'PY'
import sys, yaml
cfg_path, settings_path = sys.argv[1:]
cfg = yaml.safe_load(open(cfg_path))
own = cfg.pop("collections")
# The lists and kind twins of that time, holding what the section holds.
cfg["model"]["layout"]["dropout_by_collection"] = ["layout:xla:random=0.3"]
cfg["model"]["layout"]["attention_heads_by_collection"] = ["layout:xla:default=0", "layout:nlp:random=0"]
cfg["train"]["ema_decay_by_collection"] = ["tile:xla=0"]
del cfg["train"]["min_steps_per_epoch"]
cfg["train"]["tile_min_steps_per_epoch"] = 60
cfg["train"]["layout_min_steps_per_epoch"] = 20
cfg["train"]["min_steps_per_epoch_by_collection"] = ["layout:nlp:random=40", "layout:nlp:default=40",
                                                      "layout:xla:default=40"]
cfg["preprocess"]["prune_hops_by_collection"] = ["layout:xla:random=0"]
# The model entry the old lists could not hold: recorded by the checkpoints anyway.
assert own["layout:xla:random"]["model.layout.hidden"] == 16
yaml.safe_dump(cfg, open(cfg_path, "w"))
settings = yaml.safe_load(open(settings_path))
settings.pop("collections")
settings["preprocess"]["prune_hops_by_collection"] = ["layout:xla:random=0"]
yaml.safe_dump(settings, open(settings_path, "w"))
PY
grep -q "prune_hops_by_collection" "$work/old/preprocess_settings.yaml"
rank_csv "$work/old" "$work/old.csv"
cmp "$work/old.csv" "$work/run/submission.csv" || fail "the old run directory ranks differently"
expect_line "$work/old.csv.err" "preprocess.prune_hops_by_collection as collections: {layout:xla:random: {preprocess.prune_hops: 0}}"
[ "$(grep -c "preprocess_settings.yaml: keys of an older tpuperf" "$work/old.csv.err")" -eq 1 ] \
  || fail "the translation of preprocess_settings.yaml is not logged once"
echo "the old run directory ranks as the run predicted"
# A user's config that still names a list is refused with the new spelling.
printf 'preprocess:\n  prune_hops_by_collection: [layout:xla:random=0]\n' > "$work/old_user.yaml"
if "$BIN/tpuperf-train" --config "$work/old_user.yaml" > "$work/refused.log" 2>&1; then
  fail "a config with *_by_collection keys was accepted"
fi
expect_line "$work/refused.log" "key 'preprocess.prune_hops_by_collection': was replaced by the collections: section (see --help-config); write collections: {layout:xla:random: {preprocess.prune_hops: 0}}"

step "--help-config shows the section and its defaults"
"$BIN/tpuperf-train" --help-config > "$work/help.txt"
expect_line "$work/help.txt" "--set collections.layout:xla:random.model.layout.dropout=0.3"
expect_line "$work/help.txt" "layout:xla:random: model.layout.dropout: 0.3"
if grep -q "by_collection" "$work/help.txt"; then fail "--help-config still names a *_by_collection key"; fi
echo "PASS"
