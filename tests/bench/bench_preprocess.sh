#!/usr/bin/env bash
# Preprocessing benchmark: prints figures and writes the "Preprocessing" section of
# tests/bench/RESULTS.md. Not a test (no timed assertions); not part of ctest.
#
#   (a) generates the bench-scale tree once (tpuperf-synth --scale bench --seed 0);
#   (b) tpuperf-preprocess on all five collections with 1 and 2 ranks, default settings;
#   (c) peak RSS per rank against the largest file's decompressed size, and a 1-rank run
#       on only the collection holding that file (fewer files, same largest file);
#   (d) the numpy reference (reference_preprocess.py, one core) on the same files, or on
#       the files it completes within REF_BUDGET seconds, with tpuperf rerun on exactly
#       that subset for a like-for-like ratio;
#   (e) RESULTS.md.
#
# Usage: bench_preprocess.sh [BIN_DIR]      (default: <repo>/build/bin)
# Environment: TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench): cache and scratch root;
#   TPUPERF_BENCH_RAW (default $TPUPERF_BENCH_DIR/raw): the generated tree (kept);
#   REF_BUDGET (default 600): seconds the reference may run; RESULTS (default
#   <repo>/tests/bench/RESULTS.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
GEN=${TPUPERF_BENCH_RAW:-$CACHE/raw}
RAW=$GEN/npz
WORK=$CACHE/work
REF_BUDGET=${REF_BUDGET:-600}
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
PY=/usr/bin/python3
ALL="[tile:xla,layout:xla:random,layout:xla:default,layout:nlp:random,layout:nlp:default]"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

for b in tpuperf-synth tpuperf-preprocess; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build first)"; exit 2; }
done
rm -rf "$WORK"
mkdir -p "$WORK"
RUNS=$WORK/runs.jsonl
: > "$RUNS"
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }
echo "bench started $(date -u '+%Y-%m-%d %H:%M:%S UTC'); load: $(uptime)"
START_LOAD=$(load1)

# ---------------------------------------------------------------- (a) the bench tree
if [ ! -f "$GEN/.complete" ]; then
  echo "== generating the bench tree into $GEN (once)"
  rm -rf "$GEN"
  t0=$(now)
  "$BIN/tpuperf-synth" --out "$GEN" --scale bench --seed 0 --log-level warn
  echo "generated in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.0f", b - a}') s"
  touch "$GEN/.complete"
fi

# The source files (relative to RAW, tpuperf's scan order), their sizes, and the
# largest file by decompressed size (sum of the zip members' uncompressed sizes).
$PY - "$RAW" "$WORK" <<'PY'
import json, os, sys, zipfile
raw, work = sys.argv[1:3]
colls = [("tile:xla", "tile/xla"), ("layout:xla:random", "layout/xla/random"),
         ("layout:xla:default", "layout/xla/default"), ("layout:nlp:random", "layout/nlp/random"),
         ("layout:nlp:default", "layout/nlp/default")]
files = []
for cid, d in colls:
    for split in ("train", "valid", "test"):
        names = sorted(f for f in os.listdir(os.path.join(raw, d, split)) if f.endswith(".npz"))
        for f in sorted(names, key=lambda n: n[:-4]):
            rel = f"{d}/{split}/{f}"
            path = os.path.join(raw, rel)
            with zipfile.ZipFile(path) as z:
                unpacked = sum(i.file_size for i in z.infolist())
            files.append({"rel": rel, "collection": cid, "split": split,
                          "bytes": os.path.getsize(path), "unpacked": unpacked})
largest = max(files, key=lambda f: f["unpacked"])
json.dump({"files": files, "largest": largest}, open(os.path.join(work, "files.json"), "w"), indent=1)
print(f"{len(files)} files, {sum(f['bytes'] for f in files) / 1e6:.1f} MB on disk; largest decompressed: "
      f"{largest['rel']} ({largest['unpacked'] / 1e6:.1f} MB)")
PY
LARGEST_COLL=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['largest']['collection'])" "$WORK/files.json")

