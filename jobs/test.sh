#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: set-up (packages + build), then ctest
# (unit, MPI and integration tests). Extra arguments go to ctest, e.g. -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/setup.sh
BUILD_DIR=${TPUPERF_BUILD_DIR:-build}
# mpirun refuses to run as root unless told; the tests' mpirun lines pass the flags,
# these cover mpirun started by the integration scripts.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 "$@"
