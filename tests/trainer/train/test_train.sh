#!/usr/bin/env bash
# preprocess + tpuperf-train end to end on a generated tiny tree with mpirun -np 2 and 2
# folds: the submission covers every test graph with valid rows and beats random order;
# a run killed after an epoch and resumed ends with the same metrics and submission as an
# uninterrupted one; --predict-only reproduces the submission from the saved checkpoints;
# an output.dir with old checkpoints is refused without --resume/--fresh; the second tile
# architecture and the unfused model path train through the same binary; a hung rank is
# named by its peer, which stops the job (train.stall_timeout_s).
# Usage: test_train.sh BIN_DIR SRC_DIR
set -euo pipefail
BIN=$1
SRC=$2
PY=/usr/bin/python3
source "$SRC/tests/tiny_train.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { local np=$1; shift; mpirun --bind-to none -np "$np" "$@"; }
step() { echo; echo "== $*"; }

"$BIN/tpuperf-synth" --out "$work/gen" --scale tiny --seed 5 >/dev/null 2>&1
cat > "$work/cfg.yaml" <<YAML
data:
  raw_dir: $work/gen/npz
  processed_dir: $work/processed
preprocess:
  folds: 2
output:
  dir: $work/run
$(tiny_train_yaml 3 32 2 1)
YAML
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" > "$work/pre.log" 2>&1 || { cat "$work/pre.log"; exit 1; }

step "train 2 folds on 2 ranks"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" > "$work/train.log" 2>&1 || { tail -40 "$work/train.log"; exit 1; }
for f in submission.csv metrics.csv report.md train_config.yaml; do
  [ -s "$work/run/$f" ] || { echo "missing $f"; exit 1; }