# ------------------------------------------------------------- (b) tpuperf-preprocess
cat > "$WORK/bench.yaml" <<YAML
# Only the data keys: every preprocess.* setting keeps its default (prune_hops 1, dedup min).
data:
  raw_dir: $RAW
YAML

# run_tpuperf LABEL RANKS RAW_DIR COLLECTIONS
run_tpuperf() {
  local label=$1 np=$2 raw=$3 colls=$4
  local out=$WORK/processed-$label log=$WORK/tpuperf-$label.log
  local cmd=(mpirun --bind-to none --oversubscribe -np "$np" "$BIN/tpuperf-preprocess"
             --config "$WORK/bench.yaml" --set "data.raw_dir=$raw" --set "data.processed_dir=$out"
             --set "data.collections=$colls" --force)
  echo "== tpuperf $label: ${cmd[*]}"
  rm -rf "$out"
  local l0 t0 t1 rc=0
  l0=$(load1); t0=$(now)
  # GNU time: CPU seconds (user + sys) of mpirun and every rank, a measure that other
  # jobs on the machine disturb less than wall time.
  /usr/bin/time -f "%U %S" -o "$WORK/cpu-$label.txt" "${cmd[@]}" > "$log" 2>&1 || rc=$?
  t1=$(now)
  [ "$rc" -eq 0 ] || { tail -20 "$log"; echo "tpuperf-preprocess failed (exit $rc)"; exit 1; }
  grep -E "preprocess: done|peak memory|graphs, [0-9]+ rejected" "$log" | sed 's/^/  /'
  $PY - "$RUNS" "$label" "$np" "$raw" "$colls" "$log" "$t0" "$t1" "$l0" "$(load1)" "${cmd[*]}" \
      "$WORK/cpu-$label.txt" <<'PY'
import json, os, re, sys
runs, label, np_, raw, colls, log, t0, t1, l0, l1, cmd, cpu_file = sys.argv[1:]
cpu = sum(map(float, open(cpu_file).read().split()[-2:]))
text = open(log).read()
rss = {int(r): float(m) for r, m in re.findall(r"\[rank (\d+)\] peak memory of this rank: ([\d.]+) MB", text)}
graphs = sum(int(g) for g in re.findall(r"\] \S+: (\d+) graphs, \d+ rejected", text))
rejected = sum(int(g) for g in re.findall(r"\] \S+: \d+ graphs, (\d+) rejected", text))
nfiles = nbytes = 0
for c in colls.strip("[]").split(","):
    p = c.split(":")
    d = os.path.join(raw, *(["tile", "xla"] if p[0] == "tile" else ["layout", p[1], p[2]]))
    for split in ("train", "valid", "test"):
        for f in os.listdir(os.path.join(d, split)):
            if f.endswith(".npz"):
                nfiles += 1
                nbytes += os.path.getsize(os.path.join(d, split, f))  # follows symlinks
rec = dict(label=label, tool="tpuperf-preprocess", ranks=int(np_), files=nfiles, bytes=nbytes,
           seconds=float(t1) - float(t0), cpu_seconds=cpu, graphs=graphs, rejected=rejected,
           rss_mb=[rss[r] for r in sorted(rss)], load_start=float(l0), load_end=float(l1),
           collections=colls, command=cmd)
open(runs, "a").write(json.dumps(rec) + "\n")
print(f"  {label}: {nfiles} files, {nbytes / 1e6:.1f} MB in {rec['seconds']:.1f} s "
      f"({nbytes / 1e6 / rec['seconds']:.1f} MB/s), peak RSS {rec['rss_mb']} MB")
PY
}

run_tpuperf full-1rank 1 "$RAW" "$ALL"
run_tpuperf full-2ranks 2 "$RAW" "$ALL"
# (c) memory against the number of files: only the collection of the largest file.
run_tpuperf largest-collection-1rank 1 "$RAW" "[$LARGEST_COLL]"

