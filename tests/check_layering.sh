#!/usr/bin/env bash
# Every arrow points down: trainer/ and pipeline/ use common/, never each other, and
# common/ uses neither; LibTorch stays in trainer/. Checks the #includes of every source
# and the libraries every CMakeLists.txt links. Fails naming each offending file and line
# (registered in ctest as unit.layering, so CI keeps the layering).
#
# usage: check_layering.sh SRC_DIR
set -u
src=${1:?usage: check_layering.sh SRC_DIR}
cd "$src" || exit 2

status=0
# report WHY HITS: each line of grep output HITS is a violation.
report() {
  local why=$1 hits=$2
  [ -z "$hits" ] && return
  while IFS= read -r hit; do echo "layering: $hit: $why"; done <<< "$hits"
  status=1
}

# forbid DIR PATTERN WHY: any #include in DIR's sources matching PATTERN is a violation.
forbid() {
  report "$3" "$(grep -rnE --include='*.h' --include='*.cpp' --include='*.cc' --include='*.hpp' \
    "^[[:space:]]*#[[:space:]]*include[[:space:]]*$2" "$1" 2>/dev/null)"
}

# forbid_link DIR PATTERN WHY: the same for the libraries DIR's CMakeLists.txt files link.
forbid_link() {
  report "$3" "$(grep -rnE --include='CMakeLists.txt' "target_link_libraries.*$2" "$1" 2>/dev/null)"
}

forbid trainer '"pipeline/' "trainer/ must not include pipeline/ (shared code belongs in common/)"
# Inside trainer/: training and the ranker share trainer/predict/ and trainer/fit/, never
# each other's folders.
forbid trainer/rank '"trainer/train/' "trainer/rank/ must not include trainer/train/ (shared code belongs in trainer/predict/ or trainer/fit/)"
forbid trainer/train '"trainer/rank/' "trainer/train/ must not include trainer/rank/ (shared code belongs in trainer/predict/ or trainer/fit/)"
forbid common '"pipeline/' "common/ must not include pipeline/"
forbid common '"trainer/' "common/ must not include trainer/"
forbid pipeline '"trainer/' "pipeline/ must not include trainer/"
forbid common '[<"]torch/' "common/ must not use LibTorch"
forbid pipeline '[<"]torch/' "pipeline/ must not use LibTorch"

forbid_link trainer 'tpuperf_(preprocess|inspect|synth|pipeline)\b' "trainer/ must not link a pipeline library"
forbid_link common 'tpuperf_(preprocess|inspect|synth|pipeline|trainer|eval)\b|TORCH' "common/ links only external libraries"
forbid_link pipeline 'tpuperf_(trainer|eval)\b|TORCH' "pipeline/ must not link the trainer or LibTorch"

[ "$status" -eq 0 ] && echo "layering: ok (trainer, pipeline -> common; trainer/train and trainer/rank apart; LibTorch only in trainer)"
exit "$status"
