#!/usr/bin/env python3
"""What scoring every k-th epoch would have kept (issue #46: evaluation at the release's scale).

tpuperf-train keeps, per fold, the scored epoch with the highest out-of-fold score (the first
of equal ones; trainer/train/fold_training.cpp), and scores after every `train.eval_every`-th
epoch and the last. Training does not depend on evaluation (each epoch's draws are seeded by
(seed, fold, epoch, rank); scoring runs without gradients or random draws), so one run
scored after every epoch tells what any cadence k would have kept: the best of epochs
k, 2k, ..., and the last. This reads such a run's metrics.csv and prints, per collection and
k, the epochs scored, the cv (mean over folds of the kept epoch's out-of-fold score), its
difference from k = 1, and the kept epochs' mean valid score (the valid split is not used to
choose, so it is the unbiased one of the two: a max over fewer epochs is less optimistic).

usage: eval_cadence.py METRICS_CSV [--cadences 1,2,3,5,10] [--json OUT]
       eval_cadence.py --self-test
"""
import argparse
import csv
import io
import json
import math
import sys
from collections import defaultdict


def read_scores(f):
    """{(collection, fold): {epoch: {"oof": score, "valid": score}}} from a metrics.csv."""
    runs = defaultdict(lambda: defaultdict(dict))
    for r in csv.DictReader(f):
        if r["split"] in ("oof", "valid") and r["score"] not in ("", "nan"):
            runs[(r["collection"], int(r["fold"]))][int(r["epoch"])][r["split"]] = float(r["score"])
    return runs


def kept_epoch(epochs, k, last):
    """The epoch a run scored every k-th epoch (and the last) keeps: the first best oof."""
    best, best_score = None, -math.inf
    for e in sorted(epochs):
        if (e % k == 0 or e == last) and "oof" in epochs[e] and epochs[e]["oof"] > best_score:
            best, best_score = e, epochs[e]["oof"]
    return best


def cadence_table(runs, cadences):
    """Per collection: epochs trained, and per k: scored epochs, cv, valid (means over folds)."""
    out = {}
    for coll in sorted({c for c, _ in runs}):
        folds = [runs[(c, f)] for c, f in sorted(runs) if c == coll]
        last = min(max(e) for e in folds)
        rows = []
        for k in cadences:
            kept = [(f, kept_epoch(f, k, last)) for f in folds]
            cv = sum(f[e]["oof"] for f, e in kept) / len(kept)
            valids = [f[e]["valid"] for f, e in kept if "valid" in f[e]]
            rows.append(dict(k=k, scored=sum(1 for e in range(1, last + 1) if e % k == 0 or e == last),
                             cv=cv, valid=sum(valids) / len(valids) if valids else None,
                             kept=[e for _, e in kept]))
        for r in rows:
            r["cv_drop"] = rows[0]["cv"] - r["cv"]
        out[coll] = dict(epochs=last, folds=len(folds), rows=rows)
    return out


def print_table(table):
    for coll, t in table.items():
        print(f"{coll}: {t['folds']} folds, {t['epochs']} epochs")
        print("  k  scored  cv       cv(1)-cv(k)  valid    kept epochs")
        for r in t["rows"]:
            valid = "n/a" if r["valid"] is None else f"{r['valid']:.4f}"
            print(f"  {r['k']:<2} {r['scored']:<7} {r['cv']:.4f}   {r['cv_drop']:+.4f}      {valid:<8} "
                  f"{' '.join(map(str, r['kept']))}")


def self_test():
    # Fold 0: oof peaks at epoch 3, fold 1 at epoch 4; epochs 1-4, k = 2 scores 2 and 4.
    text = "collection,fold,epoch,step,split,loss,score\n" + "".join(
        f"c,{f},{e},0,{s},,{v}\n" for f, e, s, v in [
            (0, 1, "oof", 0.1), (0, 2, "oof", 0.2), (0, 3, "oof", 0.5), (0, 4, "oof", 0.3),
            (1, 1, "oof", 0.4), (1, 2, "oof", 0.4), (1, 3, "oof", 0.2), (1, 4, "oof", 0.6),
            (0, 1, "valid", 1.0), (0, 2, "valid", 2.0), (0, 3, "valid", 3.0), (0, 4, "valid", 4.0),
            (1, 1, "valid", 1.0), (1, 2, "valid", 2.0), (1, 3, "valid", 3.0), (1, 4, "valid", 4.0),
            (0, 1, "train", math.nan)])
    t = cadence_table(read_scores(io.StringIO(text)), [1, 2, 4])["c"]
    r1, r2, r4 = t["rows"]
    assert t["epochs"] == 4 and r1["scored"] == 4 and r2["scored"] == 2 and r4["scored"] == 1
    assert r1["kept"] == [3, 4] and abs(r1["cv"] - 0.55) < 1e-12 and abs(r1["valid"] - 3.5) < 1e-12
    assert r2["kept"] == [4, 4] and abs(r2["cv"] - 0.45) < 1e-12 and abs(r2["cv_drop"] - 0.10) < 1e-12
    assert r4["kept"] == [4, 4] and r4["valid"] == 4.0
    # Ties keep the first: fold 1's epochs 1 and 2 both score 0.4 at k = 1 before epoch 4.
    assert kept_epoch({1: {"oof": 0.4}, 2: {"oof": 0.4}}, 1, 2) == 1
    print("ok eval_cadence self-test")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("metrics", nargs="?")
    ap.add_argument("--cadences", default="1,2,3,5,10")
    ap.add_argument("--json", default="")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.metrics:
        ap.error("METRICS_CSV is required")
    try:
        cadences = [int(k) for k in a.cadences.split(",")]
        if not cadences or min(cadences) < 1:
            raise ValueError(f"--cadences {a.cadences}: each k must be an integer >= 1")
        with open(a.metrics) as f:
            table = cadence_table(read_scores(f), cadences)
    except KeyError as e:
        sys.exit(f"eval_cadence.py: {a.metrics}: no column {e} (not a tpuperf-train metrics.csv)")
    except (OSError, ValueError) as e:
        sys.exit(f"eval_cadence.py: {a.metrics}: {e}")
    if not table:
        sys.exit(f"eval_cadence.py: {a.metrics}: no out-of-fold scores (was the run scored after its epochs?)")
    print_table(table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
