#!/usr/bin/env python3
"""The adaptation budget bench's helper (issue #48 item 3; driven by bench_adapt_budget.sh).

Subcommands:
  sources   the graphs the bench measures: the GRAPHS test graphs of each collection of the
            bench tree with the most distinct configs (their runtimes from truth/, written
            as one release-format file each) and the real graphs given with --real; prints
            one line per graph: "<slot> <collection> <file> <distinct configs> <name>"
            (slot gen<i>: the i-th graph of each generated collection; real: the real
            graphs), the slots being the scratch trees of method (d)
  collect   the records of one cell (a budget and a draw) from the bench's result files,
            one JSON line per (graph, method); every tpuperf-rank score and slowdown is
            recomputed here from its order with baselines.py's metric code and must agree
  report    the "Adaptation budget" section of tests/bench/RESULTS.md from the records
  --self-test  the aggregation (mean, sd, min-max, the verdict) on records built by hand

Metrics: baselines.py's (tile: 2 - best of the top 5 / best, layout: Kendall's tau-b;
top-k slowdown: best runtime of the k first ranked over the best of all), on the held-out
configs of a graph only."""
import argparse
import datetime
import glob
import json
import os
import re
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import baselines as bl  # noqa: E402
from results_md import replace_section  # noqa: E402

METHODS = [("trained", "(a) as trained"), ("adapted", "(b) adapted"), ("finetuned", "(b') fine-tuned"),
           ("ridge", "(c) ridge"), ("gbt", "(c) GBT"), ("scratch", "(d) from scratch")]
TITLE = "Adaptation budget"


# ----------------------------------------------------------------------------- sources
def cmd_sources(a):
    os.makedirs(a.out, exist_ok=True)
    for collection in bl.COLLECTIONS:
        kind = bl.kind_of(collection)
        graphs = []
        for p in sorted(glob.glob(os.path.join(a.raw, "npz", bl.coll_dir(collection), "test", "*.npz"))):
            stem = os.path.basename(p)[:-4]
            g = bl.load(p)
            g.update(bl.load(os.path.join(a.raw, "truth", bl.coll_dir(collection), "test", stem + ".npz")))
            graphs.append((len(bl.distinct_configs(g, kind)), stem, g))
        # The most distinct configs first; equal sizes in name order.
        graphs.sort(key=lambda x: -x[0])
        for i, (n, stem, g) in enumerate(graphs[:a.graphs]):
            d = os.path.join(a.out, bl.coll_dir(collection))
            os.makedirs(d, exist_ok=True)
            np.savez(os.path.join(d, stem + ".npz"), **g)
            print(f"gen{i} {collection} {os.path.join(d, stem + '.npz')} {n} {stem}")
    for spec in a.real:
        collection, path, name = spec.split("=", 1)[0], spec.split("=", 1)[1].split(",")[0], spec.split(",")[1]
        n = len(bl.distinct_configs(bl.load(path), bl.kind_of(collection)))
        print(f"real {collection} {path} {n} {name}")


# ----------------------------------------------------------------------------- collect
def runtimes_of(path, kind):
    return bl.targets(bl.load(path), kind)


def fit_tau(result, y):
    """Kendall's tau-b of a ranking of the measured configs against their runtimes (for tile
    too: the tile score of 16 configs is almost always 1, so it cannot show a fit)."""
    return bl.layout_score(np.asarray(result["order"], dtype=np.int64), y)


def checked(result, y, kind, what):
    """score and slowdowns of a tpuperf-rank --json result, recomputed from its order
    against the file's runtimes y with baselines.py's metrics (they must agree)."""
    order = np.asarray(result["order"], dtype=np.int64)
    if len(order) != len(y):
        raise SystemExit(f"{what}: {len(order)} configs ranked, the file has {len(y)}")
    score = bl.tile_score(order, y) if kind == "tile" else bl.layout_score(order, y)
    slow = {f"top{k}": bl.slowdown(order, y, k) for k in (1, 5, 10)}
    mine = [score] + [slow[k] for k in ("top1", "top5", "top10")]
    theirs = [result["score_vs_runtimes"]] + [result["slowdown"][k] for k in ("top1", "top5", "top10")]
    for m, t in zip(mine, theirs):
        if not (abs(m - t) < 1e-6 or (m != m and t is None)):
            raise SystemExit(f"{what}: tpuperf-rank says {theirs}, baselines.py's metrics {mine}")
    return dict(score=score, **slow)


