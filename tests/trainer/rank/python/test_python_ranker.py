"""tpuperf.Ranker (trainer/rank/python/) on the fixture's tiny run (tiny_run.sh):
- its order of every test file equals tpuperf-rank --csv's rows and the run's
  submission.csv (tile's 5 best, layout's whole permutation);
- a path, np.load's NpzFile, a dict, and arrays of other dtypes and layouts rank the same;
- bad inputs raise tpuperf.Error naming the file (or graph) and key: a missing file, a
  file of the other kind, a bad shape, a missing key, a value that does not fit, a bad
  run directory or collection;
- adaptation, blend and finetune: the same seed gives the same scores (one thread),
  finetune another seed others; adapted() on arrays equals adapted_file() on the same
  measurements and tpuperf-rank --adapt; an adapted ranker refuses another graph naming
  both;
- suggest: equal to tpuperf-rank --suggest --json (path and arrays, tile and layout, and
  adapted with the measured configs excluded); exclude= is never suggested; bad options
  are named;
- two Python threads sharing one Ranker get what one thread gets;
- cmake --install puts the package where Debian's python3 imports it from under the
  prefix (lib/python3.X/dist-packages), and the installed copy ranks the same.
Usage: test_python_ranker.py BIN_DIR SRC_DIR FIXTURE_DIR (PYTHONPATH: BUILD/python)
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

import tpuperf

BIN, SRC, FIXTURE = sys.argv[1:4]
RUN = os.path.join(FIXTURE, "run")
GEN = os.path.join(FIXTURE, "gen", "npz")
WORK = tempfile.mkdtemp(dir=FIXTURE, prefix="test_python_ranker.")  # under the build directory


def step(what):
    print("\n== " + what, flush=True)


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def raises(fn, *in_message):
    """The tpuperf.Error fn raises; its message holds every string of in_message."""
    try:
        fn()
    except tpuperf.Error as e:
        check(isinstance(e, ValueError), "tpuperf.Error is not a ValueError")
        for s in in_message:
            check(s in str(e), f"the error {str(e)!r} does not name {s!r}")
        return e
    sys.exit(f"FAIL: no tpuperf.Error (expected one naming {in_message})")


def collection_of(path):
    """tile:xla or layout:<source>:<search>, from the file's place in the release tree."""
    parts = os.path.relpath(path, GEN).split(os.sep)
    return ":".join(parts[:-2])


def tpuperf_rank(*args):
    out = subprocess.run([os.path.join(BIN, "tpuperf-rank"), "--run", RUN, *args], capture_output=True, text=True)
    check(out.returncode == 0, f"tpuperf-rank {' '.join(args)}: exit {out.returncode}: {out.stderr[-2000:]}")
    return out.stdout


tests = sorted(glob.glob(os.path.join(GEN, "**", "test", "*.npz"), recursive=True))
check(len(tests) >= 10, f"the fixture has {len(tests)} test files")
rankers = {c: tpuperf.Ranker(RUN, c) for c in tpuperf.trained_collections(RUN)}
check(sorted(rankers) == sorted({collection_of(t) for t in tests}), f"trained collections {sorted(rankers)}")

step("the order of every test file equals tpuperf-rank --csv and submission.csv")
ranked = {}
for t in tests:
    c = collection_of(t)
    r = rankers[c].rank(t)
    check(sorted(r["order"]) == list(range(len(r["score"]))), f"{t}: the order is not a permutation")
    check(r["collection"] == c and r["folds"] == 2, f"{t}: {r['collection']}, {r['folds']} folds")
    ranked[c + ":" + os.path.splitext(os.path.basename(t))[0]] = r["order"][:5] if c.startswith("tile") else r["order"]
csv = os.path.join(WORK, "rank.csv")
with open(csv, "w") as f:
    f.write(tpuperf_rank("--csv", *tests))