# ---------------------------------------------------------------- (d) the reference
# Order: round robin over the collections, each in tpuperf's scan order (train, valid,
# test; by name), so that a budget-cut subset still holds every collection.
$PY - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
files = json.load(open(os.path.join(work, "files.json")))["files"]
queues = {}
for f in files:
    queues.setdefault(f["collection"], []).append(f["rel"])
order = []
while any(queues.values()):
    for q in queues.values():
        if q:
            order.append(q.pop(0))
open(os.path.join(work, "reference-order.txt"), "w").write("\n".join(order) + "\n")
PY
REF_CMD=("$PY" "$HERE/reference_preprocess.py" --input-root "$RAW" --out "$WORK/reference-out"
         --file-list "$WORK/reference-order.txt" --budget "$REF_BUDGET" --report "$WORK/reference.json")
echo "== reference (budget ${REF_BUDGET} s): ${REF_CMD[*]}"
l0=$(load1)
"${REF_CMD[@]}" > "$WORK/reference.log" 2>&1 || { tail -20 "$WORK/reference.log"; echo "reference failed"; exit 1; }
tail -1 "$WORK/reference.log"
REF_LOADS="$l0 $(load1)"

# The subset the reference completed, as a tree of symlinks (every split directory of
# each collection present, as tpuperf-preprocess requires), unless it did everything.
SUBSET=$($PY - "$WORK" "$RAW" <<'PY'
import json, os, sys
work, raw = sys.argv[1:3]
rep = json.load(open(os.path.join(work, "reference.json")))
files = json.load(open(os.path.join(work, "files.json")))["files"]
done = {d["file"] for d in rep["done"]}
if len(done) == len(files):
    print("all")
    sys.exit()
by_rel = {f["rel"]: f for f in files}
root = os.path.join(work, "subset-raw")
colls = []
for rel in sorted(done):
    f = by_rel[rel]
    if f["collection"] not in colls:
        colls.append(f["collection"])
for f in files:
    if f["collection"] in colls:
        os.makedirs(os.path.join(root, os.path.dirname(f["rel"])), exist_ok=True)
for rel in done:
    os.symlink(os.path.join(raw, rel), os.path.join(root, rel))
order = [c for c in ["tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random",
                     "layout:nlp:default"] if c in colls]
print("[" + ",".join(order) + "]")
PY
)
if [ "$SUBSET" = all ]; then
  echo "the reference completed every file: compared with the full 1-rank run"
  CMP_LABEL=full-1rank
else
  run_tpuperf reference-subset-1rank 1 "$WORK/subset-raw" "$SUBSET"
  CMP_LABEL=reference-subset-1rank
fi

# Both tools did the same work: every graph the reference wrote equals tpuperf's, array
# for array (node features re-padded, pruned edges, packed configs, min runtimes).
$PY - "$WORK" "$SRC" "$CMP_LABEL" <<'PY'
import json, os, sys
import numpy as np
import yaml
work, src, label = sys.argv[1:]
sys.path.insert(0, os.path.join(src, "tests", "integration"))
from check_processed import Shards
proc = os.path.join(work, "processed-" + label)
man = yaml.safe_load(open(os.path.join(proc, "manifest.yaml")))
shards = Shards(proc)
pairs = {"node_feat": "node_feat", "node_opcode": "node_opcode", "edge_index": "edge_index",
         "config_runtime": "config_runtime", "config_feat": "config_feat",
         "normalizers": "config_runtime_normalizers", "node_config_ids": "node_config_ids",
         "packed": "node_config_packed", "node_splits": "node_splits"}
compared, differ = 0, []
for mg in man["graphs"]:
    p = mg["collection"].split(":")
    rel = os.path.join(*(["tile", "xla"] if p[0] == "tile" else ["layout", p[1], p[2]]),
                       mg["split"], mg["name"] + ".npz")
    path = os.path.join(work, "reference-out", rel)
    if not os.path.exists(path):
        continue
    g, r = shards.graph(mg["shard"], mg["index"]), np.load(path)
    compared += 1
    for a, b in pairs.items():
        if a in g and not np.array_equal(np.asarray(g[a]).reshape(-1), r[b].reshape(-1)):
            differ.append(f"{rel}:{b}")