def rank_results(path):
    """{input file: result} of a tpuperf-rank --json output; an input it rejected is an error."""
    j = json.load(open(path))
    if j.get("rejected"):
        raise SystemExit(f"{path}: tpuperf-rank rejected {j['rejected']}")
    return {os.path.abspath(r["input"]): r for r in j["results"]}


FINETUNE_LOG = re.compile(r"adapted (\d+) fold models of \S+ to .* \((\d+) measured configs\) by fine-tuning: (\d+) "
                          r"steps each of (\d+) configs, lr (\S+), seed (\d+), \S+ loss (\S+) -> (\S+), in (\S+) s")
BLEND_LOG = re.compile(r"adapted \S+ to .* \((\d+) measured configs\) by blending: (.*) \(weights run (\S+), fit "
                       r"(\S+); held-out Kendall tau over (\d+) folds: run (\S+), chosen (\S+)\), seed (\d+), in (\S+) s")


def adapt_log(path):
    """What tpuperf-rank --adapt logged: the blend's choice or the fine-tuning's steps and loss."""
    for line in open(path):
        found = adapt_log_line(line)
        if found:
            return found
    raise SystemExit(f"{path}: no 'adapted ... in N s' line (tpuperf-rank --adapt's log)")


def adapt_log_line(line):
    m = FINETUNE_LOG.search(line)
    if m:
        return dict(method="finetune", folds=int(m[1]), measured=int(m[2]), steps=int(m[3]), slate=int(m[4]),
                    lr=float(m[5]), loss_first=float(m[7]), loss_last=float(m[8]), seconds=float(m[9]))
    m = BLEND_LOG.search(line)
    if m:
        return dict(method="blend", measured=int(m[1]), blend=m[2], weight_run=float(m[3]),
                    weight_fit=float(m[4]), cv_folds=int(m[5]), cv_tau_run=float(m[6]), cv_tau=float(m[7]),
                    seconds=float(m[9]))
    return None


def cmd_collect(a):
    """Cell layout (bench_adapt_budget.sh): <cell>/graphs.txt lists "slot collection name" of
    the graphs measured at this budget; <cell>/<slot>/ is make-within's tree (npz/.../train:
    MEASURED, held/: HELD with runtimes); a.json: the trained run on every MEASURED and HELD;
    b/<slot>-<coll>.json/.log: the adapted run (the blend) on MEASURED and HELD; f/: the same
    fine-tuned (--adapt-method finetune); c/<slot>-<coll>.json:
    baselines.py within; d/<slot>.json: the slot's scratch run on MEASURED and HELD."""
    cell = a.cell
    trained = rank_results(os.path.join(cell, "a.json"))
    out = []
    for line in open(os.path.join(cell, "graphs.txt")):
        slot, collection, name = line.split()
        kind, cd, cu = bl.kind_of(collection), bl.coll_dir(collection), collection.replace(":", "_")
        measured = os.path.abspath(os.path.join(cell, slot, "npz", cd, "train", name + ".npz"))
        held = os.path.abspath(os.path.join(cell, slot, "held", cd, "test", name + ".npz"))
        ym, yh = runtimes_of(measured, kind), runtimes_of(held, kind)
        base = dict(budget=a.budget, draw=a.draw, slot=slot, collection=collection, graph=name,
                    measured=int(len(ym)), held=int(len(yh)))

        def rec(method, held_m, fit=None, **extra):
            out.append(dict(base, method=method, **held_m, fit=fit, **extra))

        checked(trained[measured], ym, kind, f"{cell} a {name} measured")
        rec("trained", checked(trained[held], yh, kind, f"{cell} a {name}"), fit_tau(trained[measured], ym))
        for method, d in (("adapted", "b"), ("finetuned", "f")):
            adapted = rank_results(os.path.join(cell, d, f"{slot}-{cu}.json"))
            checked(adapted[measured], ym, kind, f"{cell} {d} {name} measured")
            rec(method, checked(adapted[held], yh, kind, f"{cell} {d} {name}"), fit_tau(adapted[measured], ym),
                adapt=adapt_log(os.path.join(cell, d, f"{slot}-{cu}.log")))
        w = json.load(open(os.path.join(cell, "c", f"{slot}-{cu}.json")))
        for m in ("ridge", "gbt"):
            rec(m, dict(score=w["models"][m]["score"], **w["models"][m]["slowdown"]))
        rec("random", dict(score=w["random"]))
        scratch = rank_results(os.path.join(cell, "d", f"{slot}.json"))
        checked(scratch[measured], ym, kind, f"{cell} d {name} measured")
        rec("scratch", checked(scratch[held], yh, kind, f"{cell} d {name}"), fit_tau(scratch[measured], ym))
    with open(a.out, "a") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    print(f"{cell}: {len(out)} records")


