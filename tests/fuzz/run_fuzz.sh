#!/usr/bin/env bash
# Runs the npz/npy fuzz target for a bounded time on a fresh seed corpus; exits non-zero
# when libFuzzer finds a crash, a sanitizer report, a leak, a timeout or an allocation over
# the limit (the input is kept in $TPUPERF_FUZZ_ARTIFACTS, default /tmp/tpuperf-fuzz-artifacts).
# Usage: run_fuzz.sh FUZZ_BIN_DIR SECONDS [SYNTH_BIN_DIR]
#   FUZZ_BIN_DIR holds fuzz_npz (a -DTPUPERF_FUZZ=ON clang build), SYNTH_BIN_DIR
#   tpuperf-synth for the seeds (default: FUZZ_BIN_DIR).
set -euo pipefail
FUZZ=$1/fuzz_npz
SECS=$2
SYNTH=${3:-$1}
ART=${TPUPERF_FUZZ_ARTIFACTS:-/tmp/tpuperf-fuzz-artifacts}
[ -x "$FUZZ" ] || { echo "run_fuzz.sh: no fuzz target at $FUZZ (configure with clang and -DTPUPERF_FUZZ=ON)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$ART"
bash "$(dirname "$0")/make_seed_corpus.sh" "$SYNTH" "$work/seeds"
# One process (the machine's cores are shared); inputs up to 64 KiB. A 64 KiB input may
# legitimately inflate to ~64 MB (deflate's ratio limit), far below the 1 GB malloc limit,
# so hitting that limit means an allocation the input did not justify.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$FUZZ" "$work/corpus" "$work/seeds" -max_total_time="$SECS" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$ART/" -print_final_stats=1 \
  > "$work/fuzz.log" 2>&1 || { tail -60 "$work/fuzz.log"; echo "FAIL: the fuzzer found a problem; input kept in $ART/"; exit 1; }
grep -E "^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added" "$work/fuzz.log" | tail -5
echo "PASS fuzz_npz: ${SECS} s, corpus grew to $(ls "$work/corpus" | wc -l) inputs"
