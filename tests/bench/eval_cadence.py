#!/usr/bin/env python3
"""What scoring every k-th epoch, or fewer configs a graph, would have kept (issue #46).

tpuperf-train keeps, per fold, the scored epoch with the highest out-of-fold score (the first
of equal ones; trainer/train/fold_training.cpp), and scores after every `train.eval_every`-th
epoch and the last. Training does not depend on evaluation (each epoch's draws are seeded by
(seed, fold, epoch, rank); scoring runs without gradients or random draws), so one run
scored after every epoch tells what any cadence k would have kept: the best of epochs
k, 2k, ..., and the last. This reads such runs' metrics.csv (several runs, e.g. seeds, are
averaged) and prints, per collection and k, the epochs scored, the cv (mean over runs and
folds of the kept epoch's out-of-fold score), its difference from k = 1, and the kept
epochs' mean valid score (the valid split is not used to choose, so it is the unbiased one
of the two: a maximum over fewer epochs is less optimistic).

--select-by takes as many other runs, trained the same way but scored differently (e.g.
train.eval_max_configs = 250): epochs are kept by their out-of-fold scores, and the valid
and out-of-fold scores of the kept epochs are read from the main runs. Their training must
be the same (every epoch's train loss equal), which is checked.

usage: eval_cadence.py METRICS_CSV... [--select-by METRICS_CSV...] [--cadences 1,2,3,5,10]
                       [--json OUT]
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
    """{(collection, fold): {epoch: {"oof": score, "valid": score, "train": loss}}}."""
    runs = defaultdict(lambda: defaultdict(dict))
    for r in csv.DictReader(f):
        if r["split"] in ("oof", "valid") and r["score"] not in ("", "nan"):
            runs[(r["collection"], int(r["fold"]))][int(r["epoch"])][r["split"]] = float(r["score"])
        elif r["split"] == "train" and r["loss"] not in ("", "nan"):
            runs[(r["collection"], int(r["fold"]))][int(r["epoch"])]["train"] = float(r["loss"])
    return runs


def kept_epoch(epochs, k, last):
    """The epoch a run scored every k-th epoch (and the last) keeps: the first best oof."""
    best, best_score = None, -math.inf
    for e in sorted(epochs):
        if (e % k == 0 or e == last) and "oof" in epochs[e] and epochs[e]["oof"] > best_score:
            best, best_score = e, epochs[e]["oof"]
    return best


def check_same_training(main, select):
    """Raise unless every (collection, fold, epoch) of both runs has the same train loss."""
    for key in sorted(set(main) | set(select)):
        a, b = main.get(key, {}), select.get(key, {})
        for e in sorted(set(a) | set(b)):
            la, lb = a.get(e, {}).get("train"), b.get(e, {}).get("train")
            if la is None or lb is None or abs(la - lb) > 1e-6 * max(1.0, abs(la)):
                loss = lambda v: "none" if v is None else f"{v:.8g}"
                raise ValueError(f"{key[0]} fold {key[1]} epoch {e} trained differently from the main run "
                                 f"(train loss {loss(lb)} against {loss(la)}): --select-by needs the same training")


def cadence_table(mains, cadences, selects=None):
    """Per collection: epochs, folds x runs, and per k: scored epochs, cv (of the selecting
    runs), the main runs' oof and valid at the kept epochs (means over runs and folds)."""
    selects = selects or mains
    out = {}
    for coll in sorted({c for run in mains for c, _ in run}):
        pairs = [(m[key], s[key]) for m, s in zip(mains, selects) for key in sorted(m) if key[0] == coll]
        last = min(max(m) for m, _ in pairs)
        rows = []
        for k in cadences:
            kept = [(m, s, kept_epoch(s, k, last)) for m, s in pairs]
            valids = [m[e]["valid"] for m, _, e in kept if "valid" in m[e]]
            rows.append(dict(k=k, scored=sum(1 for e in range(1, last + 1) if e % k == 0 or e == last),
                             cv=sum(s[e]["oof"] for _, s, e in kept) / len(kept),
                             oof=sum(m[e]["oof"] for m, _, e in kept) / len(kept),
                             valid=sum(valids) / len(valids) if valids else None,
                             kept=[e for _, _, e in kept]))
        for r in rows:
            r["cv_drop"] = rows[0]["cv"] - r["cv"]
            r["valid_gain"] = None if r["valid"] is None else r["valid"] - rows[0]["valid"]
        out[coll] = dict(epochs=last, folds=len(pairs), runs=len(mains), rows=rows)
    return out


def print_table(table):
    for coll, t in table.items():
        print(f"{coll}: {t['folds']} fold models ({t['runs']} runs), {t['epochs']} epochs")
        print("  k  scored  cv       cv(1)-cv(k)  oof      valid    valid-valid(1)  kept epochs")
        for r in t["rows"]:
            valid = "n/a" if r["valid"] is None else f"{r['valid']:.4f}   {r['valid_gain']:+.4f}"
            print(f"  {r['k']:<2} {r['scored']:<7} {r['cv']:.4f}   {r['cv_drop']:+.4f}      {r['oof']:.4f}   "
                  f"{valid:<24}{' '.join(map(str, r['kept']))}")