done
ls "$work/run"/*.svg > /dev/null
"$BIN/tpuperf-score" --submission "$work/run/submission.csv" --truth "$work/gen" --json > "$work/score.json"
$PY - "$work" <<'PY'
import csv, json, os, sys
work = sys.argv[1]
s = json.load(open(f"{work}/score.json"))
print(json.dumps(s, indent=1)[:2000])
rows = list(csv.DictReader(open(f"{work}/run/submission.csv")))
truth = []
for root, _, files in os.walk(f"{work}/gen/truth"):
    truth += [os.path.join(root, f) for f in files]
assert len(rows) == len(truth), (len(rows), len(truth))
for r in rows:
    cfgs = [int(x) for x in r["TopConfigs"].split(";")]
    assert len(cfgs) == len(set(cfgs)), r["ID"]
    assert r["ID"].startswith("tile:xla:") and len(cfgs) >= 5 or r["ID"].startswith("layout:"), r["ID"]
overall, rnd = s["overall"]["score"], s["overall"]["random_baseline"]
assert overall > rnd, f"ensemble {overall} does not beat random {rnd}"
print(f"overall {overall:.4f} beats random {rnd:.4f}")
# Every scored oof and valid row has its top-1/5/10 slowdowns (>= 1, non-increasing in k:
# the best of more configs is never worse).
m = [r for r in csv.DictReader(open(f"{work}/run/metrics.csv")) if r["split"] in ("oof", "valid") and r["score"]]
assert m, "no scored rows"
for r in m:
    k = [float(r[f"slowdown_{k}"]) for k in (1, 5, 10)]
    assert 1 <= k[2] <= k[1] <= k[0], r
report = open(f"{work}/run/report.md").read()
assert "Top-1 / top-5 / top-10 slowdown" in report and "valid: random |" in report
print(f"{len(m)} scored rows with slowdowns; the report has its slowdown table")
PY

step "each fold logs its model: xla:random its own dropout, xla:default and nlp:random no attention"
model="model sage_shape_context (hidden 32, 2 layers"
for want in "layout:xla:random fold 0: $model, dropout 0.3, 4 attention heads)" \
            "layout:xla:default fold 1: $model, dropout 0.1, 0 attention heads)" \
            "layout:nlp:random fold 1: $model, dropout 0.1, 0 attention heads)" \
            "layout:nlp:default fold 0: $model, dropout 0.1, 4 attention heads)"; do
  grep -qF "$want" "$work/train.log" || { grep ": model " "$work/train.log"; echo "expected '$want'"; exit 1; }
done

step "old checkpoints are not overwritten silently"
set +e
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" > "$work/again.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q -- "--resume" "$work/again.log" || { tail "$work/again.log"; echo "expected refusal"; exit 1; }

step "predict-only reproduces the submission"
cp "$work/run/submission.csv" "$work/submission.first.csv"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --predict-only > "$work/pred.log" 2>&1 || { tail -30 "$work/pred.log"; exit 1; }
cmp "$work/run/submission.csv" "$work/submission.first.csv"

step "a killed run resumes to the same result"
set +e
TPUPERF_FAULT=train.epoch_done:2 mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh \
  --set output.dir="$work/run2" > "$work/kill.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || { echo "the fault did not stop the run"; exit 1; }
[ ! -f "$work/run2/submission.csv" ]
# What a kill inside write_file_atomic leaves: --resume removes it.
ckpt=$(find "$work/run2/checkpoints" -name '*.pt' | head -1)
touch "$work/run2/metrics.csv.tmp.99999" "$ckpt.tmp.99999"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --resume --set output.dir="$work/run2" > "$work/resume.log" 2>&1 \
  || { tail -30 "$work/resume.log"; exit 1; }
grep -q "resuming after epoch 2" "$work/resume.log"
[ -z "$(find "$work/run2" -name '*.tmp.99999')" ] || { echo "a killed run's temporary files were left"; exit 1; }
# Same losses and scores per (collection, fold, epoch, split); timing columns differ.
$PY - "$work/run/metrics.csv" "$work/run2/metrics.csv" <<'PY'
import csv, sys
def load(p):
    return {(r["collection"], r["fold"], r["epoch"], r["split"]): (r["loss"], r["score"]) for r in csv.DictReader(open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), (sorted(set(a) ^ set(b)))[:5]
diff = [k for k in a if a[k] != b[k]]
assert not diff, [(k, a[k], b[k]) for k in diff[:5]]
print(f"{len(a)} metric rows identical after resume")
PY
cmp "$work/run/submission.csv" "$work/run2/submission.csv"

step "--train-only trains and stops; --predict-only then writes the same submission"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --train-only --set output.dir="$work/run3" > "$work/to.log" 2>&1 \
  || { tail -30 "$work/to.log"; exit 1; }
[ -s "$work/run3/metrics.csv" ] && [ ! -e "$work/run3/submission.csv" ] || { ls "$work/run3"; echo "train-only wrote a submission or no metrics"; exit 1; }
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --predict-only --set output.dir="$work/run3" > "$work/to_pred.log" 2>&1 \
  || { tail -30 "$work/to_pred.log"; exit 1; }
cmp "$work/run/submission.csv" "$work/run3/submission.csv"

step "first_pick.json: auto's decision on the valid graphs; output.tile_first_pick=default puts config 0 first"
cp -r "$work/run" "$work/run_default"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --predict-only --set output.dir="$work/run_default" \
  --set output.tile_first_pick=default > "$work/default_pred.log" 2>&1 || { tail -30 "$work/default_pred.log"; exit 1; }
tile_test=$(find "$work/gen/npz/tile/xla/test" -name '*.npz' | sort | head -1)
"$BIN/tpuperf-rank" --run "$work/run_default" --csv "$tile_test" > "$work/rank_default.csv"
$PY - "$work" <<'PY'
import csv, json, re, sys
work = sys.argv[1]
auto = json.load(open(f"{work}/run/first_pick.json"))["tile:xla"]
assert auto["setting"] == "auto", auto
# The decision follows the evidence it records, which the log states.
assert auto["default_first"] == (auto["valid_top1_default"] < auto["valid_top1_model"]), auto
log = open(f"{work}/train.log").read()
m = re.search(r"tile:xla: top-1 slowdown \(the model's first pick\) valid ensemble (\S+),", log)
assert m and abs(float(m[1]) - auto["valid_top1_model"]) < 1e-3, (m and m[1], auto)
assert "tile:xla: first pick " in log and "First pick" in open(f"{work}/run/report.md").read()
def rows(path):
    return {r["ID"]: [int(c) for c in r["TopConfigs"].split(";")] for r in csv.DictReader(open(path))}
before, after = rows(f"{work}/run/submission.csv"), rows(f"{work}/run_default/submission.csv")
assert before.keys() == after.keys()
for i in before:
    if i.startswith("tile:"):
        # Config 0 first; the 5 are the same configs as with output.tile_keep_default alone.
        assert after[i][0] == 0 and sorted(after[i]) == sorted(before[i]) or auto["default_first"] and after[i] == before[i], (i, before[i], after[i])
    else:
        assert after[i] == before[i], i
forced = json.load(open(f"{work}/run_default/first_pick.json"))["tile:xla"]
assert forced["setting"] == "default" and forced["default_first"], forced
ranked = list(csv.DictReader(open(f"{work}/rank_default.csv")))
assert ranked and ranked[0]["TopConfigs"].split(";")[0] == "0", ranked
print(f"auto: {'config 0' if auto['default_first'] else 'the model'} first "
      f"(valid top-1 {auto['valid_top1_model']:.3f} model, {auto['valid_top1_default']:.3f} config 0); "
      f"default: config 0 first in {sum(i.startswith('tile:') for i in after)} tile rows and in tpuperf-rank")
PY

step "a run that trains drops the earlier run's first pick until it decides again"
cp -r "$work/run_default" "$work/run_retrain"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh --train-only --set output.dir="$work/run_retrain" \
  --set train.epochs=1 > "$work/retrain.log" 2>&1 || { tail -30 "$work/retrain.log"; exit 1; }
[ ! -e "$work/run_retrain/first_pick.json" ] || { echo "--fresh --train-only kept the old run's first_pick.json"; exit 1; }

step "--resume refuses other settings or other data"
expect_refusal() {  # LOG FRAGMENT ARGS...
  local log=$1 fragment=$2; shift 2
  set +e
  # One rank, nothing left to kill: without mpirun's 1 s kill grace (twice) on a non-zero exit.
  OMPI_MCA_odls_base_sigkill_timeout=0 \
    mpi 1 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --resume --set output.dir="$work/run2" "$@" > "$log" 2>&1
  local rc=$?
  set -e
  [ "$rc" -ne 0 ] && grep -q -- "$fragment" "$log" || { tail -20 "$log"; echo "expected a refusal naming '$fragment'"; exit 1; }
}
expect_refusal "$work/resume_lr.log" "train.lr (0.001 -> 0.002)" --set train.lr=0.002
# A run saved before a key existed: its config lacks the key, which did not shape it.
cp -r "$work/run2" "$work/run_old"
grep -v "max_config_passes_per_epoch" "$work/run2/train_config.yaml" > "$work/run_old/train_config.yaml"
expect_refusal "$work/resume_old.log" "train.max_config_passes_per_epoch (not in the saved config" \
  --set output.dir="$work/run_old"
# Averaged weights meeting a decay of 0 (checkpoints copied between runs) name the key that set it.
cp -r "$work/run2" "$work/run_ema0"
sed -i 's/^  layout:xla:random:$/&\n    train.ema_decay: 0/' "$work/run_ema0/train_config.yaml"
grep -A1 "^  layout:xla:random:" "$work/run_ema0/train_config.yaml" | grep -q "train.ema_decay: 0"
expect_refusal "$work/resume_ema0.log" \
  "key 'collections.layout:xla:random.train.ema_decay': checkpoint holds averaged weights but layout:xla:random's decay is 0" \
  --set output.dir="$work/run_ema0" --set collections.layout:xla:random.train.ema_decay=0
mpi 1 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set preprocess.seed=9 \
  --set data.processed_dir="$work/processed_seed9" > "$work/pre9.log" 2>&1 || { tail "$work/pre9.log"; exit 1; }
expect_refusal "$work/resume_data.log" "folds or feature transform of" --set data.processed_dir="$work/processed_seed9"
# Threads only change the speed: accepted (the run is complete, so nothing is retrained).
mpi 1 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --resume --set output.dir="$work/run2" \
  --set train.threads_per_rank=2 > "$work/resume_threads.log" 2>&1 || { tail -20 "$work/resume_threads.log"; exit 1; }
step "predict-only on new data: a tree with only test graphs (no train, so no transform of its own)"
"$BIN/tpuperf-synth" --out "$work/new" --scale tiny --seed 11 >/dev/null 2>&1
find "$work/new/npz" -path '*/train/*.npz' -delete
find "$work/new/npz" -path '*/valid/*.npz' -delete
set +e
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.raw_dir="$work/new/npz" \
  --set data.processed_dir="$work/new_processed" > "$work/new_pre.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 0 ] || { tail -20 "$work/new_pre.log"; echo "preprocessing test-only data failed ($rc)"; exit 1; }
grep -q "no valid train graph" "$work/new_pre.log"
# A rerun of that output has nothing to do (no transform to refit, no crash).
mpi 2 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set data.raw_dir="$work/new/npz" \
  --set data.processed_dir="$work/new_processed" > "$work/new_pre2.log" 2>&1 || { tail -20 "$work/new_pre2.log"; exit 1; }
grep -q "nothing to do" "$work/new_pre2.log"
cp "$work/run/first_pick.json" "$work/first_pick.before_new.json"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --predict-only --set data.processed_dir="$work/new_processed" \
  --set output.dir="$work/run" > "$work/new_pred.log" 2>&1 || { tail -30 "$work/new_pred.log"; exit 1; }
# No valid graphs to decide on: the run's first pick stays what its valid graphs said.
cmp "$work/run/first_pick.json" "$work/first_pick.before_new.json"
"$BIN/tpuperf-score" --submission "$work/run/submission.csv" --truth "$work/new" > "$work/new_score.txt" \
  || { cat "$work/new_score.txt"; exit 1; }
grep -q "^overall" "$work/new_score.txt"

step "model.tile.arch=late_join trains through the registry; model.fused=false gives the fused losses"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh --set output.dir="$work/late" \
  --set model.tile.arch=late_join > "$work/late.log" 2>&1 || { tail -30 "$work/late.log"; exit 1; }
"$BIN/tpuperf-score" --submission "$work/late/submission.csv" --truth "$work/gen" > "$work/late_score.txt" \
  || { cat "$work/late_score.txt"; exit 1; }
grep -q "^tile:xla" "$work/late_score.txt"
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh --train-only --set output.dir="$work/fused" \
  --set train.epochs=1 > "$work/fused.log" 2>&1 || { tail -30 "$work/fused.log"; exit 1; }
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh --train-only --set output.dir="$work/plain" \
  --set train.epochs=1 --set model.fused=false > "$work/plain.log" 2>&1 || { tail -30 "$work/plain.log"; exit 1; }
# One epoch from the same start: the paths differ only in float rounding.
$PY - "$work/fused/metrics.csv" "$work/plain/metrics.csv" <<'PY'
import csv, sys
def losses(p):
    return {(r["collection"], r["fold"]): float(r["loss"]) for r in csv.DictReader(open(p)) if r["split"] == "train"}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert a.keys() == b.keys() and a, (a, b)
for k in a:
    assert abs(a[k] - b[k]) <= 2e-3 * abs(a[k]), (k, a[k], b[k])
print(f"{len(a)} fold losses agree: " + ", ".join(f"{k[0]} {a[k]:.5f}/{b[k]:.5f}" for k in sorted(a)))
PY

step "a hung rank is named by its peer, which stops the job"
mpi 1 "$BIN/tpuperf-preprocess" --config "$work/cfg.yaml" --set preprocess.folds=1 \
  --set data.processed_dir="$work/processed_k1" --set data.collections=[tile:xla] > "$work/pre_k1.log" 2>&1 \
  || { tail "$work/pre_k1.log"; exit 1; }
# Two ranks train the one fold together; rank 1 stops for good before its third all-reduce.
set +e
timeout 300 mpirun --bind-to none -np 1 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh \
    --set data.processed_dir="$work/processed_k1" --set data.collections=[tile:xla] --set output.dir="$work/hung" \
    --set train.stall_timeout_s=3 \
  : -np 1 -x TPUPERF_FAULT=train.step:3:hang "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh \
    --set data.processed_dir="$work/processed_k1" --set data.collections=[tile:xla] --set output.dir="$work/hung" \
    --set train.stall_timeout_s=3 > "$work/hung.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { tail -20 "$work/hung.log"; echo "expected the job to stop on its own (rc $rc)"; exit 1; }
grep -q "stalled at the gradient all-reduce of step 3" "$work/hung.log" \
  && grep -q "group rank(s) 1 (world rank 1)" "$work/hung.log" || { tail -20 "$work/hung.log"; echo "no stall report naming rank 1"; exit 1; }
grep "stalled at" "$work/hung.log" | head -1

step "the step trace: every rank logs its phases per epoch at debug level"
# Slates of 2 configs pad nothing (every tiny tile graph has more), so the padding share must be 0.
mpi 2 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh --log-level debug \
    --set data.processed_dir="$work/processed_k1" --set data.collections=[tile:xla] --set output.dir="$work/trace" \
    --set train.epochs=2 --set train.tile_slate=2 > "$work/trace.log" 2>&1 || { tail -20 "$work/trace.log"; exit 1; }
$PY - "$work/trace.log" <<'PY'
import re, sys
lines = re.findall(r"\[rank (\d)\] tile:xla fold 0 epoch (\d)/2: per step: batch building (\S+) ms, forward\+backward "
                   r"(\S+) ms, all-reduce (\S+) ms, optimizer (\S+) ms; (\S+) batches, (\S+) node slots, (\S+)% of them padding",
                   open(sys.argv[1]).read())
assert sorted((r, e) for r, e, *_ in lines) == [("0", "1"), ("0", "2"), ("1", "1"), ("1", "2")], lines
for _, _, *values in lines:
    build, fb, ar, opt, batches, slots, padding = map(float, values)
    assert min(build, ar, opt) >= 0 and fb > 0 and batches >= 1 and slots > 0, values
    assert padding == 0, f"slates of 2 configs cannot pad here: {values}"
print(f"{len(lines)} trace lines, e.g. {lines[0]}")
PY

step "contradictory flags are refused"
set +e
mpi 1 "$BIN/tpuperf-train" --config "$work/cfg.yaml" --fresh --predict-only > "$work/flags.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "fresh" "$work/flags.log" || { cat "$work/flags.log"; exit 1; }
echo "PASS test_train"
