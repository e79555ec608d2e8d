#!/usr/bin/env bash
# Every production source is tested where you can find it: for each source stem under
# common/, pipeline/ and trainer/ (a .cpp and/or .h, e.g. common/formats/npz_reader) a test
# file named test_<stem>*.cpp or test_<stem>*.sh exists somewhere under tests/, or
# tests/INDEX.md has a line "- <stem>: <test files> — what they check". So that the index
# cannot rot, every index line must name a source that exists and test files that exist.
# Fails naming each uncovered source and each bad index line (registered in ctest as
# unit.test_index).
#
# usage: check_test_index.sh SRC_DIR
set -u
src=${1:?usage: check_test_index.sh SRC_DIR}
cd "$src" || exit 2
index=tests/INDEX.md
[ -f "$index" ] || { echo "test index: $index is missing"; exit 1; }

status=0
declare -A indexed  # source stem -> its index line number

# The index: "- SOURCE: TESTS — what"; every tests/... path on the line must exist.
line_no=0
while IFS= read -r line; do
  line_no=$((line_no + 1))
  [[ $line =~ ^-\ ((common|pipeline|trainer)/[^:[:space:]]+):\ (.*)$ ]] || continue
  stem=${BASH_REMATCH[1]} rest=${BASH_REMATCH[3]}
  where="$index:$line_no: $stem"
  if [ ! -f "$stem.cpp" ] && [ ! -f "$stem.h" ]; then
    echo "$where: no such source ($stem.cpp or $stem.h)"; status=1
  fi
  named=0
  while [[ $rest =~ (tests/[A-Za-z0-9_./-]+\.(cpp|sh|h|py))(.*)$ ]]; do
    t=${BASH_REMATCH[1]} rest=${BASH_REMATCH[3]} named=$((named + 1))
    [ -f "$t" ] || { echo "$where: test file $t does not exist"; status=1; }
  done
  [ "$named" -gt 0 ] || { echo "$where: names no test file (tests/...)"; status=1; }
  indexed[$stem]=$line_no
done < "$index"

# The sources: covered by a test of their name or by an index line. The names of the
# test_*.cpp and test_*.sh files, one per line, looked up by prefix (one find, not one per
# source).
test_names=$'\n'$(find tests -type f \( -name 'test_*.cpp' -o -name 'test_*.sh' \) -printf '%f\n')
by_name=0 by_index=0
while IFS= read -r stem; do
  base=${stem##*/}
  if [[ $test_names == *$'\n'"test_${base}"* ]]; then  # a line starting test_<stem>
    by_name=$((by_name + 1))
  elif [ -n "${indexed[$stem]:-}" ]; then
    by_index=$((by_index + 1))
  else
    echo "test index: $stem has no tests/**/test_${base}*.cpp or .sh and no line in $index"; status=1
  fi
done < <(find common pipeline trainer -type f \( -name '*.cpp' -o -name '*.h' \) | sed -E 's/\.(cpp|h)$//' | sort -u)

[ "$status" -eq 0 ] &&
  echo "test index: ok ($((by_name + by_index)) sources: $by_name by a test of their name, $by_index in $index)"
exit "$status"
