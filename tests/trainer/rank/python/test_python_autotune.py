"""trainer/rank/examples/autotune.py end to end on the fixture's tiny run (tiny_run.sh),
a tile and a layout test graph with the generator's true runtimes:
- it writes the picture (PNG and SVG) and the curves;
- it measured budget distinct configs (with a budget of every config: one of each set of
  identical configs, which suggest does not pick twice), the first round what the run's
  ranker suggests;
- every curve is the running minimum of the true runtimes of its configs, the
  as-trained curve that of tpuperf.Ranker's order;
- a runtimes file of another graph is refused.
Usage: test_python_autotune.py BIN_DIR SRC_DIR FIXTURE_DIR (PYTHONPATH: BUILD/python)
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import tpuperf

BIN, SRC, FIXTURE = sys.argv[1:4]
RUN = os.path.join(FIXTURE, "run")
EXAMPLE = os.path.join(SRC, "trainer", "rank", "examples", "autotune.py")
WORK = tempfile.mkdtemp(dir=FIXTURE, prefix="test_python_autotune.")  # under the build directory


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def autotune(graph, collection, plot, budget, batch, runtimes=None, method="blend"):
    out = os.path.join(WORK, os.path.basename(plot) + ".json")
    cmd = [sys.executable, EXAMPLE, "--run", RUN, "--collection", collection, "--graph", graph,
           "--runtimes", runtimes or truth_of(graph), "--budget", str(budget), "--batch", str(batch),
           "--method", method, "--plot", plot, "--json", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, (json.load(open(out)) if r.returncode == 0 else None)


def truth_of(graph):
    return graph.replace(os.sep + "npz" + os.sep, os.sep + "truth" + os.sep)


def runtimes_of(graph):
    t = np.load(truth_of(graph))
    y = t["config_runtime"].astype(float)
    return y / t["config_runtime_normalizers"] if "config_runtime_normalizers" in t else y


for collection, pattern in (("tile:xla", "tile/xla"), ("layout:xla:random", "layout/xla/random")):
    graph = sorted(glob.glob(os.path.join(FIXTURE, "gen", "npz", pattern, "test", "*.npz")))[0]
    y = runtimes_of(graph)
    ranker = tpuperf.Ranker(RUN, collection)
    order, first = ranker.rank(graph)["order"], ranker.suggest(graph, count=3)["configs"]
    for budget, plot, method in ((8, "curve.png", "finetune"), (len(y), "all.svg", "blend")):
        plot = os.path.join(WORK, collection.replace(":", "_") + "_" + plot)
        r, doc = autotune(graph, collection, plot, budget, 3, method=method)
        check(r.returncode == 0, f"{graph}: exit {r.returncode}: {r.stderr[-2000:]}")
        head = open(plot, "rb").read(2000)
        check(head.startswith(b"\x89PNG") if plot.endswith(".png") else b"<svg" in head, f"{plot} is not the picture")
        measured = doc["measured"]
        rows = np.load(graph)["config_feat" if collection.startswith("tile") else "node_config_feat"]
        rows = rows.reshape(len(rows), -1)
        distinct = len(np.unique(rows, axis=0))
        check(len(measured) == min(budget, distinct) == len(set(measured)), f"{graph}: measured {measured}")
        check(len(np.unique(rows[measured], axis=0)) == len(measured), f"{graph}: a config measured twice (a copy)")
        check(measured[:3] == first.tolist(), f"{graph}: the first round is not what the run suggests")
        curves = doc["best_so_far"]
        adapted, trained, _ = curves.values()
        check(np.allclose(adapted, np.minimum.accumulate(y[measured])), f"{graph}: the adapted curve")
        n = len(measured)
        check(np.allclose(trained, np.minimum.accumulate(y[order[:n]])), f"{graph}: the as-trained curve")
        for label, best in curves.items():
            check(len(best) == n and all(a >= b for a, b in zip(best, best[1:])), f"{label}: {best}")
        print(f"{collection} {os.path.basename(graph)}: {n} of {len(y)} configs measured ({method}), "
              f"best found {adapted[-1] / y.min():.4f} x the best ({os.path.basename(plot)})")

other = sorted(glob.glob(os.path.join(FIXTURE, "gen", "truth", "tile", "xla", "test", "*.npz")))
tile = sorted(glob.glob(os.path.join(FIXTURE, "gen", "npz", "tile", "xla", "test", "*.npz")))
mismatch = next(o for o in other if len(runtimes_of(tile[0])) != len(np.load(o)["config_runtime"]))
r, _ = autotune(tile[0], "tile:xla", os.path.join(WORK, "x.png"), 4, 2, runtimes=mismatch)
check(r.returncode != 0 and "not one per config" in r.stderr, f"another graph's runtimes: exit {r.returncode}")
shutil.rmtree(WORK)
print("PASS")