json.dump({"compared": compared, "differ": differ}, open(os.path.join(work, "agreement.json"), "w"))
print(f"outputs compared: {compared} graphs, {len(differ)} arrays differ {differ[:5]}")
PY
rm -rf "$WORK/reference-out"

# -------------------------------------------------------------------- (e) RESULTS.md
PYTHONPATH="$HERE" $PY - "$WORK" "$RESULTS" "$CMP_LABEL" "$REF_BUDGET" "$START_LOAD" "$(load1)" "$REF_LOADS" \
    "${REF_CMD[*]}" "$GEN" "$BIN" <<'PY'
from results_md import machine, replace_section
import datetime, json, os, re, sys
work, results, cmp_label, budget, load_start, load_end, ref_loads, ref_cmd, gen, bindir = sys.argv[1:]
runs = {r["label"]: r for r in map(json.loads, open(os.path.join(work, "runs.jsonl")))}
info = json.load(open(os.path.join(work, "files.json")))
ref = json.load(open(os.path.join(work, "reference.json")))
agree = json.load(open(os.path.join(work, "agreement.json")))
largest = info["largest"]
MiB = 1024 * 1024

rl0, rl1 = ref_loads.split()
ref_graphs = len(ref["done"]) - len(ref["rejected"])
ref_row = dict(label="reference", tool="numpy reference", ranks=1, files=len(ref["done"]),
               bytes=ref["bytes_done"], seconds=ref["seconds_done"],
               cpu_seconds=ref["cpu_seconds_done"], graphs=ref_graphs,
               rss_mb=[ref["peak_rss_mb"]], load_start=float(rl0), load_end=float(rl1))

def row(r):
    mbs = r["bytes"] / 1e6 / r["seconds"]
    rss = " / ".join(f"{m:.0f}" for m in r["rss_mb"]) or "not logged"
    return (f"| {r['label']} | {r['tool']} | {r['ranks']} | {r['files']} | {r['bytes'] / 1e6:.1f} | "
            f"{r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {mbs:.2f} | {mbs / r['ranks']:.2f} | {r['graphs'] / r['seconds']:.2f} | "
            f"{rss} | {r['load_start']:.2f} → {r['load_end']:.2f} |")

per_core = lambda r: r["bytes"] / 1e6 / r["seconds"] / r["ranks"]
full1, full2, lc = runs["full-1rank"], runs["full-2ranks"], runs["largest-collection-1rank"]
cmp = runs[cmp_label]
speed_ratio = per_core(cmp) / per_core(ref_row)
per_cpu = lambda r: r["bytes"] / r["cpu_seconds"]
cpu_ratio = per_cpu(cmp) / per_cpu(ref_row)
def rss_ratio(r):
    return f"{max(r['rss_mb']) * MiB / largest['unpacked']:.2f}" if r["rss_mb"] else "n/a (not logged)"
scaling = (full2["bytes"] / full2["seconds"]) / (full1["bytes"] / full1["seconds"])

done = ref["done"]
subset_desc = "all files" if cmp_label == "full-1rank" else (
    f"{len(done)} of {ref['files_given']} files ("
    + ", ".join(f"{c}: {sum(1 for d in done if d['file'].startswith(p))}"
                for c, p in [("tile:xla", "tile/"), ("layout:xla:random", "layout/xla/random/"),
                             ("layout:xla:default", "layout/xla/default/"),
                             ("layout:nlp:random", "layout/nlp/random/"),
                             ("layout:nlp:default", "layout/nlp/default/")])
    + "; of them " + ", ".join(f"{s} {sum(1 for d in done if '/' + s + '/' in d['file'])}"
                             for s in ("train", "valid", "test")) + ")")
abandoned = (f" It abandoned `{ref['abandoned']}` when the {budget} s budget ran out (that file is "
             "not counted on either side)." if ref["abandoned"] else "")
slowest = max(done, key=lambda d: d["seconds"]) if done else None

