#!/usr/bin/env bash
# Every tool's command line behaves under mpirun as when run plainly (common/cli/,
# run_tool, run_mpi_tool): for each of the 7 tools,
#   --help         exits 0 and prints the help exactly once, and nothing from Open MPI;
#   --bogus        exits 2 and prints the one error line exactly once: under `mpirun -q`
#                  nothing else at all; under plain mpirun only mpirun's own notice of a
#                  non-zero exit, which no program can avoid (common/mpi/mpi_env.h), and
#                  never MPI_ABORT, "without calling finalize" or a SIGTERM line;
# and bad numbers (--seed -1, --seed 5x, --threads 0, ...) are one-line errors, exit 2.
# Usage: test_tools_under_mpirun.sh BIN_DIR SRC_DIR. Writes only under BIN_DIR/.. .
set -u
BIN=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$BIN/../test_tools_under_mpirun"
rm -rf "$work" && mkdir -p "$work"
out="$work/stdout" err="$work/stderr"

TOOLS=(tpuperf-preprocess tpuperf-train tpuperf-synth tpuperf-inspect tpuperf-featurize
       tpuperf-score tpuperf-rank)
# What Open MPI prints when a job goes wrong; none of it may appear where a tool ends cleanly.
BANNER='MPI_ABORT|without calling finalize|exiting improperly|Primary job|-----|mpirun (has exited|detected|noticed)|SIGTERM'
# The lines of mpirun's notice of a non-zero exit, which only `mpirun -q` removes.
NOTICE='^(-+|Primary job  terminated normally, but [0-9]+ process(es)? returned|a non-zero exit code\. Per user-direction, the job has been aborted\.|mpirun detected that one or more processes exited with non-zero status, thus causing|the job to be terminated\. The first process to do so was:|  Process name: .*|  Exit code: +2|)$'

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
show() { echo "  --- stdout:"; sed 's/^/  | /' "$out"; echo "  --- stderr:"; sed 's/^/  | /' "$err"; }

# run LABEL CMD...: runs CMD with stdout/stderr in $out/$err; sets $code.
run() {
  local label=$1; shift
  "$@" > "$out" 2> "$err"
  code=$?
  echo "ran: $label (exit $code)"
}
expect_code() { [ "$code" -eq "$1" ] || { fail "$2: exit $code, expected $1"; show; }; }
expect_empty() { [ ! -s "$1" ] || { fail "$2: $(basename "$1") should be empty"; show; }; }
expect_no_banner() {
  if grep -Eq "$BANNER" "$1"; then fail "$2: Open MPI banner text in $(basename "$1")"; show; fi
}
mpi() { mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2 "$@"; }

