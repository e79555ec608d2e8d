#!/usr/bin/env bash
# Training benchmark: prints figures and writes the "Training" section of
# tests/bench/RESULTS.md. Not a test (no timed assertions); not part of ctest.
#
#   quality     the small generated tree (tpuperf-synth --scale small --seed 0), 2 folds,
#               all five collections trained with the demo candidate config on 2 ranks, the
#               submission scored with tpuperf-score against the generated truth, beside the
#               random and default-first baselines;
#   throughput  tpuperf-train (1 rank, train.threads_per_rank=1) against the PyTorch-Python
#               reference (reference_train.py, torch.set_num_threads(1)) on the same graphs,
#               slates, batches, model and loss (folds=1 processed dir, so one model per
#               collection): configs/s of the training steps with the configured dropout
#               (tpuperf's counter-based masks, the reference's own draws); a short check run
#               of both with model dropout 0 compares per-epoch losses and final weights.
#               COLLECTION@default rows train the schema's default model, slate and loss
#               (tile early_join_shape + hinge, layout sage_shape_context + ListMLE, hidden 64,
#               3 layers: what configs/tpugraphs.yaml trains), the others the quality
#               settings' bench models (early_join / sage, ListMLE);
#   scaling     tpuperf-train with 1 and 2 ranks in one fold group (folds=1), same
#               graphs_per_step: efficiency = (cps_2 / cps_1) / 2 (strong scaling: the
#               target); also 2 ranks with twice the graphs per step, i.e. the 1-rank step
#               on each rank (weak scaling, as data-parallel training usually grows); beside
#               them the machine's own ceiling for any 2-process work: two independent
#               1-rank runs started together (no MPI between them), each one's configs/s /
#               the solo run's. Every TP_COLLECTIONS row, default models included;
#               the reference is the strong one of issue #19; after the rounds, each of its
#               speed-ups is turned off alone (ablation: what each is worth);
#   paths       (part of throughput; --paths-only alone) the same tpuperf-vs-reference
#               rounds once per vector path of the fused kernels (TP_PATHS, default every
#               path this CPU runs: avx512 avx2): tpuperf-train with TPUPERF_VECTOR_ISA forced;
#               the avx2 rows run the binaries of TP_AVX2_BIN (default BIN_DIR; a build with
#               -DTPUPERF_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 is what an AVX2 machine
#               compiles) and both tools with OPENBLAS_CORETYPE=Haswell (OpenBLAS's AVX2
#               kernels; Debian's LibTorch dispatches its own kernels up to AVX2 anyway);
#   anchor      one core's sgemm rate (matmul_peak.py) beside the multiply-add rate both
#               tools achieve (counted from the model's shapes, reference_train.py
#               forward_macs, times the throughput part's configs/s), and perf profiles of
#               both (perf_shares.py groups the samples) saying where the rest goes;
#   bench       (optional, --bench-tree) the bench-scale tree, if helper data exists or is
#               generated: a short run on some collections, scored like the quality part.
#
# Every part stores its figures in $CACHE/train-results/<part>.json; the section is written
# from whatever results exist, each table stamped with its own run time, so one part can be
# rerun alone (e.g. --throughput-only) without losing the others.
#
# Usage: bench_train.sh [BIN_DIR] [--quality-only | --throughput-only | --paths-only |
#                       --scaling-only | --anchor-only | --write-only] [--skip-quality]
#                       [--skip-throughput] [--skip-paths]
#                       [--skip-scaling] [--skip-anchor] [--bench-tree] [--rounds N] [--no-results]
# (the anchor's table needs the throughput part's results; --write-only rewrites the section
# from the stored results)
# Environment: TPUPERF_BENCH_DIR (default /tmp/tpuperf-bench): cache and scratch root;
#   RESULTS (default <repo>/tests/bench/RESULTS.md); TP_COLLECTIONS (default
#   "tile:xla layout:xla:random layout:nlp:random tile:xla@default layout:xla:random@default"):
#   collections of the throughput and anchor parts; SC_COLLECTIONS (default: the same): of
#   the scaling part; TP_EPOCHS
#   (default 3): epochs of the throughput runs; SC_EPOCHS (default 8): epochs of the
#   scaling runs (a 3-epoch tile run is 2 s, mostly its first epoch's warm-up);
#   TP_CHECK_EPOCHS (default 3) and TP_CHECK_STEPS (default 2): epochs and steps per epoch of
#   the dropout-0 check runs; TP_ABLATION_ROUNDS (default 2): rounds of the reference's
#   ablation of the bench models (TP_ABLATION_COLLECTIONS, default the rows without
#   @default), TP_DEFAULT_ABLATION_ROUNDS (default 1) of the default models' few speed-ups
#   (the layout default's reference runs take a minute each); TP_PERF_EPOCHS (default 8): epochs of
#   the anchor's profiled runs; TPUPERF_BENCH_RAW
#   (default $TPUPERF_BENCH_DIR/raw, shared with bench_preprocess.sh): the bench tree;
#   BENCH_COLLECTIONS (default: all five), BENCH_EPOCHS (8), BENCH_STEPS (20): what
#   --bench-tree trains (default: as the quality part); TP_PATHS and TP_AVX2_BIN: the paths
#   part's vector paths and AVX2 binaries (above); TP_WARM_MB (default 3072, 0: off): MB a
#   process writes and frees before each run of either tool (warm_memory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$SRC/build/bin
DO_QUALITY=1 DO_THROUGHPUT=1 DO_PATHS=1 DO_SCALING=1 DO_ANCHOR=1 DO_BENCH=0 ROUNDS=2 WRITE=1
while [ $# -gt 0 ]; do
  case $1 in
    --quality-only) DO_THROUGHPUT=0 DO_PATHS=0 DO_SCALING=0 DO_ANCHOR=0 ;;
    --throughput-only) DO_QUALITY=0 DO_SCALING=0 DO_ANCHOR=0 ;;
    --paths-only) DO_QUALITY=0 DO_THROUGHPUT=0 DO_SCALING=0 DO_ANCHOR=0 ;;
    --skip-paths) DO_PATHS=0 ;;
    --scaling-only) DO_QUALITY=0 DO_THROUGHPUT=0 DO_PATHS=0 DO_ANCHOR=0 ;;
    --anchor-only) DO_QUALITY=0 DO_THROUGHPUT=0 DO_PATHS=0 DO_SCALING=0 ;;
    --skip-quality) DO_QUALITY=0 ;;
    --skip-throughput) DO_THROUGHPUT=0 DO_PATHS=0 ;;
    --skip-scaling) DO_SCALING=0 ;;
    --skip-anchor) DO_ANCHOR=0 ;;
    --write-only) DO_QUALITY=0 DO_THROUGHPUT=0 DO_PATHS=0 DO_SCALING=0 DO_ANCHOR=0 ;;
    --bench-tree) DO_BENCH=1 ;;
    --rounds) ROUNDS=$2; shift ;;
    --no-results) WRITE=0 ;;
    -h|--help) sed -n '2,67p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (see --help)"; exit 2 ;;
    *) BIN=$1 ;;
  esac
  shift
done
BIN=$(cd "$BIN" && pwd)
CACHE=${TPUPERF_BENCH_DIR:-/tmp/tpuperf-bench}
SMALL=$CACHE/small
BENCH_GEN=${TPUPERF_BENCH_RAW:-$CACHE/raw}
WORK=$CACHE/train-work
RES=$CACHE/train-results
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
TP_COLLECTIONS=${TP_COLLECTIONS:-tile:xla layout:xla:random layout:nlp:random tile:xla@default layout:xla:random@default}
SC_COLLECTIONS=${SC_COLLECTIONS:-$TP_COLLECTIONS}
# Full ablation for the bench models; the default models ablate fewer speed-ups
# (TP_DEFAULT_ABLATION_ROUNDS rounds): the default layout model's reference runs take a minute.
TP_DEFAULT_ABLATION_ROUNDS=${TP_DEFAULT_ABLATION_ROUNDS:-1}
TP_ABLATION_COLLECTIONS=${TP_ABLATION_COLLECTIONS:-$(for c in $TP_COLLECTIONS; do [[ $c == *@default ]] || printf '%s ' "$c"; done)}
TP_EPOCHS=${TP_EPOCHS:-3}
SC_EPOCHS=${SC_EPOCHS:-8}
TP_CHECK_EPOCHS=${TP_CHECK_EPOCHS:-3}
TP_CHECK_STEPS=${TP_CHECK_STEPS:-2}
TP_ABLATION_ROUNDS=${TP_ABLATION_ROUNDS:-2}
TP_PERF_EPOCHS=${TP_PERF_EPOCHS:-8}
# The vector paths this CPU runs (trainer/kernels/vector_path.h), widest first.
cpu_paths() { if grep -qw avx512f /proc/cpuinfo; then echo "avx512 avx2"; elif grep -qw avx2 /proc/cpuinfo; then echo avx2; fi; }
TP_PATHS=${TP_PATHS:-$(cpu_paths)}
TP_AVX2_BIN=$(cd "${TP_AVX2_BIN:-$BIN}" && pwd)
# tpuperf-train's binary dir and the environment of both tools' timed runs (the paths part
# sets them per path).
TP_BIN=$BIN
RUN_ENV=()
# The reference's speed-ups all off: the plain PyTorch reference of before issue #19.
ALL_OFF="--no-split --no-node-major --no-catfree --no-segment-reduce --no-onehot-config --dropout-rng bernoulli --optimizer plain --no-malloc-env --no-layout-split"
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One thread per process on both sides; LibTorch's count is train.threads_per_rank.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

for b in tpuperf-synth tpuperf-preprocess tpuperf-train tpuperf-score; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build first)"; exit 2; }
done
if { [ "$DO_THROUGHPUT" = 1 ] || [ "$DO_ANCHOR" = 1 ]; } && ! $PY -c "import torch, h5py" 2>/dev/null; then
  echo "the throughput part needs PyTorch and h5py for $PY: apt-get install -y python3-torch python3-h5py"
  exit 2
fi
mkdir -p "$WORK" "$RES"
load1() { cut -d' ' -f1 /proc/loadavg; }