# ------------------------------------------------------------------------------ report
def group_of(r):
    return ("real " + r["graph"].replace("real_", "").replace("_", " ")) if r["slot"] == "real" else r["collection"]


def stats(values):
    """mean, sd (0 for one value), min, max of the finite values; None when there are none."""
    v = [x for x in values if x is not None and x == x]
    if not v:
        return None
    return dict(n=len(v), mean=statistics.mean(v), sd=statistics.stdev(v) if len(v) > 1 else 0.0,
                min=min(v), max=max(v))


def aggregate(records):
    """{(group, budget): {method: {score, top1, top5, fit, adapt_s, loss_first, loss_last: stats},
    "graphs": n, "draws": n, "held": stats, "collection": c}}."""
    cells = {}
    for r in records:
        cells.setdefault((group_of(r), r["budget"]), []).append(r)
    out = {}
    for key, rs in cells.items():
        e = dict(graphs=len({r["graph"] for r in rs}), draws=len({r["draw"] for r in rs}),
                 held=stats([r["held"] for r in rs if r["method"] == "trained"]), collection=rs[0]["collection"])
        for m in [x for x, _ in METHODS] + ["random"]:
            mr = [r for r in rs if r["method"] == m]
            e[m] = {k: stats([r.get(k) for r in mr]) for k in ("score", "top1", "top5", "fit")}
            if m == "adapted":
                e[m]["seconds"] = stats([r["adapt"]["seconds"] for r in mr])
                e[m]["cv_tau_run"] = stats([r["adapt"].get("cv_tau_run") for r in mr])
                e[m]["cv_tau"] = stats([r["adapt"].get("cv_tau") for r in mr])
                e[m]["choices"] = sorted(r["adapt"].get("blend", "") for r in mr)
            if m == "finetuned":
                for k in ("seconds", "loss_first", "loss_last"):
                    e[m][k] = stats([r["adapt"][k] for r in mr])
        out[key] = e
    return out


def verdict(e):
    """(beats, within, text): adapted's mean score against (a) and the better of (c)'s means;
    within: adapted's mean is at least the better of the two less the row's spread (the
    larger sd of adapted's and that method's scores)."""
    ad, tr = e["adapted"]["score"], e["trained"]["score"]
    flat = max((e["ridge"]["score"], e["gbt"]["score"]), key=lambda s: s["mean"])
    best = max((tr, flat), key=lambda s: s["mean"])
    beats = ad["mean"] > tr["mean"] and ad["mean"] > flat["mean"]
    within = ad["mean"] >= best["mean"] - max(ad["sd"], best["sd"])
    return beats, within, f"{ad['mean'] - tr['mean']:+.3f} / {ad['mean'] - flat['mean']:+.3f}"


def ms(s, digits=3):
    return "n/a" if s is None else f"{s['mean']:.{digits}f} ± {s['sd']:.{digits}f}"


def why_not(group, budget, e):
    """What the records show where adapted (the blend) does not reach the better of (a) and
    (c) within the row's spread: what the cross-validation over the measurements chose, and
    how its held-out taus compared."""
    ad, tr = e["adapted"], e["trained"]
    flat = max(("ridge", "gbt"), key=lambda m: e[m]["score"]["mean"])
    choices = {}
    for c in ad["choices"]:
        choices[c] = choices.get(c, 0) + 1
    chose = ", ".join(f"{c} x{n}" for c, n in sorted(choices.items(), key=lambda x: -x[1]))
    parts = [f"{group} at {budget}: held-out score adapted {ad['score']['mean']:.3f}, as trained "
             f"{tr['score']['mean']:.3f}, {flat} {e[flat]['score']['mean']:.3f}; the blend chose {chose}"]
    if ad["cv_tau"] and ad["cv_tau_run"]:
        parts.append(f"mean held-out tau over the measurements' folds: run {ad['cv_tau_run']['mean']:.3f}, "
                     f"chosen {ad['cv_tau']['mean']:.3f}")
    if all(c == "run" for c in ad["choices"]):
        parts.append("the cross-validation kept the run alone: no fit beat it by a standard error on the "
                     "measurements' folds")
    if e[flat]["score"]["mean"] > ad["score"]["mean"]:
        parts.append(f"{flat} here reads features the blend's ridge on the raw config values does not (baselines.py's "
                     "engineered tile and layout aggregates)" + (", and fits their interactions" if flat == "gbt" else ""))
    return "; ".join(parts) + "."


