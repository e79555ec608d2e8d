"""tpuperf's readers (trainer/rank/python/tpuperf/readers.py) on the fixture's tiny run
(tiny_run.sh) return what the files hold:
- read_metrics: every row and column of metrics.csv, read here with the csv module;
- cv_summary: report.md's CV column and CV slowdowns, per collection;
- read_submission: submission.csv's rows, read here with the csv module;
- read_shard: every shard's graphs, names, folds and counts as tpuperf-inspect --json (the
  C++ ShardReader) reports them; test graphs' opcodes, edges and configs (layout: the
  unpacked node_config_feat) equal their source files'; a non-shard raises tpuperf.Error.
Usage: test_python_readers.py BIN_DIR SRC_DIR FIXTURE_DIR (PYTHONPATH: BUILD/python)
"""

import csv
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import h5py
import numpy as np

import tpuperf

BIN, SRC, FIXTURE = sys.argv[1:4]
RUN = os.path.join(FIXTURE, "run")


def step(what):
    print("\n== " + what, flush=True)


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


step("read_metrics: every row and column of metrics.csv")
m = tpuperf.read_metrics(os.path.join(RUN, "metrics.csv"))
with open(os.path.join(RUN, "metrics.csv")) as f:
    rows = list(csv.DictReader(f))
check(list(m) == list(tpuperf.METRICS_COLUMNS) == list(rows[0]), f"columns {list(m)} / file {list(rows[0])}")
for col in m:
    check(len(m[col]) == len(rows), f"{col}: {len(m[col])} values for {len(rows)} rows")
    for i, r in enumerate(rows):
        got, want = m[col][i], r[col]
        if col in ("collection", "split"):
            ok = got == want
        elif col in ("fold", "epoch", "step"):
            ok = got == int(want) and m[col].dtype == np.int64
        else:
            ok = math.isnan(got) if want == "" else got == float(want)
        check(ok, f"row {i} {col}: {got!r}, the file holds {want!r}")
check({"train", "oof", "valid"} <= set(m["split"]), f"splits {set(m['split'])}")
print(f"{len(rows)} rows x {len(m)} columns equal the file's")

step("cv_summary: report.md's CV figures")
report = open(os.path.join(RUN, "report.md")).read()
for c in tpuperf.trained_collections(RUN):
    s = tpuperf.cv_summary(os.path.join(RUN, "metrics.csv"), c)
    cv = re.search(rf"^\| {re.escape(c)} \| ([0-9.]+) \|", report, re.M).group(1)
    slow = re.search(rf"^\| {re.escape(c)} \| ([0-9.]+) / ([0-9.]+) / ([0-9.]+) \|", report, re.M).groups()
    check(f"{s['cv_score']:.4f}" == cv, f"{c}: cv_score {s['cv_score']}, report.md {cv}")
    check(tuple(f"{v:.3f}" for v in s["kept_oof_slowdown"]) == slow, f"{c}: {s['kept_oof_slowdown']}, report {slow}")
    check(sorted(s["kept_epoch"]) == [0, 1], f"{c}: kept epochs {s['kept_epoch']}")
    oof = (m["collection"] == c) & (m["split"] == "oof")
    for fold, epoch in s["kept_epoch"].items():
        best = np.nanmax(m["score"][oof & (m["fold"] == fold)])
        row = oof & (m["fold"] == fold) & (m["epoch"] == epoch)
        check(m["score"][row][0] == best, f"{c} fold {fold}: epoch {epoch} is not its best oof epoch")
print("every collection's CV score and slowdowns equal report.md's")

step("read_submission: submission.csv's rows")
sub = tpuperf.read_submission(os.path.join(RUN, "submission.csv"))
with open(os.path.join(RUN, "submission.csv")) as f:
    rows = list(csv.DictReader(f))
check(list(sub) == [r["ID"] for r in rows], "the IDs or their order differ")
for r in rows:
    want = [int(c) for c in r["TopConfigs"].split(";")]
    check(sub[r["ID"]].dtype == np.int64 and sub[r["ID"]].tolist() == want, f"{r['ID']}: {sub[r['ID']]} / {want}")