# warm_memory: a process writes TP_WARM_MB MB and frees them, before each timed run of
# either tool. On this project's VMs memory the guest has freed goes back to the host, and
# a process's first touch of it cost ~2.5 ms a MB; without the warm-up the reference's
# tile default ran at 4,100-5,200 configs/s (fastest right after a large layout run), with
# it at 5,200-6,200 (its steps keep touching fresh memory); tpuperf's barely moved
# (docs/experiments E49).
export TP_WARM_MB=${TP_WARM_MB:-3072}
warm_memory() {
  [ "$TP_WARM_MB" -gt 0 ] || return 0
  $PY -c "import numpy as np; a = np.ones($TP_WARM_MB * 2**20 // 8); del a"
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}'; }
mpi() { local np=$1; shift; mpirun --bind-to none --oversubscribe -np "$np" "$@"; }
stamp() { date -u '+%Y-%m-%d %H:%M UTC'; }
echo "training bench started $(stamp); load: $(uptime)"

# The demo candidate: what the quality part trains, and the model and slate sizes the
# throughput and scaling parts time (shared with bench_layout_arch.sh).
QUALITY_SETTINGS=$(grep -v '^#' "$HERE/quality_settings.yaml")
# yaml key -> value of QUALITY_SETTINGS, for the reference's command line.
setting() {
  $PY - "$1" <<PY
import re, sys
text = """$QUALITY_SETTINGS"""
section, key = sys.argv[1].split(".", 1)
if section == "model":
    kind, name = key.split(".")
    m = re.search(r"^  %s: \{(.*)\}" % kind, text, re.M)
    print(dict(kv.strip().split(": ") for kv in m.group(1).split(","))[name])
else:
    print(re.search(r"^  %s: (\S+)" % key, text, re.M).group(1))
PY
}

# The small tree, generated once and kept (tpuperf-synth is deterministic per seed).
if [ ! -f "$SMALL/.complete" ]; then
  echo "== generating the small tree into $SMALL"
  rm -rf "$SMALL"
  "$BIN/tpuperf-synth" --out "$SMALL" --scale small --seed 0 --log-level warn
  touch "$SMALL/.complete"
fi

# preprocess NAME RAW_NPZ FOLDS [collections]: processed dir $WORK/NAME.
preprocess() {
  local name=$1 raw=$2 folds=$3 colls=${4:-}
  local extra=()
  [ -n "$colls" ] && extra=(--set "data.collections=$colls")
  rm -rf "${WORK:?}/$name"
  cat > "$WORK/$name.yaml" <<YAML
data:
  raw_dir: $raw
  processed_dir: $WORK/$name
preprocess:
  folds: $folds
  seed: 0
  shard_mb: 64
YAML
  mpi 2 "$BIN/tpuperf-preprocess" --config "$WORK/$name.yaml" "${extra[@]}" > "$WORK/$name.preprocess.log" 2>&1 \
    || { tail -20 "$WORK/$name.preprocess.log"; exit 1; }
}

# train_cfg FILE PROCESSED OUTPUT: the quality settings on a processed dir.
train_cfg() {
  { printf 'data:\n  processed_dir: %s\n' "$2"; printf '%s\n' "$QUALITY_SETTINGS"; printf 'output:\n  dir: %s\n' "$3"; } > "$1"
}

# ------------------------------------------------------------------------------ quality
if [ "$DO_QUALITY" = 1 ]; then
  echo "== quality: small tree, 2 folds, all collections, 2 ranks"
  preprocess small-k2 "$SMALL/npz" 2
  train_cfg "$WORK/quality.yaml" "$WORK/small-k2" "$WORK/quality-run"
  l0=$(load1); t0=$(now)
  mpi 2 "$BIN/tpuperf-train" --config "$WORK/quality.yaml" --fresh > "$WORK/quality.train.log" 2>&1 \
    || { tail -30 "$WORK/quality.train.log"; exit 1; }
  wall=$(since "$t0"); l1=$(load1)
  "$BIN/tpuperf-score" --submission "$WORK/quality-run/submission.csv" --truth "$SMALL" --json > "$WORK/quality.score.json"
  "$BIN/tpuperf-score" --submission "$WORK/quality-run/submission.csv" --truth "$SMALL"
  $PY - "$WORK" "$RES/quality.json" "$wall" "$l0" "$l1" "$(stamp)" "$QUALITY_SETTINGS" "$SMALL" <<'PY'
import csv, json, re, sys
work, out, wall, l0, l1, when, settings = sys.argv[1:8]
score = json.load(open(f"{work}/quality.score.json"))
valid = {}
for line in open(f"{work}/quality.train.log"):
    m = re.search(r"\] (\S+): valid score ensemble (\S+) \(random (\S+)(?:, default-first (\S+))?\), cv (\S+)", line)
    if m:
        valid[m[1]] = dict(ensemble=float(m[2]), random=float(m[3]),
                           default_first=float(m[4]) if m[4] else None, cv=float(m[5]))
rows = list(csv.DictReader(open(f"{work}/quality-run/metrics.csv")))
train_s = sum(float(r["elapsed_s"]) for r in rows if r["split"] == "train" and r["elapsed_s"])
json.dump(dict(when=when, wall_s=float(wall), train_step_s=train_s, load=[float(l0), float(l1)],
               settings=settings, score=score, valid=valid, tree=sys.argv[8],
               command="mpirun --bind-to none -np 2 tpuperf-train --config quality.yaml --fresh"),
          open(out, "w"), indent=1)
print(f"quality: {float(wall):.0f} s wall for tpuperf-train on 2 ranks")
PY
fi

# ------------------------------------------------------- throughput and scaling helpers
# The schema's defaults of the model and slate keys (`tpuperf-train --help-config`), "key value"
# per line, for the COLLECTION@default runs.
"$BIN/tpuperf-train" --help-config | sed -nE \
  "s/^ *((model\.(tile|layout)\.[a-z_]+|train\.(tile|layout)_(slate|loss))) \([a-z]+, default ([^)]*)\)$/\1 \6/p" \
  > "$WORK/schema-defaults.txt"

# coll_setting COLLECTION NAME: what COLLECTION's runs train with, NAME one of arch, hidden,
# layers, dropout, attention_heads, slate, loss. COLLECTION@default: that collection with
# the schema's default model, slate and loss (what configs/tpugraphs.yaml trains on the real
# data); otherwise the quality settings' sizes with the bench models (tile early_join, layout
# sage) and ListMLE, which every earlier figure of this section trained.
coll_setting() {
  local coll=$1 name=$2 kind=layout
  [[ $coll == tile:* ]] && kind=tile
  local key="model.$kind.$name"
  [[ $name == slate || $name == loss ]] && key="train.${kind}_$name"
  if [[ $coll == *@default ]]; then
    awk -v k="$key" '$1 == k { print $2 }' "$WORK/schema-defaults.txt"
  else
    case $name in
      arch) if [ "$kind" = tile ]; then echo early_join; else echo sage; fi ;;
      loss) echo listmle ;;
      *) setting "$key" ;;
    esac
  fi
}

# model_args COLLECTION: tpuperf-train's --set arguments for COLLECTION's model, slate and
# loss, into the array MODEL_ARGS.
model_args() {
  local kind=layout name
  [[ $1 == tile:* ]] && kind=tile
  MODEL_ARGS=(--set "data.collections=[${1%@default}]")
  for name in arch hidden layers dropout attention_heads; do
    MODEL_ARGS+=(--set "model.$kind.$name=$(coll_setting "$1" "$name")")
  done
  MODEL_ARGS+=(--set "train.${kind}_slate=$(coll_setting "$1" slate)" --set "train.${kind}_loss=$(coll_setting "$1" loss)")
}

# ref_args COLLECTION: the reference's arguments for COLLECTION (the same model, slate, loss
# and training settings as model_args), into the array REF_ARGS.
ref_args() {
  REF_ARGS=(--processed "$WORK/small-k1" --collection "${1%@default}" --fold 0
    --arch "$(coll_setting "$1" arch)" --loss "$(coll_setting "$1" loss)"
    --graphs-per-step "$(setting train.graphs_per_step)" --slate "$(coll_setting "$1" slate)"
    --hidden "$(coll_setting "$1" hidden)" --layers "$(coll_setting "$1" layers)"
    --heads "$(coll_setting "$1" attention_heads)" --lr "$(setting train.lr)" --seed "$(setting train.seed)"
    --threads 1)
}

# ckpt_dir COLLECTION: a collection's checkpoint folder name (tile:xla -> tile_xla).
ckpt_dir() { local c=${1%@default}; echo "${c//:/_}"; }