def timed(timing):
    """{(group, budget): stats of the seconds} of the timing pass's adaptations (lines
    "<budget> <slot> <collection> <graph> <tpuperf-rank --adapt log>")."""
    seconds = {}
    for line in open(timing):
        b, slot, collection, name, log = line.split()
        key = (group_of(dict(slot=slot, graph=name, collection=collection)), int(b))
        seconds.setdefault(key, []).append(adapt_log(log)["seconds"])
    return {k: stats(v) for k, v in seconds.items()}


def cmd_report(a):
    records = [json.loads(line) for line in open(a.records)]
    meta = json.load(open(a.meta))
    agg = aggregate(records)
    # The seconds quoted are the timing pass's (adaptations run alone on the bench lock), not
    # the quality runs'.
    t = timed(a.timing) if a.timing else {}
    for key, e in agg.items():
        e["adapted"]["seconds"] = t.get(key)
    groups = sorted({k[0] for k in agg}, key=lambda g: (g.startswith("real"), g))
    budgets = sorted({b for b in meta["budgets"]})
    skipped = meta.get("skipped", [])
    L = [f"## {TITLE}", "",
         "Written by `tests/bench/bench_adapt_budget.sh` (issue #48 item 3): on graphs the run never saw, "
         "some configs are measured at random (the budget), and the rest of the graph's distinct configs (at "
         f"most {meta['max_held']:,}) are ranked by (a) the run as trained (`tpuperf-rank --json`), (b) the run "
         "adapted to the measured configs (`tpuperf-rank --adapt MEASURED.npz --seed <draw>`: the default, "
         "the run's score blended with a ridge on the measured configs, chosen by cross-validation over "
         "them), (b') the same fine-tuned (`--adapt-method finetune`, the default steps and learning rate), "
         "(c) ridge and gradient-boosted trees fit on the measured configs only "
         f"(`baselines.py within --gbt-max-iter {meta['gbt_max_iter']}`: the Baselines section's within-graph models, the "
         "GBT at most that many rounds), (d) tpuperf trained from "
         "scratch on the measured configs only. Scores (tile: 2 - best of the top 5 / best; layout: Kendall's "
         "tau-b) and slowdowns (best runtime of the k first ranked / the best held-out runtime; 1 is best) are "
         "computed on the held-out configs only; tpuperf-rank's own figures are checked against "
         "`baselines.py`'s metric code (equal to 1e-6).", "",
         f"Run {meta['when']} on {meta['machine']}, load {meta['load'][0]:.2f} → {meta['load'][1]:.2f}, "
         f"{meta['seconds'] / 60:.1f} min in all ({meta['run_note']}). Every heavy command under "
         f"`nice -n {meta['nice']}`; tpuperf-rank on one LibTorch thread. Adaptation seconds: {meta['timing_note']}.", "",
         f"- The run: {meta['run_settings']}.",
         f"- Graphs: {meta['graphs_note']}",
         f"- Draws: {meta['draws']} per (graph, budget), draw d measures the first B configs of a permutation of "
         "the graph's distinct configs drawn with seed d (so a draw's 16 measured configs are among its 64 and "
         "its 256), held-out = the next ones up to the cap; the adaptation's --seed is d.",
         f"- (d) from scratch: {meta['scratch_settings']}.",
         "- Spread: ± is the standard deviation over the graphs and draws of a row (n = graphs x draws), so it "
         "holds the graph-to-graph differences as well as the draws'.", ""]
    if skipped:
        L += ["Skipped (fewer than %d held-out configs would be left): " % meta["min_held"] +
              "; ".join(skipped) + ".", ""]
    L += ["### Score on the held-out configs", "",
          "Mean ± sd over the row's graphs and draws; the verdict column: adapted's mean less (a)'s and less "
          "the better of ridge's and GBT's (bold: adapted beats both), then whether adapted is at least the "
          "better of (a) and (c) within the row's spread (the larger sd of the two).", "",
          "| collection | budget | graphs x draws | held-out | " + " | ".join(n for _, n in METHODS) +
          " | random | adapted − (a) / − better (c) | within spread | adaptation s |",
          "|---|---|---|---|" + "---|" * (len(METHODS) + 4)]
    rows = [(g, b, agg[(g, b)]) for g in groups for b in budgets if (g, b) in agg]
    not_beaten = []
    for g, b, e in rows:
        beats, within, vt = verdict(e)
        if not within:
            not_beaten.append((g, b, e))
        L.append(f"| {g} | {b} | {e['graphs']} x {e['draws']} | {e['held']['mean']:.0f} | " +
                 " | ".join(ms(e[m]["score"]) for m, _ in METHODS) +
                 f" | {e['random']['score']['mean']:.3f} | {'**' + vt + '**' if beats else vt} | "
                 f"{'yes' if within else 'no'} | {ms(e['adapted']['seconds'], 3)} |")
    L += ["", "### Top-1 / top-5 slowdown on the held-out configs (mean ± sd; 1 = the best held-out config)", "",
          "| collection | budget | " + " | ".join(n for _, n in METHODS) + " |", "|---|---|" + "---|" * len(METHODS)]
    for g, b, e in rows:
        L.append(f"| {g} | {b} | " + " | ".join(f"{ms(e[m]['top1'], 2)} / {ms(e[m]['top5'], 2)}"
                                              for m, _ in METHODS) + " |")
    L += ["", "### Where adapted is below the better of (a) and (c) by more than the row's spread", ""]
    if not_beaten:
        L += [f"{len(not_beaten)} of {len(agg)} rows. What the records show (the blend's choices over the "
              "row's draws and the cross-validated taus behind them); the reasons are read off these figures "
              "by fixed rules, the analysis is the dated note:", ""]
        L += ["- " + why_not(g, b, e) for g, b, e in not_beaten]
    else:
        L.append(f"None: at every budget and collection adapted is at least the better of (a) and (c) within "
                 f"the row's spread ({len(agg)} rows; it beats both outright in "
                 f"{sum(verdict(e)[0] for _, _, e in rows)}).")
    ft = stats([e["finetuned"]["seconds"]["mean"] for _, _, e in rows if e["finetuned"]["seconds"]])
    L += ["", "Adaptation s: the seconds `Ranker::adapted` (the blend) took (tpuperf-rank's log line, one "
          "LibTorch thread), mean ± sd over the timing pass's adaptations of the row; the fine-tuning took "
          f"{ms(ft, 2)} s a row (mean ± sd over the rows' means, in the quality runs). The analysis is in the dated "
          "notes docs/experiments/2026-11-29-E26-adaptation-budget.md and 2026-12-02-E37-blended-adaptation.md, "
          "not written by the bench.", "",
          f"Command: `bash tests/bench/bench_adapt_budget.sh [BIN_DIR]` (its header says what it runs; the trees, "
          f"rankings and logs stay in `$TPUPERF_BENCH_DIR/adapt-budget`).", ""]
    text = "\n".join(L)
    if a.results:
        replace_section(a.results, TITLE, text.rstrip("\n") + "\n")
    print(text)


