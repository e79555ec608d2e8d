#!/usr/bin/env bash
# Featurizer benchmark: prints figures and writes the "Featurizing" section of
# tests/bench/RESULTS.md. Not a test (no timed assertions); not part of ctest.
#
# The two real tuning records (tests/data/real: a 0.64 MB layout module, a 0.06 MB tile
# record of 15 kernels) are copied COPIES times each under distinct names, so that one
# run featurizes enough bytes for a stable time; tpuperf-featurize then runs ROUNDS times
# on the tile copies, the layout copies and all of them (with and without
# --extra-features), and the Python reference (tests/pipeline/featurize/reference_featurize.py)
# once on all of them twice: parsing with the protobuf library (Debian's python3-protobuf,
# the schema compiled by protoc: the peer a Python user would write, and the ratio quoted)
# and with its own wire decoder (the correctness reference, kept for the older figure).
# Each row is the median round (wall time), with CPU time and peak RSS from GNU time.
#
# Usage: bench_featurize.sh [BIN_DIR]      (default: <repo>/build/bin)
# Environment: COPIES (default 40), ROUNDS (default 5), TPUPERF_BENCH_DIR (default
#   /tmp/tpuperf-bench), RESULTS (default <repo>/tests/bench/RESULTS.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
COPIES=${COPIES:-40}
ROUNDS=${ROUNDS:-5}
WORK=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}/featurize
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
PY=/usr/bin/python3
[ -x "$BIN/tpuperf-featurize" ] || { echo "missing $BIN/tpuperf-featurize (build first)"; exit 2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
START_LOAD=$(load1)
echo "bench started $(date -u '+%Y-%m-%d %H:%M:%S UTC'); load: $(uptime)"

rm -rf "$WORK"
mkdir -p "$WORK/in/tile" "$WORK/in/layout"
for i in $(seq -w 1 "$COPIES"); do
  cp "$SRC/tests/data/real/op_tuning_data.pb" "$WORK/in/tile/op_tuning_data_$i.pb"
  cp "$SRC/tests/data/real/module_tuning_data_layout.pb" "$WORK/in/layout/module_tuning_data_layout_$i.pb"
done
RUNS=$WORK/runs.jsonl
: > "$RUNS"

# measure LABEL TOOL INPUT_DIRS COMMAND...: ROUNDS timed runs into a fresh output dir each;
# appends one JSON line per round.
measure() {
  local label=$1 tool=$2 inputs=$3; shift 3
  local r
  for r in $(seq "$ROUNDS"); do
    rm -rf "$WORK/out"
    local l0 t0 t1
    l0=$(load1)
    t0=$(date +%s.%N)
    /usr/bin/time -f "%U %S %M" -o "$WORK/time.txt" "$@" > "$WORK/run.log" 2>&1 \
      || { tail -20 "$WORK/run.log"; echo "$label failed"; exit 1; }
    t1=$(date +%s.%N)
    $PY - "$RUNS" "$label" "$tool" "$inputs" "$t0" "$t1" "$l0" "$(load1)" "$WORK/time.txt" "$WORK/out" "$*" <<'PY'
import glob, json, os, sys
runs, label, tool, inputs, t0, t1, l0, l1, time_file, out, cmd = sys.argv[1:]
user, system, rss_kb = open(time_file).read().split()[-3:]
files = [f for d in inputs.split() for f in glob.glob(os.path.join(d, "*.pb"))]
outputs = glob.glob(os.path.join(out, "npz", "**", "*.npz"), recursive=True)
row = dict(label=label, tool=tool, files=len(files), bytes=sum(os.path.getsize(f) for f in files),
           seconds=float(t1) - float(t0), cpu=float(user) + float(system), rss_mb=int(rss_kb) / 1024,
           outputs=len(outputs), out_bytes=sum(os.path.getsize(f) for f in outputs),
           load=(float(l0), float(l1)), command=cmd)
with open(runs, "a") as f:
    f.write(json.dumps(row) + "\n")
PY
    echo "$label round $r: $(tail -1 "$RUNS" | $PY -c 'import json,sys; r=json.load(sys.stdin); print("%.2f s, %.1f MB/s" % (r["seconds"], r["bytes"] / 1e6 / r["seconds"]))')"
  done
}

F="$BIN/tpuperf-featurize --out $WORK/out --log-level warn"
measure tile tpuperf-featurize "$WORK/in/tile" $F "$WORK"/in/tile/*.pb
measure layout tpuperf-featurize "$WORK/in/layout" $F "$WORK"/in/layout/*.pb
measure all tpuperf-featurize "$WORK/in/tile $WORK/in/layout" $F "$WORK"/in/tile/*.pb "$WORK"/in/layout/*.pb
measure all-extra tpuperf-featurize "$WORK/in/tile $WORK/in/layout" $F --extra-features "$WORK"/in/tile/*.pb "$WORK"/in/layout/*.pb
# The protobuf peer's schema is compiled once, outside the timed run.
PB2=$WORK/pb2
mkdir -p "$PB2"
$PY -c "import sys; sys.path.insert(0, sys.argv[1]); import reference_featurize as r; r.compile_pb2(sys.argv[2])" \
  "$SRC/tests/pipeline/featurize" "$PB2"
REF="$SRC/tests/pipeline/featurize/reference_featurize.py"
ROUNDS=1 measure reference "Python, protobuf library" "$WORK/in/tile $WORK/in/layout" \
  $PY "$REF" --decoder protobuf --pb2-dir "$PB2" --out "$WORK/out" "$WORK"/in/tile/*.pb "$WORK"/in/layout/*.pb
ROUNDS=1 measure reference-wire "Python, own wire decoder" "$WORK/in/tile $WORK/in/layout" \
  $PY "$REF" --out "$WORK/out" "$WORK"/in/tile/*.pb "$WORK"/in/layout/*.pb

PYTHONPATH="$HERE" $PY - "$RUNS" "$RESULTS" "$COPIES" "$ROUNDS" "$START_LOAD" "$(load1)" <<'PY'
from results_md import machine, replace_section
import datetime, json, os, re, sys
runs_file, results, copies, rounds, load_start, load_end = sys.argv[1:]
runs = [json.loads(l) for l in open(runs_file) if l.strip()]
by_label = {}
for r in runs:
    by_label.setdefault(r["label"], []).append(r)
# Per kind of input: records (kernels of a tile file, modules of a layout file) and runs.
TILE_RECORDS, TILE_RUNS, LAYOUT_RECORDS, LAYOUT_RUNS = 15, 754, 1, 122

def counts(r):
    tile = "/in/tile" in r["command"]
    layout = "/in/layout" in r["command"]
    per = int(copies)
    return (per * ((TILE_RECORDS if tile else 0) + (LAYOUT_RECORDS if layout else 0)),
            per * ((TILE_RUNS if tile else 0) + (LAYOUT_RUNS if layout else 0)))

lines = ["## Featurizing", "",
         f"Run {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by "
         "`tests/bench/bench_featurize.sh` (this section is written by the script).", "",
         f"Machine: {machine()}. 1-minute load "
         f"average at the start {load_start}, at the end {load_end}.", "",
         f"Data: the two real TPU v3 records of `tests/data/real`, {copies} copies of each under distinct "
         "names: the tile record (61,766 bytes, 15 kernels, 754 runs) and the layout record (638,070 bytes, "
         "one module of 3,163 nodes, 122 runs). tpuperf-featurize is one process: one thread featurizes "
         "the files in order, --threads (default: the cores, at least 8) write the npz files (deflate, "
         f"fsync); each tpuperf row is the median of {rounds} rounds by wall time, the reference (one "
         "process, one core) ran once.", "",
         "| run | tool | files | input MB | seconds | CPU s | MB/s | MB per CPU s | records/s | runs/s | "
         "npz written | output MB | peak RSS MiB | load 1 min |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
medians = {}
for label, rs in by_label.items():
    r = sorted(rs, key=lambda x: x["seconds"])[len(rs) // 2]
    medians[label] = r
    records, nruns = counts(r)
    lines.append(f"| {label} | {r['tool']} | {r['files']} | {r['bytes'] / 1e6:.1f} | {r['seconds']:.2f} | "
                 f"{r['cpu']:.2f} | {r['bytes'] / 1e6 / r['seconds']:.1f} | {r['bytes'] / 1e6 / r['cpu']:.1f} | "
                 f"{records / r['seconds']:.0f} | "
                 f"{nruns / r['seconds']:.0f} | {r['outputs']} | {r['out_bytes'] / 1e6:.1f} | {r['rss_mb']:.0f} | "
                 f"{r['load'][0]:.2f} → {r['load'][1]:.2f} |")
a, x, ref, wire = medians["all"], medians["all-extra"], medians["reference"], medians["reference-wire"]
lines += ["",
          f"tpuperf-featurize over the Python reference parsing with the protobuf library (the peer) on "
          f"the same files: {ref['seconds'] / a['seconds']:.1f}x by wall time, {ref['cpu'] / a['cpu']:.1f}x "
          f"by CPU time; over the same reference with its own pure-Python wire decoder (the earlier peer): "
          f"{wire['seconds'] / a['seconds']:.1f}x by wall time. "
          f"--extra-features costs {100 * (x['seconds'] / a['seconds'] - 1):.0f}% more time.", "",
          "Notes. Input MB are the .pb files' sizes (1 MB = 10^6 bytes); records are a tile file's "
          "kernels plus a layout file's modules; runs are the measured configurations the records hold "
          "(kept or not). Seconds are wall time of the whole process (reading, parsing, features, "
          "validation and deflated npz output); CPU s is user + system time from GNU time (above the "
          "seconds when the writer threads overlap). Wall times of the many small tile files vary from "
          "round to round with the disk's fsync latency.", "",
          "Commands (per round, into an emptied output directory):", "", "```sh"]
# One glob per input directory instead of its COPIES file names.
lines += [re.sub(r"(\S+/in/(tile|layout))/\S+\.pb( \1/\S+\.pb)*", r"\1/*.pb", medians[l]["command"])
          for l in medians] + ["```", ""]
section = "\n".join(lines)
replace_section(results, "Featurizing", section)
print(section)
PY
echo "wrote $RESULTS"