def self_test():
    # Fold 0: oof peaks at epoch 3, fold 1 at epoch 4; epochs 1-4, k = 2 scores 2 and 4.
    rows = [(0, 1, "oof", 0.1), (0, 2, "oof", 0.2), (0, 3, "oof", 0.5), (0, 4, "oof", 0.3),
            (1, 1, "oof", 0.4), (1, 2, "oof", 0.4), (1, 3, "oof", 0.2), (1, 4, "oof", 0.6),
            (0, 1, "valid", 1.0), (0, 2, "valid", 2.0), (0, 3, "valid", 3.0), (0, 4, "valid", 4.0),
            (1, 1, "valid", 1.0), (1, 2, "valid", 2.0), (1, 3, "valid", 3.0), (1, 4, "valid", 4.0)]
    rows += [(f, e, "train", 1.0 / e) for f in (0, 1) for e in range(1, 5)]
    csv_of = lambda rs: read_scores(io.StringIO("collection,fold,epoch,step,split,loss,score\n" + "".join(
        f"c,{f},{e},0,{s},{v if s == 'train' else ''},{'' if s == 'train' else v}\n" for f, e, s, v in rs)))
    t = cadence_table([csv_of(rows)], [1, 2, 4])["c"]
    r1, r2, r4 = t["rows"]
    assert t["epochs"] == 4 and r1["scored"] == 4 and r2["scored"] == 2 and r4["scored"] == 1
    assert r1["kept"] == [3, 4] and abs(r1["cv"] - 0.55) < 1e-12 and abs(r1["valid"] - 3.5) < 1e-12
    assert r2["kept"] == [4, 4] and abs(r2["cv"] - 0.45) < 1e-12 and abs(r2["cv_drop"] - 0.10) < 1e-12
    assert r4["kept"] == [4, 4] and r4["valid"] == 4.0 and abs(r4["valid_gain"] - 0.5) < 1e-12
    # Ties keep the first: fold 1's epochs 1 and 2 both score 0.4 at k = 1 before epoch 4.
    assert kept_epoch({1: {"oof": 0.4}, 2: {"oof": 0.4}}, 1, 2) == 1
    # Selecting by another run: fold 0's selecting run prefers epoch 2, so the main run's
    # scores at epoch 2 are read (oof 0.2, valid 2.0); cv is the selecting run's own.
    sel = [(f, e, s, (0.9 if (f, e) == (0, 2) else 0.0) if s == "oof" else v) for f, e, s, v in rows]
    s1 = cadence_table([csv_of(rows)], [1], [csv_of(sel)])["c"]["rows"][0]
    assert s1["kept"] == [2, 1] and abs(s1["cv"] - 0.45) < 1e-12 and abs(s1["oof"] - 0.3) < 1e-12
    assert abs(s1["valid"] - 1.5) < 1e-12
    # Two runs are averaged over runs and folds.
    two = cadence_table([csv_of(rows), csv_of(rows)], [1])["c"]
    assert two["folds"] == 4 and two["runs"] == 2 and abs(two["rows"][0]["cv"] - 0.55) < 1e-12
    # Different training is refused.
    other = [(f, e, s, v * 2 if s == "train" else v) for f, e, s, v in rows]
    try:
        check_same_training(csv_of(rows), csv_of(other))
        raise AssertionError("different training was not refused")
    except ValueError as e:
        assert "trained differently" in str(e)
    print("ok eval_cadence self-test")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("metrics", nargs="*")
    ap.add_argument("--select-by", nargs="+", default=[])
    ap.add_argument("--cadences", default="1,2,3,5,10")
    ap.add_argument("--json", default="")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.metrics:
        ap.error("METRICS_CSV is required")
    if a.select_by and len(a.select_by) != len(a.metrics):
        ap.error(f"--select-by takes one run per main run ({len(a.metrics)}), got {len(a.select_by)}")
    def load(path):
        try:
            with open(path) as f:
                return read_scores(f)
        except KeyError as e:
            sys.exit(f"eval_cadence.py: {path}: no column {e} (not a tpuperf-train metrics.csv)")
        except (OSError, ValueError) as e:
            sys.exit(f"eval_cadence.py: {path}: {e}")

    cadences = [int(k) for k in a.cadences.split(",") if k.strip().isdigit()]
    if len(cadences) != len(a.cadences.split(",")) or min(cadences) < 1:
        ap.error(f"--cadences {a.cadences}: each k must be an integer >= 1")
    mains = [load(path) for path in a.metrics]
    selects = [load(path) for path in a.select_by]
    for m, s, path in zip(mains, selects, a.select_by):
        try:
            check_same_training(m, s)
        except ValueError as e:
            sys.exit(f"eval_cadence.py: {path}: {e}")
    table = cadence_table(mains, cadences, selects or None)
    if not table:
        sys.exit(f"eval_cadence.py: {', '.join(a.metrics)}: no out-of-fold scores "
                 "(were the runs scored after their epochs?)")
    print_table(table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