for tool in "${TOOLS[@]}"; do
  exe="$BIN/$tool"
  if [ ! -x "$exe" ]; then
    fail "$exe is missing (cmake --build BUILD --target $tool)"
    continue
  fi
  usage_line="usage: $tool \[options\]"  # a regex
  bogus_line="$tool: error: unknown option --bogus (see $tool --help)"

  # Plainly: the reference help text, one usage line, nothing on stderr.
  run "$tool --help" "$exe" --help
  expect_code 0 "$tool --help"
  expect_empty "$err" "$tool --help"
  [ "$(grep -c "^$usage_line" "$out")" -eq 1 ] || { fail "$tool --help: not one 'usage: $tool' line"; show; }
  cp "$out" "$work/$tool.help"

  run "$tool --bogus" "$exe" --bogus
  expect_code 2 "$tool --bogus"
  expect_empty "$out" "$tool --bogus"
  [ "$(cat "$err")" = "$bogus_line" ] || { fail "$tool --bogus: stderr is not exactly '$bogus_line'"; show; }

  # Under mpirun: the same help, once (stdout equals one plain help), and no banner.
  run "mpirun -np 2 $tool --help" mpi "$exe" --help
  expect_code 0 "mpirun $tool --help"
  cmp -s "$out" "$work/$tool.help" || { fail "mpirun $tool --help: stdout is not the help printed once"; show; }
  expect_empty "$err" "mpirun $tool --help"
  expect_no_banner "$err" "mpirun $tool --help"

  # mpirun -q: the error line once and nothing else, exit 2.
  run "mpirun -q -np 2 $tool --bogus" mpi -q "$exe" --bogus
  expect_code 2 "mpirun -q $tool --bogus"
  expect_empty "$out" "mpirun -q $tool --bogus"
  [ "$(cat "$err")" = "$bogus_line" ] || { fail "mpirun -q $tool --bogus: stderr is not exactly '$bogus_line'"; show; }

  # Plain mpirun: the error line once; besides it only mpirun's unavoidable notice.
  run "mpirun -np 2 $tool --bogus" mpi "$exe" --bogus
  expect_code 2 "mpirun $tool --bogus"
  expect_empty "$out" "mpirun $tool --bogus"
  [ "$(grep -cxF "$bogus_line" "$err")" -eq 1 ] || { fail "mpirun $tool --bogus: error line not exactly once"; show; }
  if grep -vxF "$bogus_line" "$err" | grep -Evq "$NOTICE"; then
    fail "mpirun $tool --bogus: stderr holds more than mpirun's non-zero-exit notice"; show
  fi
  if grep -Eq 'MPI_ABORT|without calling finalize|exiting improperly|SIGTERM' "$err"; then
    fail "mpirun $tool --bogus: abort or finalize banner"; show
  fi
done

# --help-config of an MPI tool: the config keys, once.
if [ -x "$BIN/tpuperf-preprocess" ]; then
  run "mpirun -np 2 tpuperf-preprocess --help-config" mpi "$BIN/tpuperf-preprocess" --help-config
  expect_code 0 "mpirun tpuperf-preprocess --help-config"
  expect_empty "$err" "mpirun tpuperf-preprocess --help-config"
  [ "$(grep -c '^config keys' "$out")" -eq 1 ] || { fail "--help-config not printed exactly once"; show; }
fi

# Bad numbers: one line naming option and value, exit 2, plainly and under mpirun -q.
# bad_number EXPECTED_LINE TOOL ARGS...
bad_number() {
  local line=$1 tool=$2; shift 2
  [ -x "$BIN/$tool" ] || return 0  # reported missing above
  for launcher in plain mpirun; do
    if [ $launcher = plain ]; then
      run "$tool $*" "$BIN/$tool" "$@"
    else
      run "mpirun -q -np 2 $tool $*" mpi -q "$BIN/$tool" "$@"
    fi
    expect_code 2 "$launcher $tool $*"
    expect_empty "$out" "$launcher $tool $*"
    [ "$(cat "$err")" = "$tool: error: $line" ] || { fail "$launcher $tool $*: stderr is not exactly '$tool: error: $line'"; show; }
  done
}
none="$work/never_written"
bad_number "--seed expects an integer >= 0, got '-1'" tpuperf-score --submission "$none" --truth "$none" --seed -1
bad_number "--seed expects an integer >= 0, got '5x'" tpuperf-score --submission "$none" --truth "$none" --seed 5x
bad_number "--seed expects an integer >= 0, got '1.5'" tpuperf-synth --out "$none" --seed 1.5
bad_number "--threads expects an integer >= 1, got '0'" tpuperf-synth --out "$none" --threads 0
bad_number "--fraction expects a number in (0, 1], got '0'" tpuperf-synth --out "$none" --fraction 0
bad_number "--threads expects an integer >= 1, got ' 4'" tpuperf-featurize --out "$none" --threads " 4" x.pb
bad_number "--top expects an integer >= 1, got '0'" tpuperf-rank --run "$none" --top 0 x.npz
bad_number "--threads expects an integer >= 1, got '2x'" tpuperf-rank --run "$none" --threads 2x x.npz
[ ! -e "$none" ] || fail "a rejected command wrote $none"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
rm -rf "$work"
echo "PASS: ${#TOOLS[@]} tools: --help once (exit 0), --bogus one line (exit 2), plainly and under mpirun; bad numbers rejected"