for name, rows in (("tpuperf-rank --csv", tpuperf.read_submission(csv)),
                   ("submission.csv", tpuperf.read_submission(os.path.join(RUN, "submission.csv")))):
    check(sorted(rows) == sorted(ranked), f"{name} has other IDs than the module's rankings")
    for i, order in ranked.items():
        check(np.array_equal(rows[i], order), f"{i}: the module's order {order[:8]} is not {name}'s {rows[i][:8]}")
print(f"{len(tests)} test files of {len(rankers)} collections: the module's orders equal tpuperf-rank's and the submission's")

step("a path, an NpzFile, a dict and converted arrays rank the same")
tile = next(t for t in tests if collection_of(t) == "tile:xla")
layout = next(t for t in tests if collection_of(t) == "layout:nlp:random")
for path in (tile, layout):
    ranker = rankers[collection_of(path)]
    want = ranker.rank(path)
    npz = np.load(path)
    d = dict(npz)
    # Other dtypes and a Fortran-order array: converted (a copy), then the same values.
    other = {k: np.asfortranarray(v) if v.ndim == 2 else v for k, v in d.items()}
    other["node_feat"] = d["node_feat"].astype(np.float64)
    other["edge_index"] = d["edge_index"].astype(np.int32)
    other["node_opcode"] = d["node_opcode"].astype(np.int64)
    for what, arrays in (("NpzFile", npz), ("dict", d), ("converted", other)):
        got = ranker.rank(arrays)
        check(np.array_equal(got["order"], want["order"]) and np.array_equal(got["score"], want["score"]),
              f"{path}: {what} ranks otherwise than the path")
    check(ranker.rank(npz)["name"] == want["name"], "an NpzFile's graph is not named after its file")
    check(ranker.rank(d, name="mine")["name"] == "mine", "name= does not name the graph")
    # Candidates apart from the graph: the first 3 configs only.
    keys = ("config_feat",) if "config_feat" in d else ("node_config_ids", "node_config_feat")
    part = {k: d[k][:3] if k != "node_config_ids" else d[k] for k in keys}
    check(len(ranker.rank(d, part)["order"]) == 3, "candidates= are not what is ranked")
print("tile and layout: the same order and scores from every form")

step("bad inputs raise tpuperf.Error naming the file and the key")
t_ranker, l_ranker = rankers["tile:xla"], rankers["layout:nlp:random"]
d = dict(np.load(tile))
missing = os.path.join(WORK, "missing.npz")
e = raises(lambda: t_ranker.rank(missing), missing)
check(e.file == missing, f"the missing file's error has file {e.file!r}")
raises(lambda: t_ranker.rank(layout), layout, "config_feat")                  # a layout file, tile ranker
raises(lambda: l_ranker.rank(np.load(tile)), tile, "node_config_ids")         # a tile NpzFile, layout ranker
e = raises(lambda: t_ranker.rank({k: v for k, v in d.items() if k != "edge_index"}, name="g"), "g:", "edge_index",
           "is missing")
check(e.key == "edge_index" and e.file == "g", f"file {e.file!r}, key {e.key!r}")
raises(lambda: t_ranker.rank(dict(d, config_feat=d["config_feat"][:, :20]), name="g"), "g:", "config_feat",
       "(n, 24)")
raises(lambda: t_ranker.rank(dict(d, node_feat=d["node_feat"].ravel()), name="g"), "node_feat", "(n, 140)")
raises(lambda: t_ranker.rank(dict(d, node_opcode=d["node_opcode"] + 200.0), name="g"), "node_opcode", "does not fit")
raises(lambda: t_ranker.rank(dict(d, node_opcode=np.full(len(d["node_opcode"]), 121)), name="g"),
       "g:", "node_opcode", "outside 0..120")                                 # the C++ side's check, named
raises(lambda: t_ranker.rank(dict(d, config_feat=d["config_feat"].astype(str)), name="g"), "config_feat", "not numbers")
raises(lambda: tpuperf.Ranker(WORK, "tile:xla"), WORK)
raises(lambda: tpuperf.Ranker(RUN, "tile:nope"), "tile:nope")
print("every bad input raised tpuperf.Error naming file and key")

