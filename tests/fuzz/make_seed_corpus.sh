#!/usr/bin/env bash
# The fuzzer's seed corpus: the small files of a tiny tpuperf-synth tree (valid archives
# of both kinds, as numpy writes them) plus the faults suite's bad inputs derived from
# them (every way an archive can be broken that the suite knows). Only files of at most
# MAX_BYTES, so that the fuzzer spends its time on many small inputs.
# Usage: make_seed_corpus.sh SYNTH_BIN_DIR OUT_DIR [MAX_BYTES]
set -euo pipefail
BIN=$1
OUT=$2
MAX=${3:-65536}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN/tpuperf-synth" --out "$tmp/gen" --scale tiny --seed 1 > /dev/null 2>&1
/usr/bin/python3 "$SRC/tests/faults/make_bad_inputs.py" flat "$tmp/gen/npz" "$tmp/bad"
mkdir -p "$OUT"
n=0
while IFS= read -r f; do
  name=$(basename "$(dirname "$f")")_$(basename "$f")
  cp "$f" "$OUT/$name"
  n=$((n + 1))
done < <(find "$tmp/gen/npz" "$tmp/bad" -type f -name '*.npz' -size -$((MAX + 1))c | sort)
echo "seed corpus: $n files of at most $MAX bytes in $OUT"
