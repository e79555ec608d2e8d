#!/usr/bin/env bash
# Installs every Debian package tpuperf needs (only the missing ones; quiet when all are
# present), then configures and builds into build/ (or $TPUPERF_BUILD_DIR): everything,
# the tests included, unless --targets names the CMake targets to build (and what they need).
#   jobs/setup.sh [--no-build] [--targets "target ..."] [--extra "pkg ..."]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake g++ make pkg-config zlib1g-dev libdeflate-dev time
  libtorch-dev libopenblas0-pthread
  libopenmpi-dev openmpi-bin
  libhdf5-dev libyaml-cpp-dev libspdlog-dev libgtest-dev
  libprotobuf-dev protobuf-compiler
  python3 python3-numpy python3-scipy python3-h5py python3-yaml python3-protobuf
  # the Python package tpuperf (trainer/rank/python/) and its example's plot
  python3-dev pybind11-dev python3-matplotlib
  # tests only: the single-node Slurm cluster of the launcher tests, and clang for the
  # libFuzzer target and the sanitizer build of the readers
  slurm-wlm clang libclang-rt-14-dev
  # tests only: an AVX2 CPU without AVX-512 for the portable kernels' test (qemu-user's Haswell)
  qemu-user
)
build=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    --targets) shift; read -r -a targets <<<"$1" ;;
    --extra) shift; read -r -a extra <<<"$1"; PACKAGES+=("${extra[@]}") ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  echo "setup: packages installed in ${SECONDS} s"
fi

# LibTorch is ~6x slower on the reference BLAS: make sure OpenBLAS provides libblas.so.3.
blas=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/{print $2}')
case "$blas" in
  *openblas*) ;;
  *) echo "setup: warning: libblas.so.3 is '$blas', not OpenBLAS; training will be slow" >&2 ;;
esac

[ "$build" -eq 1 ] || exit 0
BUILD_DIR=${TPUPERF_BUILD_DIR:-build}
jobs=$(nproc)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${TPUPERF_CMAKE_ARGS:-} >/dev/null
fi
log="$BUILD_DIR/build.log"
target_args=()
if [ ${#targets[@]} -gt 0 ]; then
  target_args=(--target "${targets[@]}")
  echo "setup: building ${targets[*]} with $jobs jobs (log: $log)"
else
  echo "setup: building with $jobs jobs (log: $log)"
fi
t0=$SECONDS
if ! cmake --build "$BUILD_DIR" -j "$jobs" "${target_args[@]}" >"$log" 2>&1; then
  grep -E 'error|Error' "$log" | head -40 >&2 || true
  echo "setup: build failed; full log in $log" >&2
  exit 1
fi
grep -E 'warning:' "$log" | sort -u | head -20 >&2 || true
echo "setup: build ready in $BUILD_DIR/bin ($((SECONDS - t0)) s)"
