#!/usr/bin/env bash
# Copies what the last test run measured into the tracked documents. The test command
# (jobs/test.sh) writes results only under the build directory; run this after it, then
# review and commit the diff:
#   - the faults suite's sections: BUILD/faults/RESULTS.md -> tests/faults/RESULTS.md
# (tests/bench/RESULTS.md is written by the bench scripts themselves, which are run by
# hand, never by the test command.)
#   jobs/update_docs.sh [BUILD_DIR]     (default: build, or $TPUPERF_BUILD_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,8p' "$0"; exit 0 ;; esac
BUILD_DIR=${1:-${TPUPERF_BUILD_DIR:-build}}
built="$BUILD_DIR/faults/RESULTS.md"
if [ ! -f "$built" ]; then
  echo "update_docs: $built not found: run the faults suite first (bash jobs/test.sh -L faults)" >&2
  exit 1
fi
python3 tests/faults/faults_check.py publish "$built" tests/faults/RESULTS.md
git --no-pager diff --stat -- tests/faults/RESULTS.md
