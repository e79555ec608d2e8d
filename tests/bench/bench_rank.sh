#!/usr/bin/env bash
# The ranker's latency per call on one core (issue 18), as a function of configs and nodes,
# written into tests/bench/RESULTS.md ("## Ranking latency").
#
# A run is trained for a few steps at the default model (configs/tpugraphs.yaml's: the
# schema defaults) with 5 folds, since latency depends on the model's shapes and the fold
# count, not on its weights. The inputs are release-format files built from a generated
# tree's graphs (tests/bench/make_rank_inputs.py): a tile kernel with 1,000 configs, and a
# layout graph of 10k nodes with 1,000 and 100,000 configs. Each is ranked by
# tests/bench/rank_latency.cpp through the installed API (libtpuperf_ranker.so) with one
# LibTorch thread: model load, reading the file, Ranker::rank on in-memory arrays (median
# and min of REPEATS after a warm-up) and Ranker::rank_file. When the Python package is
# built (BUILD_DIR/python/tpuperf), tests/bench/rank_latency.py makes the same calls from
# Python (tpuperf.Ranker) for the section's second table: PAIRS processes each, alternating
# with rank_latency's, after the C++ calls of the first table.
#
# Usage: tests/bench/bench_rank.sh [BUILD_DIR]   (REPEATS=5, PAIRS=3, TPUPERF_BENCH_DIR=/tmp/tpuperf-bench-rank)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build}
BIN=$BUILD/bin
W=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench-rank}
REPEATS=${REPEATS:-5}
PAIRS=${PAIRS:-3}
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$W"
mkdir -p "$W"
load_start=$(cut -d' ' -f1 /proc/loadavg)

echo "== a run at the default model, 5 folds, a few steps"
"$BIN/tpuperf-synth" --out "$W/gen" --scale tiny --seed 0 > "$W/synth.log" 2>&1
cat > "$W/run.yaml" <<YAML
data:
  raw_dir: $W/gen/npz
  processed_dir: $W/processed
  collections: [tile:xla, layout:xla:random]
preprocess:
  folds: 5
  fold_by: graph
train:
  epochs: 1
  steps_per_epoch: 2
output:
  dir: $W/run
YAML
mpirun --bind-to none -np 2 "$BIN/tpuperf-preprocess" --config "$W/run.yaml" > "$W/preprocess.log" 2>&1
mpirun --bind-to none -np 2 "$BIN/tpuperf-train" --config "$W/run.yaml" --train-only > "$W/train.log" 2>&1
# The second tile model (model.tile.arch=late_join: configs join after the graph is
# embedded once), for its ranking cost beside the default's.
mpirun --bind-to none -np 2 "$BIN/tpuperf-train" --config "$W/run.yaml" --train-only --set output.dir="$W/run_late" \
  --set data.collections=[tile:xla] --set model.tile.arch=late_join > "$W/train_late.log" 2>&1

echo "== inputs"
$PY "$SRC/tests/bench/make_rank_inputs.py" --template "$W/gen/npz" --out "$W/inputs"

echo "== latency, 1 thread, $REPEATS calls each"
: > "$W/latency.tsv"
: > "$W/python.tsv" "$W/cpp_pairs.tsv"
# The 100k-config file's call takes minutes: one cold call.
for spec in tile:xla:tile_1k:$REPEATS layout:xla:random:layout_10k_nodes_1k:$REPEATS \
            layout:xla:random:layout_10k_nodes_100k:0; do
  IFS=: read -r -a part <<< "$spec"
  collection=$(IFS=:; echo "${part[*]:0:${#part[@]}-2}")
  "$BIN/rank_latency" "$W/run" "$collection" "$W/inputs/${part[-2]}.npz" "${part[-1]}" 1 | tee -a "$W/latency.tsv"
  # From Python: PAIRS alternations of a C++ and a Python process, so that both sides see
  # the same load (a shared machine's load moves a call by more than the difference).
  if [ -d "$BUILD/python/tpuperf" ] && [ "${part[-1]}" -gt 0 ]; then
    for _ in $(seq "$PAIRS"); do
      "$BIN/rank_latency" "$W/run" "$collection" "$W/inputs/${part[-2]}.npz" "${part[-1]}" 1 >> "$W/cpp_pairs.tsv"
      PYTHONPATH="$BUILD/python" $PY "$SRC/tests/bench/rank_latency.py" "$W/run" "$collection" \
        "$W/inputs/${part[-2]}.npz" "${part[-1]}" 1 2>> "$W/python.log" | tee -a "$W/python.tsv"
    done
  fi