lines = [
    "## Preprocessing", "",
    f"Run {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by "
    "`tests/bench/bench_preprocess.sh` (this section is written by the script).", "",
    f"Machine: {machine()}. "
    f"1-minute load average at the start {load_start}, at the end {load_end} (per run in the table: "
    "other jobs, e.g. compilers, shared the machine).", "",
    f"Data: `tpuperf-synth --out {gen} --scale bench --seed 0`: {len(info['files'])} files, "
    f"{sum(f['bytes'] for f in info['files']) / 1e6:.1f} MB of npz. Largest file by decompressed size: "
    f"`{largest['rel']}`, {largest['unpacked'] / 1e6:.1f} MB of arrays "
    f"({largest['bytes'] / 1e6:.1f} MB on disk).", "",
    "Commands:", "", "```sh",
]
for r in runs.values():
    lines.append(r["command"])
lines += [ref_cmd, "```", "",
          "| run | tool | ranks | files | input MB | seconds | CPU s | MB/s | MB/s per core | graphs/s | "
          "peak RSS per rank (MiB) | load 1 min |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
lines += [row(r) for r in runs.values()] + [row(ref_row)]
lines += ["",
          "| ratio | value | target |", "|---|---|---|",
          f"| peak RSS / largest file's decompressed arrays, all files, 1 rank | {rss_ratio(full1)} | <= 2 |",
          f"| same, all files, 2 ranks (larger rank) | {rss_ratio(full2)} | <= 2 |",
          f"| same, only {lc['collections'].strip('[]')} ({lc['files']} files), 1 rank | {rss_ratio(lc)} | "
          "about the all-files value |",
          f"| tpuperf MB/s per core / reference MB/s per core, {subset_desc} | {speed_ratio:.1f} | >= 10 |",
          f"| the same by CPU time: tpuperf MB per CPU second / reference MB per CPU second | {cpu_ratio:.1f} | >= 10 |",
          f"| 2 ranks MB/s / 1 rank MB/s (all files) | {scaling:.2f} | <= 2 (2 cores) |",
          "",
          "Notes. Input MB are the npz files' sizes on disk (1 MB = 10^6 bytes); seconds are wall "
          "time of the whole `mpirun` (start-up, planning, manifest and HDF5 output included) for "
          "tpuperf, and the sum of the per-file times (load, validate, dedup, prune, pack, "
          "`np.savez_compressed`) for the reference, which runs in one process on one core. CPU s "
          "is user + system time (tpuperf: mpirun and all ranks, from GNU time; reference: the "
          "completed files' process time); as other jobs shared the 2 cores (see the load column), "
          "the CPU-time ratio is the steadier of the two speed ratios. "
          "Peak RSS is each rank's getrusage maximum as logged by tpuperf-preprocess. The "
          "reference does the same steps as tpuperf (this run compared its output with tpuperf's "
          f"shards of run `{cmp_label}` array for array: {agree['compared']} graphs, "
          f"{len(agree['differ'])} arrays differ"
          + (": " + ", ".join(agree["differ"][:5]) if agree["differ"] else "")
          + ") but dedups by pairwise comparison, O(c^2) "
          "per file like the published solutions, vectorized per config and narrowed block by "
          f"block, and writes compressed npz instead of HDF5. Reference budget: {budget} s; "
          f"compared subset: {subset_desc}, tpuperf rerun on a symlink tree of exactly these files "
          f"(run `{cmp_label}`).{abandoned}"
          + (f" Slowest reference file: `{slowest['file']}` ({slowest['bytes'] / 1e6:.1f} MB, "
             f"{slowest['seconds']:.1f} s)." if slowest else "")
          + " The largest-collection run holds the largest file but fewer files: its peak RSS "
          "next to the all-files run shows whether memory grows with the number of files. The "
          "reference's peak RSS is over the files it completed"
          + (", which do not include the largest file." if largest["rel"] not in {d["file"] for d in done}
             else "."),
          ""]
section = "\n".join(lines)

replace_section(results, "Preprocessing", section)
print(section)
PY
echo "wrote $RESULTS"
