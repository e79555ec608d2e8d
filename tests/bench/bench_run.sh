# Sourced by the benches that rank with ONE tpuperf run trained on the bench tree
# (bench_adapt_budget.sh trains and caches it in $TPUPERF_BENCH_DIR/adapt-budget/run;
# bench_tuning_loop.sh uses that cache when its request matches, else trains its own).
# Defines:
#   BENCH_RUN_COLLECTIONS  the five collections, as data.collections reads them
#   RUN_SETTINGS           the run's --set options: 2 folds, 8 epochs of 20 steps, hidden 32 x 2
#                          layers, output.tile_keep_default=false (the held-out configs' config 0
#                          is no compiler default)
#   bench_run_request BIN RAW   the line a cached run must have been trained for (the settings,
#                          the schema's defaults and the tree's stamp)
#   train_tree DIR NPZ COLLECTIONS RUN SETTINGS...   preprocess NPZ into DIR/processed and train
#                          the run RUN (needs the caller's BIN and mpi)
BENCH_RUN_COLLECTIONS="[tile:xla,layout:xla:random,layout:xla:default,layout:nlp:random,layout:nlp:default]"
RUN_SETTINGS=(--set preprocess.folds=2 --set train.epochs=8 --set train.steps_per_epoch=20 --set train.lr=0.003
  --set train.tile_slate=64 --set train.layout_slate=16 --set train.eval_max_configs=100
  --set model.tile.hidden=32 --set model.tile.layers=2 --set model.layout.hidden=32 --set model.layout.layers=2
  --set output.tile_keep_default=false)

bench_run_request() {
  local bin=$1 raw=$2
  echo "$BENCH_RUN_COLLECTIONS ${RUN_SETTINGS[*]} defaults:$("$bin/tpuperf-train" --help-config | sha256sum | cut -c1-16) tree:$(cat "$raw/.complete" 2>/dev/null; stat -c %Y "$raw/.complete")"
}

train_tree() {
  local dir=$1 npz=$2 colls=$3 run=$4; shift 4
  mkdir -p "$dir"
  rm -rf "$dir/processed" "$run"
  cat > "$dir/config.yaml" <<YAML
data:
  raw_dir: $npz
  processed_dir: $dir/processed
  collections: $colls
output:
  dir: $run
YAML
  mpi "$BIN/tpuperf-preprocess" --config "$dir/config.yaml" "$@" > "$dir/preprocess.log" 2>&1 \
    || { tail -20 "$dir/preprocess.log"; exit 1; }
  mpi "$BIN/tpuperf-train" --config "$dir/config.yaml" --fresh "$@" > "$dir/train.log" 2>&1 \
    || { tail -30 "$dir/train.log"; exit 1; }
}