# ---------------------------------------------------------------------------- self-test
def self_test():
    failures = []

    def check(name, got, want):
        ok = got == want if not isinstance(want, float) else abs(got - want) < 1e-12
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {got!r} (want {want!r})")
        if not ok:
            failures.append(name)

    def r(graph, draw, method, score, **kw):
        d = dict(budget=16, draw=draw, slot="gen0", collection="tile:xla", graph=graph, measured=16, held=50,
                 method=method, score=score, top1=kw.pop("top1", 1.0), top5=1.0, fit=kw.pop("fit", None))
        d.update(kw)
        return d

    ad = dict(method="blend", seconds=0.01, blend="run", cv_tau_run=0.5, cv_tau=0.5)
    ft = dict(method="finetune", seconds=2.0, loss_first=1.0, loss_last=0.5)
    recs = [r("g1", 0, "trained", 0.5, fit=0.4), r("g1", 1, "trained", 0.7, fit=0.6),
            r("g1", 0, "adapted", 0.6, fit=0.9, adapt=ad, top1=1.5), r("g1", 1, "adapted", 0.8, fit=0.9, adapt=ad),
            r("g1", 0, "finetuned", 0.6, adapt=ft), r("g1", 1, "finetuned", 0.6, adapt=ft),
            r("g1", 0, "ridge", 0.9), r("g1", 1, "ridge", 0.1), r("g1", 0, "gbt", 0.2), r("g1", 1, "gbt", 0.3),
            r("g1", 0, "scratch", 0.0), r("g1", 1, "scratch", float("nan")), r("g1", 0, "random", 0.1)]
    e = aggregate(recs)[("tile:xla", 16)]
    check("mean of two draws", e["adapted"]["score"]["mean"], 0.7)
    check("sd of two draws (n-1)", e["adapted"]["score"]["sd"], float(np.std([0.6, 0.8], ddof=1)))
    check("min / max", (e["ridge"]["score"]["min"], e["ridge"]["score"]["max"]), (0.1, 0.9))
    check("NaN skipped", (e["scratch"]["score"]["n"], e["scratch"]["score"]["mean"]), (1, 0.0))
    check("top-1 slowdown mean", e["adapted"]["top1"]["mean"], 1.25)
    check("graphs x draws", (e["graphs"], e["draws"]), (1, 2))
    # adapted 0.7 against as trained 0.6 and the better flat mean (ridge 0.5, GBT 0.25): beats.
    check("verdict beats", verdict(e), (True, True, "+0.100 / +0.200"))
    recs[6]["score"] = 1.3   # ridge mean 0.7: level with adapted, so not beaten, but within
    check("verdict level is not beating", verdict(aggregate(recs)[("tile:xla", 16)])[:2], (False, True))
    recs[6]["score"], recs[7]["score"] = 1.0, 1.0   # ridge 1.0 +- 0: adapted 0.7 +- 0.14 is below
    check("verdict below the spread", verdict(aggregate(recs)[("tile:xla", 16)])[1], False)
    recs[6]["score"], recs[7]["score"] = 0.8, 0.8   # ridge 0.8 +- 0: adapted 0.7 +- 0.14 is within
    check("verdict within the spread", verdict(aggregate(recs)[("tile:xla", 16)])[1], True)
    check("blend log", adapt_log_line("[info] adapted tile:xla to /x/m.npz (64 measured configs) by blending: "
                                      "residual w=0.5 alpha=1 (weights run 0.600, fit 0.500; held-out Kendall tau "
                                      "over 5 folds: run 0.400, chosen 0.550), seed 2, in 0.004 s")["blend"],
          "residual w=0.5 alpha=1")
    check("real graph group", group_of(dict(slot="real", graph="real_tile_kernel", collection="tile:xla")),
          "real tile kernel")
    if failures:
        print(f"self-test FAILED: {', '.join(failures)}")
        return 1
    print("self-test passed")
    return 0


def main():
    if "--self-test" in sys.argv[1:]:
        return self_test()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("sources")
    q.add_argument("--raw", required=True, help="the bench tree")
    q.add_argument("--graphs", type=int, required=True, help="test graphs per collection")
    q.add_argument("--real", action="append", default=[], help="COLLECTION=FILE,NAME (a featurized real graph)")
    q.add_argument("--out", required=True, help="where the test graphs with their runtimes are written")
    q = sub.add_parser("collect")
    q.add_argument("--cell", required=True)
    q.add_argument("--budget", type=int, required=True)
    q.add_argument("--draw", type=int, required=True)
    q.add_argument("--out", required=True, help="records (JSON lines) appended to this file")
    q = sub.add_parser("report")
    q.add_argument("--records", required=True)
    q.add_argument("--meta", required=True)
    q.add_argument("--results", default="", help="RESULTS.md to write the section into")
    q.add_argument("--timing", default="", help="the timing pass's list of adaptations (the seconds quoted)")
    a = p.parse_args()
    {"sources": cmd_sources, "collect": cmd_collect, "report": cmd_report}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
