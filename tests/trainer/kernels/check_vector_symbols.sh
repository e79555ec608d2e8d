#!/usr/bin/env bash
# The vector paths' objects (trainer/kernels/vector/, compiled for AVX2 and for AVX-512)
# must define every external symbol inside tpuperf::kernels::avx2 or ::avx512: a weak copy
# of any other inline function (a std:: or LibTorch template) compiled for AVX-512 could be
# the one the linker keeps for every caller, and crash on a CPU without it.
#   check_vector_symbols.sh "OBJ;OBJ;..." ...   (CMake lists, as $<TARGET_OBJECTS:...> gives)
set -euo pipefail
objects=()
for list in "$@"; do IFS=';' read -r -a part <<<"$list"; objects+=("${part[@]}"); done
[ ${#objects[@]} -gt 0 ] || { echo "no objects given"; exit 2; }
bad=0
for o in "${objects[@]}"; do
  [ -f "$o" ] || { echo "missing object $o"; exit 2; }
  # Mangled names: functions and variables (N...), local statics (Z...), their guards (GV).
  stray=$(nm --defined-only --extern-only "$o" | awk '{print $3}' |
            grep -Ev '^_Z(Z|GVZ|TV|TI|TS|TH|TW)?N7tpuperf7kernels(4avx2|6avx512)' || true)
  if [ -n "$stray" ]; then
    echo "$o defines symbols outside its vector namespace:"
    echo "$stray" | c++filt | sed 's/^/  /'
    bad=1
  fi
done
[ "$bad" = 0 ] && echo "${#objects[@]} vector objects: every external symbol in its own namespace"
exit "$bad"
