#!/usr/bin/env bash
# Bad tuning records through the real tpuperf-featurize (issue 16). Every case of
# make_bad_records.py (a real record edited at the wire level: cut, garbled, a run without
# profile or config, a config naming a node outside the module, an operand id that points
# nowhere, a kernel or module without a default run, ...) is featurized beside the good
# record of the other kind, then all cases at once. Each run must exit with 3 within its
# time limit; reject exactly what the case expects, naming file, record and reason in
# --rejected and the log; and write every other kernel and file equal to the good run's
# (a rejected run: its file equals the good one without that config).
# Usage: test_bad_records.sh BIN_DIR SRC_DIR
source "$(dirname "$0")/lib.sh"

REAL=$SRC/tests/data/real
GENR="$PY $SRC/tests/faults/make_bad_records.py"
FEAT=$BIN/tpuperf-featurize

step "the good records"
run_timed "$work/good" 60 "$FEAT" --out "$work/good_out" "$REAL/op_tuning_data.pb" "$REAL/module_tuning_data_layout.pb"
[ "$RC" -eq 0 ] || { cat "$work/good.log"; fail "good run exited with $RC"; }
echo "good run: ${SECS} s, peak RSS $((RSS_KB / 1024)) MB"

$GENR stage "$REAL" "$work/stage" "$work/cases.json"
mapfile -t cases < <($PY -c 'import json,sys; [print(c["case"], c["file"], c["source"]) for c in json.load(open(sys.argv[1]))]' "$work/cases.json")

record() {  # record NAME OUT_DIR
  printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$1" "$2" "$2.log" "$RC" "$SECS" "$RSS_KB" "$2.rejected.tsv" >> "$work/runs.tsv"
}

step "each bad record beside the good record of the other kind"
mkdir -p "$work/all"
for line in "${cases[@]}"; do
  read -r c file source <<< "$line"
  other=op_tuning_data.pb
  [ "$source" = op_tuning_data.pb ] && other=module_tuning_data_layout.pb
  out=$work/out_$c
  run_timed "$out" 60 "$FEAT" --out "$out" --rejected "$out.rejected.tsv" "$work/stage/$file" "$REAL/$other"
  record "$c" "$out"
  echo "$c: exit $RC, ${SECS} s, $((RSS_KB / 1024)) MB"
  cp -r "$work/stage/$file" "$work/all/$c.pb"
done

step "all bad records at once"
out=$work/out_all
run_timed "$out" 60 "$FEAT" --out "$out" --rejected "$out.rejected.tsv" "$work/all"/*.pb
record all "$out"
echo "all at once: exit $RC, ${SECS} s"

step "checks"
set +e
$CHECK bad-records "$work/cases.json" "$work/runs.tsv" "$work/good_out" "$work/stage" "$work/all" "$work/table.md"
rc=$?
set -e

table_section bad_records "Bad tuning records through tpuperf-featurize (test_bad_records.sh)" "$rc" <<TEXT
$(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) cores, ${SECONDS} s in all. Each case is one real
record (tests/data/real) edited at the protobuf wire level, featurized beside the good record
of the other kind; then all cases at once. A run passes when it exits with 3, rejects exactly
what the case expects (file, record and reason in --rejected and the log) and writes every
other output equal to the good run's ('outputs kept' counts them; a rejected run's file must
equal the good one without that config).
TEXT
echo "PASS test_bad_records (${SECONDS} s)"
