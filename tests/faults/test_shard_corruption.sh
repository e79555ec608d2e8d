#!/usr/bin/env bash
# A flipped byte in a shard (issue #6): the fletcher32 checksums must turn silent data
# corruption into an error of tpuperf-train (mpirun -np 2) that names the shard, the
# graph and the checksum, with exit code 2, promptly; tpuperf-inspect --graph must
# report the same. One byte is flipped in the first stored chunk of a dataset of a copy
# of a good processed_dir, for three datasets read at different times:
#   node_feat of a tile train shard        (read when the graph sets are loaded)
#   node_config_packed of a layout shard   (read on demand, a slate at a time, mid-run)
#   num_configs, a per-graph table         (read when the shard is opened; no one graph)
# Usage: test_shard_corruption.sh BIN_DIR SRC_DIR
source "$(dirname "$0")/lib.sh"

make_tree "$work" 5
add_train_config "$work" 2 "tile:xla, layout:nlp:random"
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 || { cat "$work/pre.log"; fail "preprocessing"; }

step "the intact copy trains"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --set output.dir="$work/run0" > "$work/train0.log" 2>&1 \
  || { tail -20 "$work/train0.log"; fail "training on the intact shards"; }

rows=()
failures=0
for spec in "tile_xla/train node_feat" "layout_nlp_random/train node_config_packed" "layout_nlp_random/valid num_configs"; do
  read -r dir dataset <<< "$spec"
  name=${dir//\//_}_$dataset
  copy=$work/p_$name
  cp -a "$work/processed" "$copy"
  shard=$(ls "$copy/$dir"/*.h5 | head -1)
  rel=${shard#"$copy/"}
  mapfile -t graphs < <($CHECK flip "$shard" "$dataset")
  problems=""
  run_timed "$work/train_$name" 120 mpirun --bind-to none -np 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" \
    --set data.processed_dir="$copy" --set output.dir="$work/run_$name"
  log=$work/train_$name.log
  [ "$RC" -eq 2 ] || problems+="exit $RC, expected 2; "
  err=$(grep -m1 "tpuperf-train: error:" "$log" || true)
  [ -n "$err" ] || problems+="no error line; "
  [[ "$err" == *"$rel"* ]] || problems+="the error does not name the shard $rel; "
  [[ "$err" == *"checksum"* ]] || problems+="the error does not say checksum; "
  [[ "$err" == *"$dataset"* ]] || problems+="the error does not name the dataset; "
  named=$(grep -oE "graph '[^']+'" <<< "$err" | head -1 | sed -E "s/graph '(.*)'/\1/" || true)
  if [ "${#graphs[@]}" -gt 0 ]; then
    printf "%s\n" "${graphs[@]}" | grep -qxF "$named" || problems+="names graph '${named}', not one with rows in the chunk; "
  fi
  # tpuperf-inspect reads the same graph (or opens the shard) and must say the same.
  target=${named:-${graphs[0]:-}}
  set +e
  if [ -n "$target" ]; then "$BIN/tpuperf-inspect" "$shard" --graph "$target" > "$work/inspect_$name.log" 2>&1
  else "$BIN/tpuperf-inspect" "$shard" > "$work/inspect_$name.log" 2>&1; fi
  irc=$?
  set -e
  [ "$irc" -eq 2 ] && grep -q "checksum" "$work/inspect_$name.log" || problems+="tpuperf-inspect: exit $irc, no checksum error; "
  echo "$dataset in $rel: train exit $RC after ${SECS} s; inspect exit $irc"
  echo "  $err"
  outcome=PASS; [ -z "$problems" ] || { outcome="FAIL: $problems"; failures=$((failures + 1)); }
  rows+=("| \`$dataset\` of \`$rel\` | ${#graphs[@]} | $RC | $SECS | ${err#tpuperf-train: error: } | $irc | $outcome |")
done

{
  echo "## A flipped byte in a shard (test_shard_corruption.sh)"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, ${SECONDS} s in all. tpuperf-train (mpirun -np 2,"
  echo "tile:xla and layout:nlp:random of a tiny tree) on a copy of the processed output with one"
  echo "byte flipped in the middle of the first stored chunk of a dataset. Passing needs exit 2 and"
  echo "an error naming the shard, the dataset, the checksum and (for row datasets) a graph with"
  echo "rows in that chunk; tpuperf-inspect on the shard must fail with the checksum too."
  echo
  echo "| flipped | graphs in the chunk | train exit | s | trainer's error | inspect exit | outcome |"
  echo "|---|---|---|---|---|---|---|"
  printf "%s\n" "${rows[@]}" | sed "s|$work/||g"
  echo
  [ "$failures" -eq 0 ] && echo "Outcome: PASS" || echo "Outcome: FAIL ($failures cases)"
} > "$work/section.md"
write_section shard_corruption "$work/section.md"
[ "$failures" -eq 0 ] || fail "$failures cases failed"
echo "PASS test_shard_corruption (${SECONDS} s)"