step("adaptation: deterministic for a seed, the same from arrays, a file and tpuperf-rank --adapt")
g = dict(np.load(tile))
truth = np.load(tile.replace(os.sep + "npz" + os.sep, os.sep + "truth" + os.sep))
runtime = truth["config_runtime"].copy()
unmeasured = np.arange(3, len(runtime), 8)  # every 8th not measured: enough left to blend
measured = np.setdiff1d(np.arange(len(runtime)), unmeasured)
distinct = len(np.unique(g["config_feat"][measured], axis=0))
check(distinct >= tpuperf._core.blend_min_measured, f"{distinct} distinct measured configs: too few to blend")
y = runtime[measured] / truth["config_runtime_normalizers"][measured]
runtime[unmeasured] = 0
measured_npz = os.path.join(WORK, "measured.npz")
np.savez(measured_npz, **dict(g, config_runtime=runtime))
score = lambda r: r.rank(g)["score"]
check(t_ranker.adaptation is None, "the trained ranker reports an adaptation")
for method, options, cli_options in (("finetune", {"steps": 20}, ["--adapt-method", "finetune", "--adapt-steps", "20"]),
                                     ("blend", {}, [])):
    adapt = lambda seed: t_ranker.adapted(g, {"config_feat": g["config_feat"][measured]}, y, method=method, seed=seed,
                                          **options)
    a, again = adapt(5), adapt(5)
    check(np.array_equal(score(a), score(again)), f"{method}: the same seed adapted to other scores")
    info = a.adaptation
    check(info["method"] == method and info["measured_configs"] == len(measured) and info["seed"] == 5,
          f"{method}: adaptation {info}")
    if method == "finetune":
        check(info["steps"] == 20 and info["loss"], f"finetune: adaptation {info}")
        check(not np.array_equal(score(a), score(adapt(6))), "finetune: another seed adapted to the same scores")
        check(not np.array_equal(score(a), score(t_ranker)), "finetune: adapting changed no score")
    else:
        check(info["cv_folds"] > 0 and info["blend"] and info["weight_run"] + info["weight_fit"] > 0,
              f"blend: adaptation {info}")
    from_file = t_ranker.adapted_file(measured_npz, method=method, seed=5, **options)
    # The same order; the blend's scores to the last bits only (its ridge's sums over the
    # measured configs' rows come out 1e-15 apart when those rows lie elsewhere in memory).
    check(np.array_equal(from_file.rank(g)["order"], a.rank(g)["order"]), f"{method}: adapted_file orders otherwise")
    check(np.allclose(score(from_file), score(a), rtol=0, atol=0 if method == "finetune" else 1e-12),
          f"{method}: adapted_file scores otherwise than adapted")
    check(from_file.adaptation["graph"] == measured_npz, f"{method}: adapted_file's adaptation does not name the file")
    cli = json.loads(tpuperf_rank("--adapt", measured_npz, *cli_options, "--seed", "5", "--json", tile))
    check(cli["results"][0]["order"] == from_file.rank(tile)["order"].tolist(),
          f"{method}: tpuperf-rank --adapt ranks otherwise")
    print(f"{method}: same seed same scores; arrays = file = tpuperf-rank --adapt; {info['seconds']:.3f} s")
other_tile = next(t for t in tests if collection_of(t) == "tile:xla" and t != tile)
raises(lambda: a.rank(other_tile), other_tile, "is not the graph this ranker was adapted to")
raises(lambda: t_ranker.adapted(g, {"config_feat": g["config_feat"][:2]}, [1.0]), "runtimes")
raises(lambda: t_ranker.adapted_file(tile), tile, "config_runtime")
raises(lambda: t_ranker.adapted_file(measured_npz, method="ridge"), "method", "blend or finetune")
print("another graph, too few runtimes, a file without runtimes, an unknown method: refused")

