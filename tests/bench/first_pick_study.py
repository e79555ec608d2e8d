#!/usr/bin/env python3
"""The tile first-pick study of docs/experiments E47: per graph, a finished run's scores from
tpuperf-rank --json (the fold models alone on their held-out train graphs, the ensemble on
the valid and test graphs and, with --other, on every graph of another generated tree), and
the mean top-1 slowdown of 'config 0 first unless the model's best beats it by more than
tau' for a grid of tau (0: the model's pick; inf: config 0 always). Prints one table per run;
writes nothing but the per-graph scores to --save when given. Not a test; not part of ctest.

  first_pick_study.py --run RUN --raw TREE --manifest MANIFEST --rank BIN/tpuperf-rank \\
      [--other OTHER_TREE] [--save FILE.json]

TREE and OTHER_TREE are tpuperf-synth trees (DIR/npz/..., DIR/truth/... for the test runtimes)."""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile

import numpy as np

TAUS = [0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, np.inf]


def runtimes(path):
    d = np.load(path)
    return d["config_runtime"].astype(float) / d["config_runtime_normalizers"].astype(float)


def rank(rank_bin, run_dir, files):
    """Per input stem, tpuperf-rank's JSON result (order and score)."""
    out = {}
    for i in range(0, len(files), 200):
        p = subprocess.run([rank_bin, "--run", run_dir, "--json", "--collection", "tile:xla"] + files[i:i + 200],
                           capture_output=True, text=True)
        if p.returncode not in (0, 3):
            sys.exit(p.stderr)
        for r in json.loads(p.stdout)["results"]:
            out[os.path.basename(r["input"])[:-4]] = r
    return out


def record(result, y):
    s = np.full(len(y), np.nan)
    s[np.array(result["order"])] = np.array(result["score"])
    return {"score": s.tolist(), "y": y.tolist()}


def one_fold_run(run, fold, into):
    """A run directory holding fold `fold`'s checkpoint alone (as fold 0)."""
    os.makedirs(f"{into}/checkpoints/tile_xla")
    for name in os.listdir(run):
        if os.path.isfile(f"{run}/{name}") and name.endswith((".yaml", ".txt")):
            shutil.copy(f"{run}/{name}", into)
    os.symlink(os.path.abspath(f"{run}/checkpoints/tile_xla/fold{fold}"), f"{into}/checkpoints/tile_xla/fold0")


def collect(a):
    graphs = [g for g in json.load(open(a.manifest))["graphs"] if g["collection"] == "tile:xla"]
    folds = len([d for d in os.listdir(f"{a.run}/checkpoints/tile_xla") if d.startswith("fold")])
    data = {"oof": {}, "valid": {}, "test": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for f in range(folds):
            one = f"{tmp}/fold{f}"
            one_fold_run(a.run, f, one)
            held = [g["name"] for g in graphs if g["split"] == "train" and g["fold"] == f]
            for name, r in rank(a.rank, one, [f"{a.raw}/npz/tile/xla/train/{n}.npz" for n in held]).items():
                data["oof"][name] = record(r, runtimes(f"{a.raw}/npz/tile/xla/train/{name}.npz"))
    for split in ("valid", "test"):
        names = [g["name"] for g in graphs if g["split"] == split]
        truth = "truth" if split == "test" else "npz"
        for name, r in rank(a.rank, a.run, [f"{a.raw}/npz/tile/xla/{split}/{n}.npz" for n in names]).items():
            data[split][name] = record(r, runtimes(f"{a.raw}/{truth}/tile/xla/{split}/{name}.npz"))
    if a.other:
        data["other"] = {}
        for split in ("train", "valid", "test"):
            truth = "truth" if split == "test" else "npz"
            files = sorted(glob.glob(f"{a.other}/npz/tile/xla/{split}/*.npz"))
            for name, r in rank(a.rank, a.run, files).items():
                data["other"][f"{split}/{name}"] = record(r, runtimes(f"{a.other}/{truth}/tile/xla/{split}/{name}.npz"))
    return data


def top1(rec, tau):
    s, y = np.array(rec["score"]), np.array(rec["y"])
    ok = np.isfinite(s)
    best = int(np.nanargmin(s))
    pick = 0 if ok[0] and s[0] - s[best] <= tau else best
    return y[pick] / y[ok].min()


def mean_top1(recs, tau):
    return float(np.mean([top1(r, tau) for r in recs.values()]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True)
    ap.add_argument("--raw", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--rank", required=True)
    ap.add_argument("--other")
    ap.add_argument("--save")
    a = ap.parse_args()
    data = collect(a)
    if a.save:
        json.dump(data, open(a.save, "w"))
    print(f"{a.run}: " + ", ".join(f"{k} {len(v)} graphs" for k, v in data.items()))
    print("  tau    " + " ".join(f"{t:>6}" for t in TAUS))
    for split, recs in data.items():
        print(f"  {split:6} " + " ".join(f"{mean_top1(recs, t):6.3f}" for t in TAUS))
    valid_model, valid_default = mean_top1(data["valid"], 0), mean_top1(data["valid"], np.inf)
    choice = np.inf if valid_default < valid_model else 0
    print(f"  auto (valid: model {valid_model:.3f}, config 0 {valid_default:.3f}): "
          f"{'config 0' if choice else 'the model'} first; "
          + ", ".join(f"{s} {mean_top1(data[s], choice):.3f}" for s in data if s != "oof"))


if __name__ == "__main__":
    main()