# tp_run TAG NP COLLECTION [EPOCHS [DROPOUT [GRAPHS_PER_STEP [TPUPERF ARGS...]]]]: tpuperf-train
# on the folds=1 dir (EPOCHS default TP_EPOCHS; DROPOUT and GRAPHS_PER_STEP override the
# model's when not empty; further arguments go to tpuperf-train and are recorded as the
# run's variant); appends a JSON line to $WORK/runs.jsonl with the epochs' losses and the
# configs/s of the training steps.
tp_run() {
  local tag=$1 np=$2 coll=$3 epochs=${4:-$TP_EPOCHS} dropout=${5:-} gps=${6:-} out=$WORK/runs/$1
  shift $(($# < 6 ? $# : 6))
  local variant="$*"
  model_args "$coll"
  local extra=("${MODEL_ARGS[@]}" "$@")
  [ -n "$dropout" ] && extra+=(--set "model.tile.dropout=$dropout" --set "model.layout.dropout=$dropout")
  [ -n "$gps" ] && extra+=(--set "train.graphs_per_step=$gps")
  rm -rf "$out"
  train_cfg "$WORK/$tag.yaml" "$WORK/small-k1" "$out"
  warm_memory
  local l0; l0=$(load1)
  # /usr/bin/time per rank: how much of a core each rank got over its whole run (start-up,
  # loading and evaluation included), to tell contention from the trainer's own waiting.
  # Appended to a file of their own (one write each): on the ranks' shared stderr the
  # lines of two ranks could interleave.
  rm -f "$WORK/$tag.time"
  env "${RUN_ENV[@]}" mpirun --bind-to none --oversubscribe -np "$np" \
    /usr/bin/time -a -o "$WORK/$tag.time" -f "rank time: wall %e user %U sys %S" "$TP_BIN/tpuperf-train" --config "$WORK/$tag.yaml" \
    --fresh --set train.epochs="$epochs" --set train.threads_per_rank=1 \
    --set train.eval_max_configs=20 --log-level debug "${extra[@]}" > "$WORK/$tag.log" 2>&1 || { tail -30 "$WORK/$tag.log"; exit 1; }
  # The run's JSON line: appended in one write, and printed from here rather than from the
  # file's last line, which may be a concurrent run's (the scaling part's pairs).
  local line
  line=$($PY - "$out/metrics.csv" "$tag" "$np" "$coll" "$l0" "$(load1)" "$WORK/$tag.time" "$dropout" "$WORK/$tag.log" \
    "$variant" "$TP_BIN" <<'PY'
import csv, json, re, sys
path, tag, np_, coll, l0, l1, time_log, dropout, log, variant, bin_dir = sys.argv[1:]
text = open(log).read()
# The fused kernels' vector path (tpuperf-train's start-up line) and how the binary was built.
m = re.search(r"fused kernels' vector path: (\S+)", text)
vector_path = m[1] if m else "?"
flags = {}
try:
    for l in open(f"{bin_dir}/../CMakeCache.txt"):
        k = l.split(":", 1)[0]
        if k in ("CMAKE_CXX_FLAGS", "TPUPERF_NATIVE"):
            flags[k] = l.split("=", 1)[1].strip()
except OSError:
    pass
# The step trace (tpuperf-train --log-level debug: each rank's per-step phase times of an
# epoch), per rank the mean over the epochs after the first (its steps include warm-up).
TRACE = re.compile(r"(?:\[rank (\d+)\] )?\S+ fold \d+ epoch (\d+)/\d+: per step: batch building (\S+) ms, "
                   r"forward\+backward (\S+) ms, all-reduce (\S+) ms, optimizer (\S+) ms; (\S+) batches, "
                   r"(\S+) node slots, (\S+)% of them padding")
trace = {}
for m in TRACE.finditer(text):
    if int(m[2]) > 1:
        trace.setdefault(int(m[1] or 0), []).append([float(v) for v in m.groups()[2:]])
keys = ["build_ms", "forward_backward_ms", "allreduce_ms", "optimizer_ms", "batches", "node_slots", "padding_pct"]
trace = [dict(zip(keys, (sum(col) / len(col) for col in zip(*rows)))) for _, rows in sorted(trace.items())]
rows = [r for r in csv.DictReader(open(path)) if r["split"] == "train"]
configs = sum(float(r["configs_per_s"]) * float(r["elapsed_s"]) for r in rows)
seconds = sum(float(r["elapsed_s"]) for r in rows)
times = [tuple(map(float, m.groups())) for m in
         re.finditer(r"rank time: wall (\S+) user (\S+) sys (\S+)", open(time_log).read())]
print(json.dumps(dict(tag=tag, tool="tpuperf", ranks=int(np_), collection=coll, configs=configs,
                      seconds=seconds, cps=configs / seconds, losses=[float(r["loss"]) for r in rows],
                      cpu_share=[(u + s) / w for w, u, s in times], cpu_seconds=sum(u + s for _, u, s in times),
                      check=dropout != "", load=[float(l0), float(l1)], trace=trace, variant=variant,
                      vector_path=vector_path, build=flags)))
PY
)
  echo "$line" >> "$WORK/runs.jsonl"
  echo "$line" | $PY -c "import json,sys; r=json.load(sys.stdin); print(f\"  tpuperf {r['ranks']} rank(s) {r['collection']}: {r['cps']:.1f} configs/s, load {r['load'][0]}\")"
}

# ref_run TAG COLLECTION [EPOCHS [DROPOUT [VARIANT [STEPS]]]]: the reference on the same dir and
# settings (STEPS: steps per epoch, default the quality settings'). With DROPOUT (the check
# run) it compares its final weights with tpuperf's plain-path run TAG-tp, and records how
# far tpuperf's fused run TAG-tpfused is from that one; without, and without VARIANT, it
# profiles 3 extra steps. VARIANT: reference flags that turn speed-ups off (or --jit on),
# the ablation runs (recorded as the run's variant).
ref_run() {
  local tag=$1 coll=$2 epochs=${3:-$TP_EPOCHS} dropout=${4:-} variant=${5:-} steps=${6:-$(setting train.steps_per_epoch)}
  local extra=(--profile-steps 3) plain="" fused=""
  if [ -n "$dropout" ]; then
    plain=$WORK/runs/$tag-tp/checkpoints/$(ckpt_dir "$coll")/fold0/last.pt
    fused=$WORK/runs/$tag-tpfused/checkpoints/$(ckpt_dir "$coll")/fold0/last.pt
    extra=(--compare-checkpoint "$plain")
  fi
  # shellcheck disable=SC2206  # the variant is a list of flags
  [ -n "$variant" ] && extra=($variant)
  ref_args "$coll"
  warm_memory
  local l0; l0=$(load1)
  env "${RUN_ENV[@]}" $PY "$HERE/reference_train.py" "${REF_ARGS[@]}" --epochs "$epochs" --steps-per-epoch "$steps" \
    --dropout "${dropout:-$(coll_setting "$coll" dropout)}" "${extra[@]}" \
    --json "$WORK/$tag.ref.json" > "$WORK/$tag.ref.log" 2>&1 || { tail -30 "$WORK/$tag.ref.log"; exit 1; }
  PYTHONPATH="$HERE" $PY - "$WORK/$tag.ref.json" "$tag" "$l0" "$(load1)" "$dropout" "$variant" "$coll" "$plain" \
    "$fused" >> "$WORK/runs.jsonl" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
plain, fused = sys.argv[8:10]
fused_vs_plain = None
if fused and os.path.exists(fused):
    # tpuperf's own rounding floor: its fused kernels against its plain LibTorch path.
    from reference_train import checkpoint_weights
    a, b = checkpoint_weights(plain), checkpoint_weights(fused)
    fused_vs_plain = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
extra = dict(variant=sys.argv[6], speedups=r.get("speedups"), gflops=r.get("gflops"),
             cps_cpu=r.get("configs_per_cpu_s"), arch=r.get("arch"), loss=r.get("loss"),
             fused_vs_plain_param_diff=fused_vs_plain,
             train_flops_per_config=r.get("train_flops_per_config"))
configs = sum(e["configs"] for e in r["epochs"])
seconds = sum(e["seconds"] for e in r["epochs"])
print(json.dumps(dict(tag=sys.argv[2], tool="reference", ranks=1, collection=sys.argv[7], configs=configs,
                      seconds=seconds, cps=configs / seconds, losses=[e["loss"] for e in r["epochs"]],
                      max_abs_param_diff=r.get("max_abs_param_diff"), torch=r["torch"],
                      batch_share=sum(e["batch_seconds"] for e in r["epochs"]) / seconds,
                      profile=r.get("profile"), check=sys.argv[5] != "",
                      load=[float(sys.argv[3]), float(sys.argv[4])], **extra)))
PY
  tail -1 "$WORK/runs.jsonl" | $PY -c "import json,sys; r=json.load(sys.stdin); d=r['max_abs_param_diff']; print(f\"  reference {r['variant'] or ''} {r['collection']}: {r['cps']:.1f} configs/s, load {r['load'][0]}\" + ('' if d is None else f', max |param diff| {d:.2g}'))"
}

# collect PART EPOCHS: the runs of this invocation into $RES/PART.json.
collect() {
  $PY - "$WORK/runs.jsonl" "$RES/$1.json" "$(stamp)" "$2" "$ROUNDS" "$QUALITY_SETTINGS" "$TP_CHECK_EPOCHS" \
    "$TP_CHECK_STEPS" "$HERE" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[9])
from results_md import machine
runs_path, out, when, epochs, rounds, settings, check_epochs, check_steps = sys.argv[1:9]
runs = [json.loads(l) for l in open(runs_path)]
json.dump(dict(when=when, machine=machine(), epochs=int(epochs), rounds=int(rounds), settings=settings, runs=runs,
               check_epochs=int(check_epochs), check_steps=int(check_steps), warm_mb=int(os.environ["TP_WARM_MB"])),
          open(out, "w"), indent=1)
PY
}

if [ "$DO_THROUGHPUT" = 1 ] || [ "$DO_PATHS" = 1 ] || [ "$DO_SCALING" = 1 ] || [ "$DO_ANCHOR" = 1 ]; then
  preprocess small-k1 "$SMALL/npz" 1
fi

# --------------------------------------------------------------------------- throughput
# Rounds alternate the two tools so that both see the same share of the machine's load.
if [ "$DO_THROUGHPUT" = 1 ]; then
  echo "== throughput: tpuperf (1 rank, 1 thread) vs reference (1 thread), $ROUNDS rounds"
  : > "$WORK/runs.jsonl"
  for coll in $TP_COLLECTIONS; do
    # Same work check: with dropout 0 both sides must train the same model. A short run
    # (TP_CHECK_EPOCHS of TP_CHECK_STEPS steps): float rounding grows through training
    # (AdamW's early updates are about lr x the sign of near-zero gradients), so a long run
    # measures that growth more than the models. The reference is compared with tpuperf's
    # plain LibTorch path (model.fused=false, the models' readable definition) and with its
    # fused kernels; the fused run against the plain one is tpuperf's own rounding floor.
    tag="tp-$(echo "$coll" | tr : _)-check"
    tp_run "$tag-tp" 1 "$coll" "$TP_CHECK_EPOCHS" 0 "" --set model.fused=false --set train.steps_per_epoch="$TP_CHECK_STEPS"
    tp_run "$tag-tpfused" 1 "$coll" "$TP_CHECK_EPOCHS" 0 "" --set model.fused=true --set train.steps_per_epoch="$TP_CHECK_STEPS"
    ref_run "$tag" "$coll" "$TP_CHECK_EPOCHS" 0 "" "$TP_CHECK_STEPS"
    for r in $(seq 1 "$ROUNDS"); do
      tag="tp-$(echo "$coll" | tr : _)-r$r"
      tp_run "$tag-tp" 1 "$coll"
      ref_run "$tag" "$coll"
    done
    # Ablation: the reference with one speed-up off at a time (--jit: on), then with all
    # off (the plain reference the table compared with before issue #19). The default
    # models (their layout reference runs take a minute each): only the speed-ups that
    # touch what they add, TP_DEFAULT_ABLATION_ROUNDS rounds.
    if [[ " $TP_ABLATION_COLLECTIONS " == *" $coll "* ]]; then
      rounds=$TP_ABLATION_ROUNDS
      variants=("--no-node-major" "--no-catfree" "--no-segment-reduce" "--dropout-rng bernoulli" "--optimizer foreach"
                "--optimizer plain" "--no-malloc-env" "--jit" "$ALL_OFF")
    else
      rounds=$TP_DEFAULT_ABLATION_ROUNDS
      variants=("--no-node-major" "--no-segment-reduce")
    fi
    if [[ $coll == tile:* ]]; then variants=("--no-split" "${variants[@]}"); else variants=("--no-layout-split" "--no-onehot-config" "${variants[@]}"); fi
    for r in $(seq 1 "$rounds"); do
      for i in "${!variants[@]}"; do
        ref_run "tp-$(echo "$coll" | tr : _)-abl$i-r$r" "$coll" "" "" "${variants[$i]}"
      done
    done
  done
  collect throughput "$TP_EPOCHS"
fi

# -------------------------------------------------------------------------------- paths
# The timed rounds once per vector path (TP_PATHS), tpuperf's path forced.
if [ "$DO_PATHS" = 1 ]; then
  echo "== paths: tpuperf (1 rank, 1 thread) vs reference (1 thread) per vector path ($TP_PATHS), $ROUNDS rounds"
  : > "$WORK/runs.jsonl"
  for isa in $TP_PATHS; do
    RUN_ENV=(TPUPERF_VECTOR_ISA="$isa") TP_BIN=$BIN
    if [ "$isa" = avx2 ]; then RUN_ENV+=(OPENBLAS_CORETYPE=Haswell) TP_BIN=$TP_AVX2_BIN; fi
    for coll in $TP_COLLECTIONS; do
      for r in $(seq 1 "$ROUNDS"); do
        tag="pa-$isa-$(echo "$coll" | tr : _)-r$r"
        tp_run "$tag-tp" 1 "$coll"
        ref_run "$tag" "$coll"
      done
    done
  done
  RUN_ENV=() TP_BIN=$BIN
  collect paths "$TP_EPOCHS"
fi

# ------------------------------------------------------------------------------ scaling
if [ "$DO_SCALING" = 1 ]; then
  echo "== scaling: tpuperf 1 vs 2 ranks in one fold group, $ROUNDS rounds"
  : > "$WORK/runs.jsonl"
  for coll in $SC_COLLECTIONS; do
    for r in $(seq 1 "$ROUNDS"); do
      tag="sc-$(echo "$coll" | tr : _)-r$r"
      tp_run "$tag-np1" 1 "$coll" "$SC_EPOCHS"
      tp_run "$tag-np2" 2 "$coll" "$SC_EPOCHS"
      # Weak scaling: each of the 2 ranks takes as many graphs per step as the 1-rank run.
      tp_run "$tag-weak2" 2 "$coll" "$SC_EPOCHS" "" $((2 * $(setting train.graphs_per_step)))
      # Two busy cores share caches, memory bandwidth and the host: what two independent
      # 1-rank runs at once each get of the solo speed bounds the 2-rank run too.
      tp_run "$tag-pairA" 1 "$coll" "$SC_EPOCHS" & pair=$!
      tp_run "$tag-pairB" 1 "$coll" "$SC_EPOCHS"
      wait "$pair"
    done
  done
  collect scaling "$SC_EPOCHS"
fi

# ------------------------------------------------------------------------------- anchor
# The physical anchor: one core's sgemm rate (matmul_peak.py), and where each tool's time
# goes by perf samples (if perf is there): tpuperf-train and the reference, each on its own
# longer run (TP_PERF_EPOCHS) so that the training steps dominate start-up and loading.
# The achieved multiply-add rates themselves come from the throughput part's runs.
if [ "$DO_ANCHOR" = 1 ]; then
  echo "== anchor: one core's sgemm rate; perf profiles of both tools"
  l0=$(load1)
  $PY "$HERE/matmul_peak.py" --json "$WORK/peak.json"
  : > "$WORK/perf.jsonl"
  if command -v perf > /dev/null && perf stat -e task-clock true > /dev/null 2>&1; then
    for coll in $TP_COLLECTIONS; do
      t=$(echo "$coll" | tr : _)
      model_args "$coll"
      ref_args "$coll"
      train_cfg "$WORK/perf-$t.yaml" "$WORK/small-k1" "$WORK/runs/perf-$t"
      perf record -q -F 999 -o "$WORK/perf-$t-tp.data" -- mpirun --bind-to none -np 1 "$BIN/tpuperf-train" \
        --config "$WORK/perf-$t.yaml" --fresh "${MODEL_ARGS[@]}" --set train.epochs="$TP_PERF_EPOCHS" \
        --set train.threads_per_rank=1 --set train.eval_max_configs=20 > "$WORK/perf-$t-tp.log" 2>&1 \
        || { tail -20 "$WORK/perf-$t-tp.log"; exit 1; }
      perf record -q -F 999 -o "$WORK/perf-$t-ref.data" -- $PY "$HERE/reference_train.py" "${REF_ARGS[@]}" \
        --epochs "$TP_PERF_EPOCHS" --steps-per-epoch "$(setting train.steps_per_epoch)" \
        --dropout "$(coll_setting "$coll" dropout)" > "$WORK/perf-$t-ref.log" 2>&1 \
        || { tail -20 "$WORK/perf-$t-ref.log"; exit 1; }
      # A call-graph profile of tpuperf-train: what each part of its step takes, LibTorch's
      # own kernels (whose symbols are not exported) counted under their callers.
      perf record -q -F 499 --call-graph dwarf,16384 -o "$WORK/perf-$t-cg.data" -- mpirun --bind-to none -np 1 \
        "$BIN/tpuperf-train" --config "$WORK/perf-$t.yaml" --fresh "${MODEL_ARGS[@]}" \
        --set train.epochs="$TP_PERF_EPOCHS" --set train.threads_per_rank=1 --set train.eval_max_configs=20 \
        > "$WORK/perf-$t-cg.log" 2>&1 || { tail -20 "$WORK/perf-$t-cg.log"; exit 1; }
      perf report -i "$WORK/perf-$t-cg.data" --stdio --children --sort sym -g none --comm tpuperf-train 2> /dev/null \
        | $PY "$HERE/perf_shares.py" --collection "$coll" --tool tp-cg --children >> "$WORK/perf.jsonl"
      rm -f "$WORK/perf-$t-cg.data"
      for tool in tp ref; do
        comm=tpuperf-train
        [ $tool = ref ] && comm=python3
        perf report -i "$WORK/perf-$t-$tool.data" --stdio --no-children --sort dso,sym --comm "$comm" 2> /dev/null \
          | $PY "$HERE/perf_shares.py" --collection "$coll" --tool "$tool" >> "$WORK/perf.jsonl"
      done
    done
  else
    echo "  perf is not usable here: no profiles"
  fi
  $PY - "$WORK/peak.json" "$WORK/perf.jsonl" "$RES/anchor.json" "$(stamp)" "$l0" "$(load1)" "$TP_PERF_EPOCHS" <<'PY'
import json, sys
peak, perf_path, out, when, l0, l1, epochs = sys.argv[1:]
json.dump(dict(when=when, load=[float(l0), float(l1)], peak=json.load(open(peak)), perf_epochs=int(epochs),
               perf=[json.loads(l) for l in open(perf_path) if l.strip()]), open(out, "w"), indent=1)
PY
fi

# -------------------------------------------------------------------- bench tree (opt.)
BENCH_COLLECTIONS=${BENCH_COLLECTIONS:-[tile:xla,layout:xla:random,layout:xla:default,layout:nlp:random,layout:nlp:default]}
if [ "$DO_BENCH" = 1 ]; then
  echo "== bench tree: $BENCH_COLLECTIONS, short run"
  if [ ! -f "$BENCH_GEN/.complete" ]; then
    rm -rf "$BENCH_GEN"
    "$BIN/tpuperf-synth" --out "$BENCH_GEN" --scale bench --seed 0 --log-level warn
    touch "$BENCH_GEN/.complete"
  fi
  t0=$(now)
  preprocess bench-k2 "$BENCH_GEN/npz" 2 "$BENCH_COLLECTIONS"
  pre_s=$(since "$t0")
  train_cfg "$WORK/bench.yaml" "$WORK/bench-k2" "$WORK/bench-run"
  l0=$(load1); t0=$(now)
  mpi 2 "$BIN/tpuperf-train" --config "$WORK/bench.yaml" --fresh --set "data.collections=$BENCH_COLLECTIONS" \
    --set train.epochs="${BENCH_EPOCHS:-8}" --set train.steps_per_epoch="${BENCH_STEPS:-20}" \
    > "$WORK/bench.train.log" 2>&1 || { tail -30 "$WORK/bench.train.log"; exit 1; }
  wall=$(since "$t0"); l1=$(load1)
  # A truth tree holding only the trained collections, so that tpuperf-score does not ask
  # for the others' test graphs.
  rm -rf "$WORK/bench-truth"
  for c in $(echo "$BENCH_COLLECTIONS" | tr -d '[]' | tr , ' '); do
    sub=$(echo "$c" | tr : /)
    mkdir -p "$WORK/bench-truth/$(dirname "$sub")"
    ln -s "$BENCH_GEN/truth/$sub" "$WORK/bench-truth/$sub"
  done
  "$BIN/tpuperf-score" --submission "$WORK/bench-run/submission.csv" --truth "$WORK/bench-truth" --json \
    > "$WORK/bench.score.json"
  "$BIN/tpuperf-score" --submission "$WORK/bench-run/submission.csv" --truth "$WORK/bench-truth"
  $PY - "$WORK" "$RES/bench.json" "$wall" "$pre_s" "$l0" "$l1" "$(stamp)" "$BENCH_COLLECTIONS" \
      "${BENCH_EPOCHS:-8}" "${BENCH_STEPS:-20}" "$BENCH_GEN" <<'PY'
import csv, json, sys
work, out, wall, pre_s, l0, l1, when, colls, epochs, steps, tree = sys.argv[1:]
rows = [r for r in csv.DictReader(open(f"{work}/bench-run/metrics.csv")) if r["split"] == "train"]
cps = {}
for r in rows:
    c = cps.setdefault(r["collection"], [0.0, 0.0])
    c[0] += float(r["configs_per_s"]) * float(r["elapsed_s"])
    c[1] += float(r["elapsed_s"])
json.dump(dict(when=when, wall_s=float(wall), preprocess_s=float(pre_s), load=[float(l0), float(l1)],
               tree=tree, collections=colls, epochs=int(epochs), steps_per_epoch=int(steps),
               score=json.load(open(f"{work}/bench.score.json")),
               cps={k: v[0] / v[1] for k, v in cps.items()}), open(out, "w"), indent=1)
PY
fi

# ---------------------------------------------------------------------------- RESULTS.md
[ "$WRITE" = 1 ] || exit 0
PYTHONPATH="$HERE" $PY - "$RES" "$RESULTS" "$SMALL" "$BENCH_GEN" <<'PY'
from results_md import machine, replace_section
import json, os, re, statistics, sys
res, results, small, bench_gen = sys.argv[1:]


def on_machine(part):
    """' on <CPU>' for a part that recorded the machine it ran on (parts run before
    2026-12-07 did not: the section's Machine line is then the only record)."""
    return f" on {part['machine']}" if part.get("machine") else ""

def warm_note(part):
    """What the part's runs did before each timed run (warm_memory in bench_train.sh); parts
    run before 2026-12-07 08:50 UTC did nothing."""
    mb = part.get("warm_mb", 0)
    if not mb:
        return "No memory warm-up before the runs."
    return (f"Before each run of either tool a process wrote and freed {mb} MB (`TP_WARM_MB`): on this VM "
            "memory the guest frees goes back to the host, a first touch of it cost ~2.5 ms a MB, and "
            "without the warm-up the reference's AVX2 tile default ran at 4,100-5,200 configs/s (fastest right "
            "after a large run), with it at 5,200-6,200 (docs/experiments E49).")

def load(name):
    p = os.path.join(res, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None

quality, tp, sc, bench = load("quality"), load("throughput"), load("scaling"), load("bench")
paths = load("paths")
anchor = load("anchor")

# The section's subsections as they stand: a part without stored results (run elsewhere,
# or in another cache dir) keeps its text instead of vanishing.
existing = {}
if os.path.exists(results):
    m = re.search(r"^## Training\n(.*?)(?=^## |\Z)", open(results).read(), flags=re.S | re.M)
    for sub in re.split(r"^(?=### )", m.group(1) if m else "", flags=re.M)[1:]:
        existing[sub.split("\n", 1)[0]] = sub.rstrip("\n").split("\n") + [""]

def keep(prefix):
    """The existing subsection whose heading starts with prefix, as lines."""
    return next((v for k, v in existing.items() if k.startswith("### " + prefix)), [])

def f4(v):
    return "n/a" if v is None else f"{v:.4f}"

lines = ["## Training", "",
         "Written by `tests/bench/bench_train.sh` (each table from its part's last run; the run "
         "time and the 1-minute load average, at start → end, are given per part).", "",
         f"Machine: {machine()}; "
         "other jobs (compilers, other benchmarks) may share it: the load figures say how much.", ""]

def score_table(q, label):
    out = ["| collection | test graphs | tpuperf ensemble | random | default-first | beats random | "
           "beats default-first |", "|---|---|---|---|---|---|---|"]
    for c in q["score"]["collections"]:
        s, r, d = c["score"], c["random_baseline"], c["default_first_baseline"]
        out.append(f"| {c['collection']} | {c['graphs']} | {f4(s)} | {f4(r)} | {f4(d)} | "
                   f"{'yes' if s > r else '**no**'} | "
                   f"{'n/a' if d is None else ('yes' if s > d else '**no**')} |")
    o = q["score"]["overall"]
    out.append(f"| overall | | {f4(o['score'])} | {f4(o['random_baseline'])} | "
               f"{f4(o['default_first_baseline'])} | | |")
    return out

if quality:
    q = quality
    lines += ["### Quality (small tree)", "",
              f"Run {q['when']}, load {q['load'][0]:.2f} → {q['load'][1]:.2f}. Data: `tpuperf-synth "
              f"--out {q.get('tree', small)} --scale small --seed 0`, `tpuperf-preprocess` with `preprocess.folds=2`; "
              f"`{q['command']}` with these settings (the rest as in configs/demo.yaml):", "", "```yaml",
              q["settings"], "```", "",
              f"Wall time of tpuperf-train (loading, 2 folds x 5 collections, evaluation, test "
              f"prediction): {q['wall_s']:.0f} s. The training steps alone took {q['train_step_s']:.0f} s "
              "summed over the 10 fold models, two of which train at a time (one per rank).", "",
              "Test scores by `tpuperf-score --submission submission.csv --truth <tree> --json` "
              "(tile: mean of 2 - best of top-5 / best, layout: Kendall tau; higher is better; "
              "default-first is n/a for layout):", ""]
    lines += score_table(q, "test")
    lines += ["", "Validation split, as logged by tpuperf-train (ensemble of the fold models; cv = "
              "mean out-of-fold score of the best epochs):", "",
              "| collection | ensemble | random | default-first | cv |", "|---|---|---|---|---|"]
    for c, v in q["valid"].items():
        lines.append(f"| {c} | {f4(v['ensemble'])} | {f4(v['random'])} | {f4(v['default_first'])} | {f4(v['cv'])} |")
    lines.append("")

def compact(settings):
    """The YAML settings that shape a training step, on one line, for prose."""
    skip = ("epochs:", "threads_per_rank:", "eval_max_configs:", "seed:")
    return "; ".join(l.strip() for l in settings.splitlines()
                     if l.startswith("  ") and not l.strip().startswith(skip))

# What the anchor's figures mean, as checked against the profiles of the run that wrote
# them when the anchor was added (issue #19).
ANCHOR_NOTES = [
    "Where the rest goes. Measured this way neither tool is near the core's peak, and the matmuls are "
    "not why: OpenBLAS runs even these thin shapes at 55-85 GFLOP/s (above), so at the peak rate the "
    "counted multiply-adds would take only the '% of peak' share of each step. A step of these models "
    "(hidden 32) is mostly not multiply-adds (the default models, hidden 64 and 3 layers, have 4-6x the "
    "multiply-adds per node slot and move the balance towards the matmuls):",
    "",
    "- Memory-bound epilogues and graph ops. Per element of the per-config states (S x N x H: "
    "25,000-45,000 rows of 32 floats per batch) a SAGE block does 96 multiply-adds forward, against some "
    "fifteen passes over memory forward and backward: gathers and scatters of both edge directions, GELU, "
    "dropout, residual, LayerNorm. tpuperf fuses them into one pass per kernel (its 'fused kernels' share; "
    "the epilogue alone is a fifth to a quarter of its training steps), the reference runs each as its own "
    "LibTorch op over the whole tensor (its op profile above: gelu_backward, mul, add, copy_, layer norm, "
    "index_select and index_add_ together outweigh mm).",
    "- Small matmuls. tpuperf's width-32 kernels (register-blocked, no packing) run at a fraction of the "
    "sgemm rate: rows of 32 or 96 floats give each loaded value few multiply-adds. They take a fifth to "
    "more than a quarter of its samples; the reference's OpenBLAS calls pack their operands first (the "
    "*copy_COOPERLAKE routines in its profile).",
    "- Fixed per-op and per-step costs: LibTorch's dispatcher, autograd engine and allocator for every op "
    "(the LibTorch and malloc/page-fault shares; the reference adds the Python interpreter), and the "
    "readout, attention, loss and optimizer on small tensors.",
    "- Layout's config rows. Both tools embed the config values as a one-hot matmul (a GEMM: the "
    "EmbeddingBag backward that took 20-40% of tpuperf's layout steps in the profile of 2026-11-25 is "
    "gone). tpuperf reads each slate's rows from the HDF5 shard inside the step (the reference holds them "
    "in memory), now through a chunk cache of inflated rows (`train.config_cache_mb`). The call-graph "
    "profile gives reading them 2-3% of the steps both before and after the cache, but the step trace "
    "(wall clock around batch building, `--log-level debug`) measured 12.6-13.3 ms of a ~50 ms "
    "layout:xla:random step before it and 2.7-3.0 ms after, 1 rank, on 2026-11-26: the trace is the direct "
    "measurement; the profile's attribution depends on unwinding the stack through HDF5's and zlib's "
    "frames.",
    "",
]

def by(runs, **kw):
    return [r for r in runs if all(r[k] == v for k, v in kw.items())]

def best(runs):
    return max(r["cps"] for r in runs)

def loads(runs):
    return ", ".join(f"{r['load'][0]:.1f}" for r in runs)

def shares(runs):
    return ", ".join("/".join(f"{100 * x:.0f}%" for x in r.get("cpu_share", [])) for r in runs)

def cpu_s(runs):
    return ", ".join(f"{r['cpu_seconds']:.1f}" for r in runs if "cpu_seconds" in r)

def all_cps(runs):
    return ", ".join(f"{r['cps']:.0f}" for r in runs)

# The step trace of the scaling runs (tpuperf-train --log-level debug), issue #19 step 4:
# per collection the best round's 1-rank and 2-rank runs, a rank's step by phase. At 2
# ranks a rank runs half the graphs, so the ideal step is half the 1-rank step; what each
# phase takes beyond its half is what the second rank cannot save.
PHASES = [("build_ms", "batch building"), ("forward_backward_ms", "forward+backward"),
          ("allreduce_ms", "all-reduce"), ("optimizer_ms", "optimizer")]

def mean_rank(run, key):
    return sum(t[key] for t in run["trace"]) / len(run["trace"])

def scaling_trace(runs, colls):
    rows = []
    for c in colls:
        one = max((r for r in by(runs, collection=c) if r["tag"].endswith("-np1") and r.get("trace")),
                  key=lambda r: r["cps"], default=None)
        two = max((r for r in by(runs, collection=c) if r["tag"].endswith("-np2") and r.get("trace")),
                  key=lambda r: r["cps"], default=None)
        if not one or not two:
            continue
        t1 = sum(mean_rank(one, k) for k, _ in PHASES)
        t2 = sum(mean_rank(two, k) for k, _ in PHASES)
        excess = "; ".join(f"{name} {mean_rank(two, k) - mean_rank(one, k) / 2:+.2f}" for k, name in PHASES)
        cells = lambda run: " / ".join(f"{mean_rank(run, k):.2f}" for k, _ in PHASES)
        fb = [f"{t['forward_backward_ms']:.2f}" for t in two["trace"]]
        rows.append(f"| {c} | {cells(one)} = {t1:.2f} | {cells(two)} = {t2:.2f} | {t1 / 2:.2f} | "
                    f"{t2 - t1 / 2:+.2f} ({100 * (t1 / 2) / t2:.0f}%) | {excess} | {', '.join(fb)} | "
                    f"{mean_rank(one, 'batches'):.2f}; {mean_rank(two, 'batches'):.2f} | "
                    f"{mean_rank(one, 'padding_pct'):.1f}%; {mean_rank(two, 'padding_pct'):.1f}% |")
    if not rows:
        return []
    return ["Where a rank's step goes (the trace: `tpuperf-train --log-level debug` logs each rank's "
            "per-step phase times per epoch; here the mean over epochs 2 and later, the first being "
            "warm-up; the best round's runs of the table above). At 2 ranks each rank runs half the "
            "step's graphs, so the ideal step is half the 1-rank step; 'beyond the ideal' is what the "
            "2-rank step takes more, split by phase (each phase's 2-rank time minus half its 1-rank "
            "time; the all-reduce is the wait for the slower rank plus the transfer). 'Step' efficiency "
            "= ideal / 2-rank step; it leaves out the per-epoch evaluation and logging that configs/s "
            "also leaves out, so it is close to the table's efficiency. Padding: the share of the node "
            "slots (nodes x slate width) a batch runs that belong to no real config (graphs padded to "
            "their batch's widest slate): the upper bound of what ragged batches would save.", "",
            "| collection | 1 rank, ms per step: build / forward+backward / all-reduce / optimizer = step | "
            "2 ranks, per rank (mean): the same | ideal 2-rank step (half) | beyond the ideal (step "
            "efficiency) | beyond the ideal by phase, ms | forward+backward per rank, ms | batches per "
            "step, 1 rank; 2 ranks | padding, 1 rank; 2 ranks |",
            "|---|---|---|---|---|---|---|---|---|"] + rows + [""]

if not quality:
    lines += keep("Quality")

if not tp:
    lines += keep("Throughput")

if tp:
    # Timed runs use the configured dropout; check runs (dropout 0) show the same work.
    checks = [r for r in tp["runs"] if r.get("check")]
    check_len = f"{tp.get('check_epochs', '?')} epochs of {tp.get('check_steps', '?')} steps"
    # Targets of the ratio (issue #46): (tile, schema's default model) -> at least this.
    TARGETS = {(True, False): 3.0, (False, False): 1.5, (True, True): 2.5, (False, True): 2.0}
    ablation = [r for r in tp["runs"] if not r.get("check") and r.get("variant")]
    runs = [r for r in tp["runs"] if not r.get("check") and not r.get("variant")]
    colls = list(dict.fromkeys(r["collection"] for r in runs))
    lines += ["### Throughput: tpuperf-train vs PyTorch-Python reference (1 core each)", "",
              "The reference (tests/bench/reference_train.py) is the strongest plain-PyTorch version of "
              "the same model and loop we could write (issue #19): the tile model's first block split as "
              "tpuperf's forward_split, the layout models' as its forward_configs, node-major per-config states (N x S x H: gathers and scatters "
              "over nodes move contiguous rows), aggregation without the 3H-wide cat, pooling over each "
              "graph's contiguous node run, the "
              "layout config embedding as a one-hot matmul, dropout masks from 16-bit draws, one flat "
              "parameter and gradient buffer (one clipping norm, AdamW on one tensor) and tpuperf-train's "
              "allocator settings (glibc's MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_, and "
              "glibc.malloc.hugetlb=1: transparent huge pages, as tpuperf's tensor pool uses). What each "
              "is worth is in the ablation table below.", "",
              f"Run {tp['when']}{on_machine(tp)}. Processed dir: the small tree with `preprocess.folds=1` (one model "
              f"per collection, trained on all train graphs). Both sides: {tp['epochs']} epochs, the "
              f"settings of the quality part ({compact(tp['settings'])}), 1 thread "
              "(`train.threads_per_rank=1` / `torch.set_num_threads(1)`, OMP/OpenBLAS threads 1). "
              f"tpuperf: `mpirun -np 1 tpuperf-train ... --set data.collections=[C] --set "
              f"train.epochs={tp['epochs']} --set train.threads_per_rank=1`; reference: "
              f"`/usr/bin/python3 tests/bench/reference_train.py --processed DIR --collection C "
              f"--epochs {tp['epochs']} ... --threads 1` (Debian python3-torch, "
              f"torch.__version__ {next((r['torch'] for r in runs if r.get('torch')), '?')}). configs/s = configs of all "
              "training steps / their seconds (evaluation and loading excluded on both sides); "
              f"{tp['rounds']} rounds alternating the tools, best round shown, all rounds in brackets. "
              f"{warm_note(tp)}", "",
              "| collection | model | tpuperf configs/s per core | reference configs/s per core | ratio | target | "
              f"dropout-0 check ({check_len}), losses per epoch, max rel. diff: reference vs tpuperf plain; "
              "vs tpuperf fused; tpuperf fused vs plain | max abs. weight diff after the check: reference vs "
              "tpuperf plain; tpuperf fused vs plain | load per round (tp; ref) | "
              "per CPU second: tpuperf (estimate); reference; ratio |",
              "|---|---|---|---|---|---|---|---|---|---|"]

    def loss_diff(t, r):
        return max((abs(a - b) / max(abs(a), 1e-12) for x, y in zip(t, r) for a, b in zip(x["losses"], y["losses"])),
                   default=None)

    def e1(v):
        return "n/a" if v is None else f"{v:.1e}"

    for c in colls:
        t, r = by(runs, collection=c, tool="tpuperf"), by(runs, collection=c, tool="reference")
        if not t or not r:
            continue
        ct = [x for x in by(checks, collection=c, tool="tpuperf") if "model.fused=false" in x.get("variant", "")]
        cf = [x for x in by(checks, collection=c, tool="tpuperf") if "model.fused=true" in x.get("variant", "")]
        cr = by(checks, collection=c, tool="reference")
        losses = "; ".join(e1(v) for v in (loss_diff(ct, cr), loss_diff(cf, cr), loss_diff(ct, cf)))
        wd = max((y["max_abs_param_diff"] for y in cr if y.get("max_abs_param_diff") is not None), default=None)
        wf = max((y["fused_vs_plain_param_diff"] for y in cr if y.get("fused_vs_plain_param_diff") is not None),
                 default=None)
        target = TARGETS[(c.startswith("tile:"), c.endswith("@default"))]
        model = next((f"{x['arch']}, {x['loss']}" for x in r if x.get("arch")), "?")
        # Per CPU second: the reference times its steps' process CPU time; tpuperf's is
        # estimated as its configs/s over its process's core share (/usr/bin/time, whole run).
        tcpu = max((x["cps"] / x["cpu_share"][0] for x in t if x.get("cpu_share")), default=None)
        rcpu = max((x.get("cps_cpu") or 0 for x in r), default=0) or None
        cpu_cell = "n/a" if not (tcpu and rcpu) else f"{tcpu:.0f}; {rcpu:.0f}; {tcpu / rcpu:.2f}"
        lines.append(f"| {c} | {model} | {best(t):.1f} ({all_cps(t)}) | {best(r):.1f} ({all_cps(r)}) | "
                     f"**{best(t) / best(r):.2f}** | >= {target:g} | {losses} | {e1(wd)}; {e1(wf)} | "
                     f"{loads(t)}; {loads(r)} | {cpu_cell} |")
    lines += ["", "'Per CPU second': with other jobs on the machine (a load above 2 on its 2 cores) each tool "
              "gets only part of a core, and wall-time rates fall with it. The reference's figure is configs per "
              "CPU second of its timed steps (time.process_time); tpuperf's is an estimate, its configs/s over "
              "its process's core share ((user + sys) / wall over the whole run, /usr/bin/time), which assumes "
              "the share is the same in the training steps as over the whole run. Neither removes what the "
              "other core's jobs take from the shared cache and memory bandwidth."]
    # Where it stands against the targets, and against the plain reference in the same run.
    stand, worth = [], []
    for c in colls:
        t, r = by(runs, collection=c, tool="tpuperf"), by(runs, collection=c, tool="reference")
        off = [x for x in ablation if x["collection"] == c and x["variant"].startswith("--no-split --no-node-major")]
        if off and r:
            worth.append(best(r) / best(off))
        if t and r:
            goal = TARGETS[(c.startswith("tile:"), c.endswith("@default"))]
            stand.append(f"{c} {best(t) / best(r):.2f}x (target {goal:g}x: "
                         f"{'met' if best(t) / best(r) >= goal else '**not met**'}"
                         + (f"; {best(t) / best(off):.2f}x over the plain reference in the same run" if off else "")
                         + ")")
    timed = [r for r in runs if not r.get("check") and not r.get("variant") and r.get("load")]
    load_lo = min((r["load"][0] for r in timed), default=float("nan"))
    load_hi = max((r["load"][0] for r in timed), default=float("nan"))
    lines += ["", "Where it stands: " + "; ".join(stand) + f". The rounds ran at a load of {load_lo:.1f}-{load_hi:.1f} "
              "on the 2 cores. The reference's speed-ups together are worth "
              + (f"{min(worth):.2f}-{max(worth):.2f}x" if worth else "n/a")
              + " to it by wall time (ablation below), most of what tpuperf's kernels gained over the plain "
              "version; both sides embed the layout config values as a one-hot matmul. What is left to tpuperf "
              "is fusion (one pass per SAGE linear and per GELU/dropout/residual/LayerNorm epilogue, where the "
              "reference runs a LibTorch op per step of the formula), its width-32 matmul kernels and, on layout, "
              "a chunk cache of inflated config rows (`train.config_cache_mb`: by the step trace of "
              "2026-11-26, 1 rank, layout:xla:random, batch building fell from 12.6-13.3 to 2.7-3.0 ms of a "
              "step of about 50 ms). Both sides' tensors lie on transparent huge pages: on the machine of "
              "docs/experiments E35 a 4 KiB page fault cost 13-18 us, and tpuperf's first epoch, which fills "
              "its tensor pool, ran 2.3x its later ones without them. The per-CPU-second columns and the "
              "ablation's CPU-time factors are the figures least disturbed by other jobs."]
    if ablation:
        labels = {
            "--no-split": "tile's first block split (forward_split)",
            "--no-layout-split": "layout's first block split (node rows + configurable-node rows, moved along the "
                                 "edges from configurable nodes)",
            "--no-node-major": "node-major states N x S x H (gathers and scatters over nodes move contiguous rows)",
            "--no-catfree": "cat-free aggregation (three H x H matmuls, then the H-wide products aggregated)",
            "--no-segment-reduce": "pooling over each graph's contiguous node run (max with scatter_reduce's tie-splitting gradient)",
            "--no-onehot-config": "layout config embedding as a one-hot matmul (not EmbeddingBag; the default model: "
                                  "shape_in in the same matmul, whose input rows the wide term reuses, not a gather)",
            "--dropout-rng bernoulli": "dropout masks from 16-bit draws (not bernoulli_)",
            "--optimizer foreach": "flat parameters and gradients (not AdamW(foreach=True) + one flat norm)",
            "--optimizer plain": "flat parameters and gradients (not AdamW + clip_grad_norm_)",
            "--no-malloc-env": "tpuperf-train's allocator settings (glibc environment)",
            "--jit": "torch.jit.script of the loss and the aggregation (off: this row turns it on)",
        }
        present = set(r["variant"] for r in ablation)
        variants = [v for v in labels if v in present] + sorted(present - set(labels))
        rounds = max(len(by(ablation, collection=colls[0], variant=v)) for v in variants)

        def best_cpu(rs):
            return max((r.get("cps_cpu") or 0) for r in rs)

        lines += ["", f"Ablation of the reference (run {tp['when']}, {rounds} rounds each, after the rounds above): "
                  "configs/s with one speed-up turned off (--jit: turned on), best round and all rounds, and "
                  "the factor the speed-up is worth: the reference's best configs/s above (all on) over this "
                  "variant's best (for --jit: with over without); above 1 it helps. In brackets the same "
                  "factor from configs per CPU second of the timed steps (time.process_time), which other "
                  "jobs' load disturbs less than wall time. The last row turns them all off: the plain "
                  "reference of before issue #19.", "",
                  "| speed-up (reference flag that turns it off) | " +
                  " | ".join(f"{c}: configs/s without; factor (CPU-time factor)" for c in colls) + " | kept |",
                  "|---|" + "---|" * len(colls) + "---|"]
        for v in variants:
            cells = []
            for c in colls:
                a, base = by(ablation, collection=c, variant=v), by(runs, collection=c, tool="reference")
                if not a or not base or (v == "--no-split" and not c.startswith("tile:")) or \
                        (v == "--no-layout-split" and c.startswith("tile:")) or \
                        (v == "--no-onehot-config" and c.startswith("tile:")):
                    cells.append("n/a")
                    continue
                f = best(a) / best(base) if v == "--jit" else best(base) / best(a)
                fc = "n/a"
                if best_cpu(a) and best_cpu(base):
                    fc = f"{(best_cpu(a) / best_cpu(base) if v == '--jit' else best_cpu(base) / best_cpu(a)):.2f}"
                cells.append(f"{best(a):.0f} ({all_cps(a)}); **{f:.2f}** ({fc})")
            label = labels.get(v, "all of the above off")
            kept = "no" if v == "--jit" else ("-" if v not in labels else "yes")
            lines.append(f"| {label} (`{v}`) | " + " | ".join(cells) + f" | {kept} |")
        lines += ["", "Which are kept: every speed-up but --jit (no gain: torch 1.13's CPU build has no fuser, "
                  "so scripting only trims Python overhead, which is small here). The wall-time factors move "
                  "with the machine's load between the rounds (some fall below 1 by wall time while above 1 per "
                  "CPU second), so the choice rests on the CPU-time factors; where a speed-up is worth nothing "
                  "on a collection it costs nothing either (same math, float-equal within rounding: all "
                  "variants agree in float64 to 4e-9). The allocator settings are kept for symmetry with "
                  "tpuperf-train whatever they are worth."]
    lines += ["", "Where the reference's step time goes (self CPU time per LibTorch op, PyTorch profiler "
              "on 3 extra reference steps after training; tpuperf does the same math with fused "
              "kernels, trainer/kernels/fused_ops.h; the reference's Python-side batch building is given as "
              "its share of the timed steps):", ""]
    for c in colls:
        r = [x for x in by(runs, collection=c, tool="reference") if x.get("profile")]
        if r:
            ops = ", ".join(f"{p['op'].replace('aten::', '')} {100 * p['share']:.0f}%" for p in r[0]["profile"])
            lines.append(f"- {c}: {ops}; batch building {100 * r[0]['batch_share']:.1f}%")
    lines += ["", "The reference builds the same modules in the same order from the same seeds, draws "
              "the same slates and splits each step's graphs into the same batches by slate width "
              "(tpuperf's sampler re-implemented). Dropout masks cannot match: tpuperf "
              "draws them by hashing (seed, element index) with splitmix64 (trainer/kernels/fused_ops.h), the "
              "reference from torch's generator (the same keep probability, round(p 2^16) / 2^16). So the same-work check is a "
              "separate run of both sides with model dropout 0 (all else equal, "
              f"{check_len}): its per-epoch training losses and final "
              "weights (tpuperf's training weights, stored beside the averaged ones when train.ema_decay > 0) are "
              "compared (columns 'dropout-0 check'), against tpuperf's plain LibTorch path (`model.fused=false`, "
              "the models' readable definition) and its fused kernels; the fused run against the plain one is "
              "tpuperf's own rounding floor, which the reference should not exceed by much. The check is short "
              "because float rounding grows through training: AdamW's early updates are about lr x the sign of the "
              "gradient for gradients near zero (the wide terms start at zero), so weights differ by up to "
              "~1e-3-1e-2 after a few steps on both comparisons alike, and over 2 epochs of 20 steps even tpuperf's "
              "fused and plain paths drift apart by ~1e-4 in the loss. The timed runs then use the "
              "configured dropout on both sides, and their losses differ by the masks only. Where the "
              "reference differs it is favoured: it keeps every layout config row in memory (tpuperf "
              "reads each slate's rows from the HDF5 shard inside the step, through its chunk cache of "
              "inflated rows) and draws an epoch's slates before its clock starts.", ""]

if not paths:
    lines += keep("Throughput by vector path")

if paths:
    # Targets on each path (issue #58: the default models at least 2x on AVX2, no slower on
    # AVX-512 than the main table's); the bench models keep the main table's.
    PATH_TARGETS = {(True, False): 3.0, (False, False): 1.5, (True, True): 2.0, (False, True): 2.0}
    runs = [r for r in paths["runs"] if not r.get("check")]
    isas = list(dict.fromkeys(r["tag"].split("-")[1] for r in runs))
    colls = list(dict.fromkeys(r["collection"] for r in runs))
    lines += ["### Throughput by vector path (tpuperf-train vs the reference, 1 core each)", "",
              f"Run {paths['when']}{on_machine(paths)}. The rounds of the throughput table, once per vector path of the fused "
              "kernels (trainer/kernels/vector_path.h): tpuperf-train with `TPUPERF_VECTOR_ISA` forced, "
              "the path it reports in its start-up line in the column 'path'. The avx2 rows emulate an "
              "AVX2 machine on this one: tpuperf-train from a build with the flags in the column 'build' "
              "(`-march=x86-64-v3`: AVX2 + FMA, no AVX-512 anywhere but in the unused avx512 path) and "
              "both tools with `OPENBLAS_CORETYPE=Haswell` (OpenBLAS's AVX2 kernels; Debian's LibTorch "
              "dispatches its own kernels up to AVX2 on every CPU: `torch.__config__.show()` says 'CPU "
              "capability usage: AVX2'). Same settings, epochs and configs/s as the throughput table; "
              f"{paths['rounds']} rounds alternating the tools, best round shown, all rounds in brackets. "
              f"{warm_note(paths)}", "",
              "| path | collection | model | tpuperf path | build | tpuperf configs/s per core | reference configs/s "
              "per core | ratio | target | load per round (tp; ref) | per CPU second: tpuperf (estimate); "
              "reference; ratio |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    stand = []
    for isa in isas:
        for c in colls:
            t = [r for r in by(runs, collection=c, tool="tpuperf") if r["tag"].split("-")[1] == isa]
            r = [x for x in by(runs, collection=c, tool="reference") if x["tag"].split("-")[1] == isa]
            if not t or not r:
                continue
            target = PATH_TARGETS[(c.startswith("tile:"), c.endswith("@default"))]
            model = next((f"{x['arch']}, {x['loss']}" for x in r if x.get("arch")), "?")
            tcpu = max((x["cps"] / x["cpu_share"][0] for x in t if x.get("cpu_share")), default=None)
            rcpu = max((x.get("cps_cpu") or 0 for x in r), default=0) or None
            cpu_cell = "n/a" if not (tcpu and rcpu) else f"{tcpu:.0f}; {rcpu:.0f}; {tcpu / rcpu:.2f}"
            b = t[0].get("build") or {}
            build = (f"`{b.get('CMAKE_CXX_FLAGS') or '(none)'}`, TPUPERF_NATIVE={b.get('TPUPERF_NATIVE', '?')}"
                     if b else "?")
            ratio = best(t) / best(r)
            lines.append(f"| {isa} | {c} | {model} | {t[0].get('vector_path', '?')} | {build} | "
                         f"{best(t):.1f} ({all_cps(t)}) | {best(r):.1f} ({all_cps(r)}) | **{ratio:.2f}** | "
                         f">= {target:g} | {loads(t)}; {loads(r)} | {cpu_cell} |")
            stand.append(f"{isa} {c} {ratio:.2f}x ({'met' if ratio >= target else '**not met**'})")
    lines += ["", "Where it stands against the targets: " + "; ".join(stand) + ".", ""]

if anchor and tp:
    pk = anchor["peak"]
    peak = max(pk["numpy_sgemm"], pk["torch_sgemm"])
    runs = [r for r in tp["runs"] if not r.get("check") and not r.get("variant")]
    colls = list(dict.fromkeys(r["collection"] for r in runs))
    perf = {(p["collection"], p["tool"]): p for p in anchor["perf"]}
    lines += ["### Achieved multiply-add rate against one core's peak", "",
              f"Run {anchor['when']}, load {anchor['load'][0]:.2f} → {anchor['load'][1]:.2f}. Peak: a "
              f"{pk['size']} x {pk['size']} x {pk['size']} float32 matmul on one thread (tests/bench/matmul_peak.py: "
              f"numpy {pk['numpy_sgemm']:.1f} GFLOP/s, torch.mm {pk['torch_sgemm']:.1f} GFLOP/s, both OpenBLAS "
              f"0.3.21; the higher is the peak, {peak:.1f} GFLOP/s). A training step's work is counted from the "
              "model's shapes (reference_train.py forward_macs: every matmul of the forward pass, the first "
              "blocks split as both tools run them, x 3 for forward + backward, 2 flops per multiply-add; gathers, "
              "scatters and elementwise ops not counted) over the batches of the throughput runs, which "
              "both tools train; achieved = that count x the best configs/s of the throughput table.", "",
              "| collection | matmul MFLOP per config (training) | tpuperf GFLOP/s | % of peak | reference GFLOP/s | "
              "% of peak | matmul kernels' share of tpuperf's samples (BLAS + width-32) | BLAS share of the reference's samples |",
              "|---|---|---|---|---|---|---|---|"]
    mm_cats = ("BLAS sgemm (OpenBLAS: kernels and packing)", "tpuperf width-32 matmul kernels")
    for c in colls:
        t, r = by(runs, collection=c, tool="tpuperf"), by(runs, collection=c, tool="reference")
        fpc = next((x["train_flops_per_config"] for x in r if x.get("train_flops_per_config")), None)
        if not t or not r or fpc is None:
            continue
        gt, gr = fpc * best(t) / 1e9, fpc * best(r) / 1e9
        pt, pr = perf.get((c, "tp")), perf.get((c, "ref"))
        st = "n/a" if not pt else f"{100 * sum(pt['categories'].get(k, 0) for k in mm_cats):.0f}%"
        sr = "n/a" if not pr else f"{100 * pr['categories'].get(mm_cats[0], 0):.0f}%"
        lines.append(f"| {c} | {fpc / 1e6:.2f} | {gt:.2f} | {100 * gt / peak:.1f}% | {gr:.2f} | "
                     f"{100 * gr / peak:.1f}% | {st} | {sr} |")
    lines += ["", "OpenBLAS (torch.mm, one thread) at the shapes of these models' matmuls (hidden 32, the bench models, and 64, the defaults; "
              "rows = slots x nodes of a tile batch): " +
              "; ".join(f"{k}: {v:.1f} GFLOP/s" for k, v in pk["shapes"].items()) + ".", ""]
    if anchor["perf"]:
        lines += [f"Where the time goes, by perf samples (`perf record -F 999`, a run of {anchor['perf_epochs']} "
                  "epochs per tool and collection with the throughput settings, the whole process: "
                  "start-up, loading and evaluation included, so the training steps are most but not all of it; "
                  "tests/bench/perf_shares.py groups the samples by library and symbol):", ""]
        for c in colls:
            for tool, name in (("tp", "tpuperf"), ("ref", "reference")):
                p = perf.get((c, tool))
                if p:
                    cats = sorted(p["categories"].items(), key=lambda kv: -kv[1])
                    lines.append(f"- {c}, {name}: " + "; ".join(f"{k} {100 * v:.0f}%" for k, v in cats if v >= 0.005))
        lines.append("")
        cg = [(c, perf[(c, "tp-cg")]["children"]) for c in colls if (c, "tp-cg") in perf]
        if cg:
            lines += ["tpuperf-train's training steps by part (`perf record --call-graph dwarf`, same runs' "
                      "settings; each part with everything it calls, LibTorch's unexported kernels counted "
                      "under their callers; as a share of the samples in the training steps, whose own share "
                      "of the whole run is given first; the forward parts also count the evaluation's forward "
                      "passes):", ""]
            for c, ch in cg:
                steps = ch.get("training steps")
                if not steps:
                    continue
                parts = [f"{k} {100 * v / steps:.0f}%" for k, v in ch.items()
                         if k not in ("training steps", "evaluation (scoring held-out and valid graphs)") and v / steps >= 0.005]
                lines.append(f"- {c}: training steps {100 * steps:.0f}% of the run; " + "; ".join(parts))
            lines.append("")
    lines += ANCHOR_NOTES

if not (anchor and tp):
    lines += keep("Achieved multiply-add rate")

if not sc:
    lines += keep("Data-parallel scaling")

if sc:
    runs = sc["runs"]
    colls = list(dict.fromkeys(r["collection"] for r in runs))
    lines += ["### Data-parallel scaling inside one fold group", "",
              f"Run {sc['when']}. `preprocess.folds=1`, so `mpirun -np 2` makes one group of 2 ranks "
              f"(gradients all-reduced every step); threads_per_rank=1, the same graphs_per_step "
              f"({sc['settings'].split('graphs_per_step: ')[1].split()[0]}) and slates, {sc['epochs']} epochs; "
              f"{sc['rounds']} rounds, each: 1 rank, 2 ranks, 2 ranks with twice the graphs per step, then two "
              "independent 1-rank runs at once (the pair); best round shown, all rounds in brackets.", "",
              "| collection | 1 rank configs/s | 2 ranks configs/s | efficiency (cps_2 / cps_1) / 2 | "
              "target | per round | weak scaling: 2 ranks x the 1-rank step, configs/s; efficiency | "
              "machine ceiling: pair / solo, per round | loads 1 rank; 2 ranks | "
              "core share per rank, 1 rank; 2 ranks | CPU s, 1 rank; 2 ranks |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in colls:
        mine = by(runs, collection=c)
        one = [r for r in mine if r["tag"].endswith("-np1")]
        two = [r for r in mine if r["tag"].endswith("-np2")]
        weak = [r for r in mine if r["tag"].endswith("-weak2")]
        if not one or not two:
            continue
        eff = best(two) / best(one) / 2
        weak_cell = f"{best(weak):.1f} ({all_cps(weak)}); {100 * best(weak) / best(one) / 2:.0f}%" if weak else "n/a"
        per_round = ", ".join(f"{50 * b['cps'] / a['cps']:.0f}%" for a, b in zip(one, two))
        pairs = [(a, [r for r in mine if r["tag"] in (a["tag"][:-4] + "-pairA", a["tag"][:-4] + "-pairB")])
                 for a in one]
        ceiling = ", ".join(f"{100 * sum(r['cps'] for r in p) / len(p) / a['cps']:.0f}%" for a, p in pairs if p)
        lines.append(f"| {c} | {best(one):.1f} ({all_cps(one)}) | {best(two):.1f} ({all_cps(two)}) | "
                     f"**{100 * eff:.0f}%** | >= 85% | {per_round} | {weak_cell} | {ceiling or 'n/a'} | "
                     f"{loads(one)}; {loads(two)} | {shares(one)}; {shares(two)} | "
                     f"{cpu_s(one)}; {cpu_s(two)} |")
    lines += ["", "tile:xla@default: the same runs with the schema's default tile model and slate "
              "(`tpuperf-train --help-config`: what configs/tpugraphs.yaml trains on the real data) in "
              "place of the quality settings' smaller model; its steps are about 4x longer, so fixed "
              "per-step costs weigh less.",
              "", "On this 2-core machine the 2-rank runs need both cores: any other job's load "
              "lowers them more than the 1-rank runs. 'Core share' is each rank's (user + sys) / wall "
              "time over its whole process (start-up, loading and evaluation included; /usr/bin/time): "
              "well below 100% means the rank waited, for the other rank or for a core taken by "
              "another job. 'CPU s' is the CPU time of all ranks of a run: equal values at 1 and 2 "
              "ranks would mean no work is duplicated or wasted by the second rank. 'Per round' is "
              "each round's own efficiency (its 2-rank run / its 1-rank run / 2). Weak scaling: the "
              "2-rank run with graphs_per_step doubled, so that each rank's step is the 1-rank run's "
              "(best round / best 1-rank round / 2); it trains with a larger step than the 1-rank run, "
              "so it shows what fixed per-step costs take from the strong figure. The machine ceiling "
              "is the mean configs/s of the round's pair (two tpuperf-train -np 1 runs started "
              "together, no MPI between them) over the round's solo 1-rank run: the share of a solo "
              "core each of two busy processes gets on this machine, so it bounds the 2-rank "
              "efficiency as well, whatever the trainer does.", ""]
    lines += scaling_trace(runs, colls)

if not bench:
    lines += keep("Bench tree")

if bench:
    b = bench
    n_coll = len(b["collections"].strip("[]").split(","))
    lines += [f"### Bench tree ({'all five collections' if n_coll == 5 else 'some collections'})", "",
              f"Run {b['when']}, load {b['load'][0]:.2f} → {b['load'][1]:.2f}. `tpuperf-synth --scale bench "
              f"--seed 0` ({b.get('tree', bench_gen)}), collections {b['collections']}, folds 2, preprocessing "
              f"{b['preprocess_s']:.0f} s on 2 ranks; tpuperf-train on 2 ranks with the quality settings, "
              f"{b['epochs']} epochs of {b['steps_per_epoch']} steps: {b['wall_s']:.0f} s wall. Training "
              "configs/s (per fold, 1 rank each): "
              + ", ".join(f"{k} {v:.0f}" for k, v in b["cps"].items()) + ".", ""]
    lines += score_table(b, "test")
    lines.append("")

section = "\n".join(lines).rstrip("\n") + "\n"
replace_section(results, "Training", section)
print(section)
PY
echo "wrote $RESULTS"