step("suggest: what tpuperf-rank --suggest prints, measured configs excluded")
for path in (tile, layout):
    ranker = rankers[collection_of(path)]
    mine = ranker.suggest(path, count=4, exploration=0.5, diversity=2.0)
    cli = json.loads(tpuperf_rank("--suggest", "4", "--exploration", "0.5", "--diversity", "2", "--json", path))
    theirs = cli["results"][0]
    check(mine["configs"].tolist() == theirs["suggest"] and np.allclose(mine["score"], theirs["score"])
          and np.allclose(mine["uncertainty"], theirs["uncertainty"]), f"{path}: {mine} / {theirs}")
    check(mine["candidates"] == theirs["configs"] and mine["collection"] == collection_of(path), f"{path}: {mine}")
    from_arrays = ranker.suggest(np.load(path), count=4, exploration=0.5, diversity=2.0)
    check(np.array_equal(from_arrays["configs"], mine["configs"]), f"{path}: arrays suggest otherwise than the path")
    skip = mine["configs"][:2]
    rest = ranker.suggest(np.load(path), count=4, exclude=skip)["configs"]
    check(not set(skip.tolist()) & set(rest.tolist()), f"{path}: excluded {skip} suggested again: {rest}")
adapted = t_ranker.adapted_file(measured_npz, seed=5)
mine = adapted.suggest(g, count=4, exclude=measured, name="x")
cli = json.loads(tpuperf_rank("--adapt", measured_npz, "--seed", "5", "--suggest", "4", "--json", tile))["results"][0]
check(mine["configs"].tolist() == cli["suggest"], f"adapted: {mine['configs']} / tpuperf-rank's {cli['suggest']}")
check(not set(mine["configs"].tolist()) & set(measured.tolist()), "a measured config was suggested")
raises(lambda: t_ranker.suggest(tile, count=0), "count", "at least 1")
raises(lambda: t_ranker.suggest(g, exclude=[10**6], name="g"), "g:", "exclude")
print("tile and layout: equal to tpuperf-rank --suggest; adapted with measured configs excluded; bad options named")

step("two Python threads sharing a ranker take turns and get one thread's results")
want = {t: rankers[collection_of(t)].rank(t)["score"] for t in tests}
got = {}


def rank_all(part):
    for t in part:
        got[t] = rankers[collection_of(t)].rank(t)["score"]


threads = [threading.Thread(target=rank_all, args=(tests[i::2],)) for i in range(2)]
for th in threads:
    th.start()
for th in threads:
    th.join()
check(all(np.array_equal(got[t], want[t]) for t in tests), "threads ranked otherwise")
print("2 threads: the same scores as one")

step("cmake --install: the installed package imports and ranks the same")
prefix = os.path.join(WORK, "prefix")
out = subprocess.run(["cmake", "--install", os.path.dirname(os.path.abspath(BIN)), "--prefix", prefix],
                     capture_output=True, text=True)
check(out.returncode == 0, "cmake --install: " + out.stderr[-2000:])
site = os.path.join(prefix, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "dist-packages")
probe = ("import sys, tpuperf; r = tpuperf.Ranker(sys.argv[1], 'tile:xla'); "
         "print(tpuperf.__file__); print(r.rank(sys.argv[2])['order'].tolist())")
out = subprocess.run([sys.executable, "-c", probe, RUN, tile], capture_output=True, text=True, cwd=WORK,
                     env=dict(os.environ, PYTHONPATH=site))
check(out.returncode == 0, "the installed package: " + out.stderr[-2000:])
where, order = out.stdout.splitlines()[:2]
check(where.startswith(site), f"imported {where}, not the installed copy under {site}")
check(order == str(t_ranker.rank(tile)["order"].tolist()), "the installed package ranks otherwise")
print("installed in", os.path.relpath(site, prefix), "and ranks the same")
shutil.rmtree(WORK)
print("PASS")
