#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: set-up (packages + build), then ctest
# (unit, MPI, integration and faults tests). Extra arguments go to ctest, e.g. -L unit.
# A full run (no arguments) then checks the kernels as one portable binary and the readers
# of raw data twice more:
#   - the fused kernels' tests built with TPUPERF_NATIVE=OFF in build-portable/, on every
#     vector path this CPU has and under qemu-x86_64 -cpu Haswell (an AVX2 CPU without
#     AVX-512: the binary must choose its avx2 path and run no AVX-512 instruction);
#   - the readers' unit tests (and the featurizer's) built with ASan and UBSan (TPUPERF_SANITIZE,
#     no trainer) in build-asan/, every finding fatal;
#   - the libFuzzer target of the npz/npy parser, built with clang in build-fuzz/ and run
#     for TPUPERF_FUZZ_SECONDS (default 60) on a seed corpus from tpuperf-synth.
# TPUPERF_SANITIZERS=1 runs these stages also with ctest arguments, =0 never. Every stage
# runs even if an earlier one failed; the exit code is non-zero if any failed.
# Everything it writes lands under the build directories (the faults suite's results in
# build/faults/RESULTS.md); `bash jobs/update_docs.sh` copies those into tracked documents.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/setup.sh
BUILD_DIR=${TPUPERF_BUILD_DIR:-build}
ASAN_DIR=${TPUPERF_ASAN_BUILD_DIR:-build-asan}
FUZZ_DIR=${TPUPERF_FUZZ_BUILD_DIR:-build-fuzz}
PORTABLE_DIR=${TPUPERF_PORTABLE_BUILD_DIR:-build-portable}
# mpirun refuses to run as root unless told; the tests' mpirun lines pass the flags,
# these cover mpirun started by the integration scripts.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The tests of the npz/npy readers, graph validation and shards, and of the featurizer,
# which parses tuning records from anywhere.
READER_TESTS=(test_npy test_npz test_npz_numpy test_npz_faults test_graph test_shard test_shard_h5py test_hdf5_chunk
              test_shard_faults test_featurize_records test_featurize_real test_write_queue)

# build_targets DIR LABEL TARGET...: builds quietly, the log in DIR/build.log.
build_targets() {
  local dir=$1 label=$2; shift 2
  echo "test: building $label in $dir"
  local t0=$SECONDS
  if ! cmake --build "$dir" -j "$(nproc)" --target "$@" > "$dir/build.log" 2>&1; then
    grep -E 'error' "$dir/build.log" | head -20 >&2 || true
    echo "test: $label build failed; log in $dir/build.log" >&2
    return 1
  fi
  echo "test: built in $((SECONDS - t0)) s"
}

# timed NAME COMMAND...: runs a stage and says how long it took (CI's time is budgeted).
timed() {
  local name=$1 t0=$SECONDS rc=0; shift
  "$@" || rc=$?
  echo "test: $name took $((SECONDS - t0)) s"
  return $rc
}

sanitized_readers() {
  # -O0 -g1: ASan and UBSan triple the compile time at -O2 -g; the reader tests still run
  # in seconds, and line tables are all a report needs.
  if [ ! -f "$ASAN_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$ASAN_DIR" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
      -DTPUPERF_SANITIZE=ON -DTPUPERF_BUILD_TRAINER=OFF > /dev/null
  fi
  build_targets "$ASAN_DIR" "the reader tests with ASan/UBSan" "${READER_TESTS[@]}" || return 1
  local names
  names=$(IFS='|'; echo "${READER_TESTS[*]}")
  # UBSan only reports by default: halt_on_error makes every finding a failure.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$ASAN_DIR" --output-on-failure --timeout 600 -R "^unit\.($names)\$"
}

portable_kernels() {
  if [ ! -f "$PORTABLE_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$PORTABLE_DIR" -DCMAKE_BUILD_TYPE=Release -DTPUPERF_NATIVE=OFF > /dev/null
  fi
  build_targets "$PORTABLE_DIR" "the kernel tests with TPUPERF_NATIVE=OFF" test_fused_ops || return 1
  ctest --test-dir "$PORTABLE_DIR" --output-on-failure --timeout 900 -R '^unit\.test_fused_ops'
}

fuzzed_parser() {
  if [ ! -f "$FUZZ_DIR/CMakeCache.txt" ]; then
    CC=clang CXX=clang++ cmake -S . -B "$FUZZ_DIR" -DCMAKE_BUILD_TYPE=Release -DTPUPERF_FUZZ=ON \
      -DTPUPERF_BUILD_TRAINER=OFF -DTPUPERF_BUILD_TESTS=OFF > /dev/null
  fi
  build_targets "$FUZZ_DIR" "the libFuzzer target" fuzz_npz || return 1
  bash tests/fuzz/run_fuzz.sh "$FUZZ_DIR/bin" "${TPUPERF_FUZZ_SECONDS:-60}" "$BUILD_DIR/bin"
}

failed=()
timed ctest ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900 "$@" || failed+=(ctest)
extra=${TPUPERF_SANITIZERS:-auto}
if [ "$extra" = 1 ] || { [ "$extra" = auto ] && [ $# -eq 0 ]; }; then
  timed "the portable kernels stage" portable_kernels || failed+=("portable kernel tests")
  timed "the ASan/UBSan stage" sanitized_readers || failed+=("reader tests under ASan/UBSan")
  timed "the fuzzing stage" fuzzed_parser || failed+=("fuzzing")
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "test: FAILED: $(IFS=,; echo "${failed[*]}")" >&2
  exit 1
fi
echo "test: all passed in ${SECONDS} s"