print(f"{len(sub)} rows equal the file's")

step("read_shard: what tpuperf-inspect reads, and the test graphs' source files")
shards = sorted(glob.glob(os.path.join(FIXTURE, "processed", "*", "*", "*.h5")))
check(len(shards) >= 15, f"{len(shards)} shards")
inspected = subprocess.run([os.path.join(BIN, "tpuperf-inspect"), "--json", *shards], capture_output=True, text=True)
check(inspected.returncode == 0, "tpuperf-inspect: " + inspected.stderr[-1000:])
compared = 0
for shard, info in zip(shards, json.loads(inspected.stdout)["files"]):
    graphs = tpuperf.read_shard(shard)
    check(list(graphs) == [g["name"] for g in info["graphs"]], f"{shard}: names {list(graphs)}")
    for g, i in zip(graphs.values(), info["graphs"]):
        check(g["collection"] == info["collection"] and g["split"] == info["split"], f"{shard}: collection, split")
        for mine, theirs in (("fold", "fold"), ("num_nodes", "nodes"), ("num_edges", "edges"),
                             ("num_configs", "configs"), ("configs_before", "configs_before"),
                             ("nodes_before", "nodes_before"), ("edges_before", "edges_before")):
            check(g[mine] == i[theirs], f"{shard} {g['name']}: {mine} {g[mine]}, tpuperf-inspect {i[theirs]}")
        n, e, c = g["num_nodes"], g["num_edges"], g["num_configs"]
        check(g["node_feat"].shape == (n, 140) and g["node_opcode"].shape == (n,) and g["edge_index"].shape == (e, 2)
              and g["config_runtime"].shape == (c,), f"{shard} {g['name']}: shapes")
        if g["split"] != "test":
            continue
        # A test graph keeps every config in source order; tile graphs are not pruned.
        src = np.load(os.path.join(FIXTURE, "gen", "npz", *g["collection"].split(":"), "test", g["name"] + ".npz"))
        if g["collection"] == "tile:xla":
            for key in ("node_opcode", "edge_index", "config_feat", "config_runtime_normalizers"):
                check(np.array_equal(g[key], src[key]), f"{shard} {g['name']}: {key} differs from the source file's")
        else:
            check(np.array_equal(g["node_config_feat"], src["node_config_feat"]), f"{g['name']}: node_config_feat")
            # Pruning renumbers the nodes, not what the configurable ones are.
            check(np.array_equal(g["node_opcode"][g["node_config_ids"]], src["node_opcode"][src["node_config_ids"]]),
                  f"{g['name']}: the configurable nodes' opcodes differ")
        compared += 1
some = tpuperf.read_shard(shards[0], names=list(tpuperf.read_shard(shards[0]))[-1:])
check(len(some) == 1, "names= did not select one graph")
print(f"{len(shards)} shards as tpuperf-inspect reads them; {compared} test graphs equal their source files")

work = tempfile.mkdtemp(dir=FIXTURE, prefix="test_python_readers.")
not_hdf5 = os.path.join(work, "not.h5")
open(not_hdf5, "w").write("not HDF5")
other = os.path.join(work, "other.h5")
with h5py.File(other, "w") as f:
    f["x"] = [1]
for path, why in ((not_hdf5, "cannot be opened as HDF5"), (other, "is not a tpuperf shard")):
    try:
        tpuperf.read_shard(path)
        sys.exit(f"FAIL: {path} read as a shard")
    except tpuperf.Error as e:
        check(str(e).startswith(path + ": ") and why in str(e), f"the error {e} does not name {path} and why")
try:
    tpuperf.read_shard(shards[0], names=["nope"])
    sys.exit("FAIL: a graph the shard does not hold was read")
except tpuperf.Error as e:
    check("nope" in str(e) and shards[0] in str(e), str(e))
for reader in (tpuperf.read_metrics, tpuperf.read_submission):
    try:
        reader(not_hdf5)
        sys.exit(f"FAIL: {reader.__name__} read a file that is not one")
    except tpuperf.Error as e:
        check(not_hdf5 in str(e), f"{reader.__name__}: {e}")
print("PASS")