done
"$BIN/rank_latency" "$W/run_late" tile:xla "$W/inputs/tile_1k.npz" "$REPEATS" 1 | sed 's/^[^\t]*/late_join: &/' \
  | tee -a "$W/latency.tsv"
load_end=$(cut -d' ' -f1 /proc/loadavg)

$PY - "$SRC/tests/bench" "$W/latency.tsv" "$load_start" "$load_end" "$REPEATS" "$W/python.tsv" \
  "$W/cpp_pairs.tsv" <<'PY'
import datetime, os, sys
sys.path.insert(0, sys.argv[1])
from results_md import machine, replace_section
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip()]
when = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
out = [f"## Ranking latency\n",
       f"Run {when} by `tests/bench/bench_rank.sh` (this section is written by the script).\n",
       f"Machine: {machine()}. 1-minute load average {sys.argv[3]} at the start, {sys.argv[4]} at the end "
       "(other jobs may share the machine).\n",
       "One `tpuperf::Ranker` per collection, loaded from a run trained at the default model "
       "(hidden 64, 3 layers; layout with 4 attention heads; tile `early_join`, and for comparison "
       "`late_join`) with 5 folds, so every call runs 5 models "
       "and ensembles them; one LibTorch thread. `rank` is `Ranker::rank` on arrays in memory "
       f"(median and min of {sys.argv[5]} calls after a warm-up; the 100k-config file: one cold call), "
       "`rank_file` reads the npz too, as `tpuperf-rank` does per input. Inputs: "
       "`tests/bench/make_rank_inputs.py`.\n",
       "| input | nodes | configurable nodes | configs | distinct | folds | model load ms | read ms | rank ms (median) | rank ms (min) | rank_file ms | configs/s | peak RSS MB |",
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for f, nodes, conf, configs, distinct, folds, load, read, med, mn, fms, rss in rows:
    rate = int(configs) / (float(med) / 1000)
    name = f"`{os.path.basename(f)}`" + (" (tile model late_join)" if f.startswith("late_join: ") else "")
    out.append(f"| {name} | {nodes} | {conf if conf != '0' else '-'} | {configs} | {distinct} | "
               f"{folds} | {load} | {read} | {med} | {mn} | {fms if fms != 'nan' else '-'} | {rate:,.0f} | {rss} |")
def by_file(path):
    out = {}
    for l in open(path):
        if l.strip():
            f = l.split("\t")
            out.setdefault(f[0], []).append(f)
    return out
def median(values):
    values = sorted(float(v) for v in values)
    return values[len(values) // 2]
python, cpp = by_file(sys.argv[6]), by_file(sys.argv[7])
if python:
    out += ["",
            "The same calls from Python (`tpuperf.Ranker`, [docs/python.md](../../docs/python.md)): per input, "
            f"{len(next(iter(python.values())))} processes of `tests/bench/rank_latency.py` alternating with as many of "
            "`rank_latency` (C++), so that both see the same load; each figure is the median over those processes of "
            "each process's median. `rank` is on a dict of the file's arrays in the C++ API's dtypes (what `Ranker::rank` "
            "gets; the difference is the package's checks, the one copy into `RankGraph`'s vectors and the call), "
            "`from np.load's dtypes` on the arrays as the file holds them (layout `node_config_feat` float32, converted "
            "to int8 in every call); `rank(path)` reads the file in C++, as `rank_file` does. The last column is one "
            "numpy copy of the arrays `rank` hands over, the size of that copy.\n",
            "| input | configs | C++ rank ms | Python rank ms | Python / C++ | from np.load's dtypes ms | "
            "C++ rank_file ms | Python rank(path) ms | copy of the arrays ms |",
            "|---|---|---|---|---|---|---|---|---|"]
    for f, runs in python.items():
        c, p = cpp[f], list(zip(*runs))
        c_rank, p_rank = median(r[8] for r in c), median(p[4])
        out.append(f"| `{os.path.basename(f)}` | {runs[0][1]} | {c_rank:.2f} | {p_rank:.2f} | {p_rank / c_rank:.3f} | "
                   f"{median(p[6]):.2f} | {median(r[10] for r in c):.1f} | {median(p[7]):.1f} | {median(p[8]):.2f} |")
replace_section(os.path.join(sys.argv[1], "RESULTS.md"), "Ranking latency", "\n".join(out) + "\n")
print("\n".join(out))
PY
