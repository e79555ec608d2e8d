#!/usr/bin/env python3
"""The tuning-loop bench's helper (issue #57 item 4; driven by bench_tuning_loop.sh).

On graphs whose runtimes are all known, an autotuner's loop: measure a batch of configs
(look their runtimes up), update the model, pick the next batch; the figure of merit is the
best runtime measured so far over the graph's true best (the best-found slowdown, 1 = it has
measured the best config), against the number of configs measured.

Subcommands:
  sources     the graphs: every test graph of the bench tree's five collections (runtimes from
              its truth/) and the real graphs given with --real, each reduced to its distinct
              configs (the least runtime of re-measured copies, as tpuperf-preprocess's dedup
              keeps) and, beyond --max-configs, a seeded sample of them; a graph with at most
              --min-configs distinct configs is left out (one batch measures all of it). Writes
              one release-format file per graph with its runtimes and prints one line per
              graph: "<group> <collection> <file> <configs> <name>"
  strategies  the Python strategies on those graphs, one JSON line per (method, graph, draw)
              with the runtimes in the order they were measured: random search, the GBT loop
              (Ansor's way), the AutoTVM transfer recipe; and, from tuning_loop's output, the
              tpuperf loop and the run's top-B (deterministic: draw 0 only)
  report      the "Tuning loop" section of tests/bench/RESULTS.md and tuning_loop.svg
  --self-test the metric, the aggregation and the verdict on records built by hand

The strategies (BATCH configs a round, at most BUDGET measured):
  random   a permutation of the configs drawn with the draw's seed, measured in its order.
  gbt      Ansor's cost-model loop: the random permutation's first WARMUP configs (the same
           as random search's: Ansor's XGBModel answers random predictions below its
           num_warmup_sample, 100 by default; we use WARMUP = 64 so that 24 of the 32 rounds to
           256 are model rounds), then each round a GBT refit on every measured config
           (baselines.py's within-graph features, `features` below; target the measured configs'
           standardized log runtime) and the BATCH unmeasured configs it predicts fastest. Ansor's eps-greedy
           share of random configs in a batch, int(0.05 x 8), is 0 here.
  autotvm  AutoTVM's transfer recipe: the run's prediction (its ensemble score of every config,
           standardized over the graph) as the base margin of a GBT refit each round on the
           measured configs, weighted 1 / 2^(n / 64) after n measurements (AutoTVM's discount,
           which drops the base model below 0.05, i.e. beyond 277 measurements): score =
           w b + gbt, the GBT fit to the residual t - w b (squared loss: boosting from that
           margin). Round 0 ranks by the run alone. Each pick is a random unmeasured config
           with probability 0.05 (AutoTVM ModelBasedTuner's eps_greedy), seeded by the draw.
  tpuperf  tuning_loop.cpp: suggest BATCH with the run as trained, then each round
           Ranker::adapted (the blend, the default) on the measured configs and suggest BATCH
           excluding them.
  trained  the run as trained measuring its own top-B (its order's first B configs).
The GBTs: sklearn's HistGradientBoostingRegressor as baselines.py's make_models builds it
(learning rate 0.1, 31 leaves, min_samples_leaf min(20, max(2, n / 20)), early stopping from
200 rows) with at most GBT_MAX_ITER rounds and the draw as random_state."""
import argparse
import datetime
import glob
import json
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import baselines as bl  # noqa: E402
from results_md import replace_section  # noqa: E402

TITLE = "Tuning loop"
METHODS = [("random", "random search"), ("trained", "run's top-B"), ("tpuperf", "tpuperf loop"),
           ("gbt", "GBT loop (Ansor)"), ("autotvm", "AutoTVM transfer")]
COLOURS = {"random": "#7f7f7f", "trained": "#ff7f0e", "tpuperf": "#1f77b4", "gbt": "#2ca02c", "autotvm": "#d62728"}
RANDOM_METHODS = ("random", "gbt", "autotvm")


# ----------------------------------------------------------------------------- sources
def reduce_graph(g, kind, max_configs, seed=0):
    """The graph with its distinct configs only (first-occurrence order, each the copy with
    the least runtime) and at most max_configs of them (a seeded sample, kept in order)."""
    idx = bl.distinct_configs(g, kind)
    if max_configs and len(idx) > max_configs:
        idx = np.sort(np.random.default_rng(seed).choice(idx, max_configs, replace=False))
    return bl.subset(g, idx, kind), len(idx)


def cmd_sources(a):
    os.makedirs(a.out, exist_ok=True)
    graphs = []
    for collection in bl.COLLECTIONS:
        for p in sorted(glob.glob(os.path.join(a.raw, "npz", bl.coll_dir(collection), "test", "*.npz"))):
            stem = os.path.basename(p)[:-4]
            g = bl.load(p)
            g.update(bl.load(os.path.join(a.raw, "truth", bl.coll_dir(collection), "test", stem + ".npz")))
            graphs.append((collection, collection, stem, g))
    for spec in a.real:
        collection, rest = spec.split("=", 1)
        path, name = rest.split(",")
        kind = bl.kind_of(collection)
        graphs.append(("real " + kind, collection, name, bl.load(path)))
    skipped = []
    for group, collection, name, g in graphs:
        kind = bl.kind_of(collection)
        r, n = reduce_graph(g, kind, a.max_configs)
        if n <= a.min_configs:
            skipped.append(f"{name} ({group}, {n} distinct)")
            continue
        d = os.path.join(a.out, bl.coll_dir(collection))
        os.makedirs(d, exist_ok=True)
        f = os.path.join(d, name + ".npz")
        np.savez(f, **r)
        print(f"{group.replace(' ', '_')} {collection} {f} {len(r['config_runtime'])} {name}")
    if a.skipped:
        with open(a.skipped, "w") as f:
            f.write("".join(s + "\n" for s in skipped))


# --------------------------------------------------------------------------- strategies
def gbt_model(n_rows, max_iter, seed):
    m = bl.make_models(n_rows, 0, max_iter)["gbt"]()
    return m.set_params(random_state=seed)


def standardized(v):
    v = np.asarray(v, dtype=np.float64)
    sd = v.std()
    return (v - v.mean()) / (sd if sd > 0 else 1.0)


def top_unmeasured(pred, measured_mask, k, rng=None, eps=0.0):
    """The k unmeasured configs of lowest prediction, best first (ties: lower index); with
    eps > 0 each pick is instead a random unmeasured config with probability eps."""
    order = [int(c) for c in np.argsort(pred, kind="stable") if not measured_mask[c]]
    out = []
    for _ in range(min(k, len(order))):
        if eps > 0 and rng.random() < eps:
            left = [c for c in order if c not in out]
            c = left[int(rng.integers(len(left)))]
        else:
            c = next(c for c in order if c not in out)
        out.append(c)
    return out


def model_loop(X, y, budget, batch, first, fit_predict):
    """Measured indices in order: first (the configs measured before any model round), then
    each round fit_predict(measured indices, measured mask) -> the batch to measure."""
    n = len(y)
    goal = min(budget, n)
    seq = list(first[:goal])
    mask = np.zeros(n, dtype=bool)
    mask[seq] = True
    while len(seq) < goal:
        nxt = fit_predict(seq, mask)[:goal - len(seq)]
        if not nxt:
            break
        seq += nxt
        mask[nxt] = True
    return seq


def run_random(y, budget, draw):
    return [int(c) for c in np.random.default_rng(draw).permutation(len(y))[:min(budget, len(y))]]


def run_gbt(X, y, budget, batch, draw, warmup, max_iter):
    perm = np.random.default_rng(draw).permutation(len(y))   # random search's permutation

    def step(seq, mask):
        t = bl.graph_target(y[seq])
        m = gbt_model(len(seq), max_iter, draw).fit(X[seq], t)
        return top_unmeasured(m.predict(X), mask, batch)
    return model_loop(X, y, budget, batch, [int(c) for c in perm[:warmup]], step)


def autotvm_weight(n):
    return 1.0 / 2 ** (n / 64.0)


def run_autotvm(X, y, base, budget, batch, draw, max_iter, eps=0.05):
    rng = np.random.default_rng(1000 + draw)
    b = standardized(base)
    first = top_unmeasured(b, np.zeros(len(y), dtype=bool), batch, rng, eps)

    def step(seq, mask):
        w = autotvm_weight(len(seq))
        t = bl.graph_target(y[seq])
        m = gbt_model(len(seq), max_iter, draw).fit(X[seq], t - w * b[seq])
        return top_unmeasured(w * b + m.predict(X), mask, batch, rng, eps)
    return model_loop(X, y, budget, batch, first, step)


def features(g, kind):
    """baselines.py's within-graph features of every config of the graph, only the columns that
    vary over them and one of each set of identical columns (a layout graph's nodes that share
    their choices repeat one column hundreds of times: a tree splits them alike, and the
    3,300 columns of a 1,000-config layout graph become 100-900, a fit 6x faster)."""
    X = bl.within_features(g, kind)[0]
    var = np.nonzero(X.min(0) != X.max(0))[0]
    if not len(var):
        return X[:, :1]
    X = X[:, var]
    _, first = np.unique(X.T, axis=0, return_index=True)
    return X[:, np.sort(first)]


def record(method, group, collection, name, draw, y, seq, **extra):
    y = np.asarray(y, dtype=np.float64)
    return dict(method=method, group=group, collection=collection, graph=name, draw=draw, configs=int(len(y)),
                best=float(y.min()), runtimes=[float(y[c]) for c in seq], **extra)


def cmd_strategies(a):
    loops = {}
    for line in open(a.loop):
        r = json.loads(line)
        loops[os.path.abspath(r["file"])] = r
    methods = a.methods.split(",")
    out = open(a.out, "a")
    for line in open(a.sources):
        group, collection, path, _, name = line.split()
        group = group.replace("_", " ")
        kind = bl.kind_of(collection)
        g = bl.load(path)
        y = bl.targets(g, kind)
        loop = loops.get(os.path.abspath(path))
        if loop is None:
            raise SystemExit(f"{path}: no tuning_loop line in {a.loop}")
        if loop["configs"] != len(y):
            raise SystemExit(f"{path}: tuning_loop saw {loop['configs']} configs, the file has {len(y)}")
        t0 = time.perf_counter()
        recs = [record("tpuperf", group, collection, name, 0, y, loop["loop"], seconds=loop["seconds"],
                       blends=[r["blend"] for r in loop["rounds"]], weight_run=[r["weight_run"] for r in loop["rounds"]]),
                record("trained", group, collection, name, 0, y, loop["trained_order"][:min(a.budget, len(y))])]
        X = features(g, kind) if ("gbt" in methods or "autotvm" in methods) else None
        timing = {}
        for d in range(a.draws):
            for m in methods:
                t1 = time.perf_counter()
                if m == "random":
                    seq = run_random(y, a.budget, d)
                elif m == "gbt":
                    seq = run_gbt(X, y, a.budget, a.batch, d, a.warmup, a.gbt_max_iter)
                elif m == "autotvm":
                    seq = run_autotvm(X, y, np.asarray(loop["trained_score"]), a.budget, a.batch, d, a.gbt_max_iter)
                else:
                    raise SystemExit(f"unknown method {m}")
                dt = time.perf_counter() - t1
                timing[m] = timing.get(m, 0) + dt
                recs.append(record(m, group, collection, name, d, y, seq, seconds=dt))
        for r in recs:
            out.write(json.dumps(r) + "\n")
        out.flush()
        print(f"{name} ({group}, {len(y)} configs): {time.perf_counter() - t0:.1f} s; " +
              ", ".join(f"{m} {s:.1f} s" for m, s in timing.items()), flush=True)


# ------------------------------------------------------------------------------ metric
def best_found(rec, n):
    """Best runtime among the first n measured (all of them when fewer) over the true best."""
    v = rec["runtimes"][:n]
    return min(v) / rec["best"]


def stats(values):
    v = [x for x in values if x is not None and x == x]
    if not v:
        return None
    q = np.percentile(v, [25, 75])
    return dict(n=len(v), mean=statistics.mean(v), sd=statistics.stdev(v) if len(v) > 1 else 0.0,
                min=min(v), max=max(v), q25=float(q[0]), q75=float(q[1]))


def aggregate(records, budgets):
    """{(group, n): {method: stats of best_found over the group's graphs x draws, "graphs":
    graphs, "open": graphs with more than n configs}}; group "overall" pools every graph."""
    out = {}
    for grp in sorted({r["group"] for r in records}) + ["overall"]:
        rs = [r for r in records if grp == "overall" or r["group"] == grp]
        for n in budgets:
            e = dict(graphs=len({(r["group"], r["graph"]) for r in rs}),
                     open=len({(r["group"], r["graph"]) for r in rs if r["configs"] > n}))
            for m, _ in METHODS:
                e[m] = stats([best_found(r, n) for r in rs if r["method"] == m])
                e[m + "_draws"] = len({r["draw"] for r in rs if r["method"] == m})
            out[(grp, n)] = e
    return out


# Means closer than this are level: half the tables' last digit (runtimes are measured to
# about 0.1%, so a smaller difference says nothing).
TIE = 5e-5


def verdict(e):
    """'wins' (tpuperf's mean below random's and the GBT loop's), 'level' (not above either,
    equal to one of them) or 'loses' (above one of them)."""
    t, r, g = e["tpuperf"]["mean"], e["random"]["mean"], e["gbt"]["mean"]
    if t < r - TIE and t < g - TIE:
        return "wins"
    if t <= r + TIE and t <= g + TIE:
        return "level"
    return "loses"


def blend_share(records, group, n, batch=8):
    """Over the tpuperf loop's adapted rounds before n measurements of the row's graphs: how
    many kept the run alone ("run"), how many dropped it (the ridge alone: weight 0 on the
    run's score), and how many there were."""
    kept = dropped = total = 0
    for r in records:
        if r["method"] != "tpuperf" or (group != "overall" and r["group"] != group):
            continue
        weights = r.get("weight_run", [1.0] * len(r.get("blends", [])))
        for i, (b, w) in enumerate(zip(r.get("blends", [])[1:], weights[1:]), start=1):   # round 0: the run as trained
            if batch * i >= n:
                break
            total += 1
            kept += b == "run"
            dropped += w == 0
    return kept, dropped, total


def dropped_graphs(records, group, n, batch=8):
    """The row's graphs on which some adapted round before n measurements gave the run's score
    weight 0: how many, and the tpuperf loop's and the run's top-n mean best-found slowdown on
    them and on the others; None when there are none."""
    rows = [r for r in records if group == "overall" or r["group"] == group]
    trained = {(r["group"], r["graph"]): best_found(r, n) for r in rows if r["method"] == "trained"}
    on, off = [], []
    for r in rows:
        if r["method"] != "tpuperf":
            continue
        w = r.get("weight_run", [])
        hit = any(x == 0 for i, x in enumerate(w[1:], start=1) if batch * i < n)
        (on if hit else off).append((best_found(r, n), trained[(r["group"], r["graph"])]))
    if not on:
        return None
    mean = lambda v, i: statistics.mean(x[i] for x in v) if v else float("nan")
    return dict(graphs=len(on), tpuperf=mean(on, 0), trained=mean(on, 1), tpuperf_else=mean(off, 0),
                trained_else=mean(off, 1))


def why_not(records, group, n, e):
    """Reasons read off the row by fixed rules where tpuperf is not below random and GBT."""
    t, r, g, tr = (e[m]["mean"] for m in ("tpuperf", "random", "gbt", "trained"))
    beaten = [f"{name} {e[m]['mean']:.4f}" for m, name in (("random", "random"), ("gbt", "GBT loop"))
              if e[m]["mean"] < t - TIE]
    level = [name for m, name in (("random", "random"), ("gbt", "GBT loop")) if abs(e[m]["mean"] - t) <= TIE]
    parts = [f"{group} at {n}: tpuperf loop {t:.4f}" + (f", below it {', '.join(beaten)}" if beaten else "") +
             (f", level with {' and '.join(level)}" if level else "")]
    if e["open"] == 0:
        parts.append("every graph of the row has at most this many configs, so every method has measured all of "
                     "them")
    elif t <= 1 + TIE and r <= 1 + TIE and g <= 1 + TIE:
        parts.append("random search, the GBT loop and the tpuperf loop all found the true best on every graph and draw")
    elif t <= 1 + TIE:
        parts.append("the tpuperf loop found the true best on every graph")
    if tr > r + TIE and t > r + TIE:
        parts.append(f"the run's own top-{n} ({tr:.4f}) is above random search's: at the top the run ranks this "
                     "row's graphs worse than chance, and the loop's first batch is the run's suggestion (as trained)")
    elif tr < t - TIE:
        parts.append(f"the loop is behind the run's own top-{n} ({tr:.4f}): its batches leave the run's order, "
                     "by suggest's exploration (the fold models' disagreement) and diversity penalty, and by the "
                     "blend's ridge where the blend chose it")
    kept, dropped, total = blend_share(records, group, n)
    if total:
        parts.append(f"of the {total} adapted rounds before {n} measurements the blend kept the run alone in {kept} "
                     f"and dropped it for the ridge alone in {dropped}")
    d = dropped_graphs(records, group, n)
    if d:
        parts.append(f"on the {d['graphs']} graphs where it dropped the run before {n} the loop's mean is "
                     f"{d['tpuperf']:.4f} against the run's own top-{n} {d['trained']:.4f}" +
                     (f" (on the others {d['tpuperf_else']:.4f} against {d['trained_else']:.4f})"
                      if d["tpuperf_else"] == d["tpuperf_else"] else ""))
    if n <= 64 and abs(g - r) <= TIE:
        parts.append("the GBT loop is random search up to its 64 warm-up measurements")
    return "; ".join(parts) + "."


# ------------------------------------------------------------------------------ report
def fmt(s, d=4):
    return "n/a" if s is None else f"{s['mean']:.{d}f} ± {s['sd']:.{d}f} ({s['min']:.{d}f}-{s['max']:.{d}f})"


def svg(agg, groups, budgets):
    """Best-found slowdown (log y) against measurements (log2 x), one panel per group, one line
    per method (the mean over graphs x draws) with its 25-75th percentile band shaded."""
    panels = ["overall"] + [g for g in groups if g != "overall"]
    cols = 4
    rows = math.ceil(len(panels) / cols)
    PW, PH, L, B, T = 250, 200, 46, 34, 24
    W, H = cols * PW + 10, rows * PH + 72
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="10">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    lx = 10
    for m, name in METHODS:
        out.append(f'<rect x="{lx}" y="9" width="14" height="4" fill="{COLOURS[m]}"/>'
                   f'<text x="{lx + 18}" y="14">{name}</text>')
        lx += 30 + 6 * len(name)
    out.append('<text x="10" y="30" fill="#555">y: the best-found slowdown, best measured runtime / the graph\'s '
               'true best (log scale, each panel its own range); x: configs measured (log2)</text>'
               '<text x="10" y="43" fill="#555">line: the mean over the panel\'s graphs x draws; band: their '
               '25th-75th percentile; the GBT loop is random search up to 64 measured (its warm-up)</text>')
    x0, x1 = math.log2(budgets[0]), math.log2(budgets[-1])
    for i, grp in enumerate(panels):
        ox, oy = (i % cols) * PW + 10, (i // cols) * PH + 52
        es = [agg[(grp, n)] for n in budgets]
        hi = max(max(e[m]["q75"], e[m]["mean"]) for e in es for m, _ in METHODS if e[m])
        ly1 = math.log(max(hi, 1.002)) * 1.05
        X = lambda n: ox + L + (PW - L - 10) * (math.log2(n) - x0) / (x1 - x0)
        Y = lambda v: oy + T + (PH - T - B) * (1 - math.log(max(v, 1.0)) / ly1)
        count = es[0]["graphs"]
        out.append(f'<text x="{ox + L}" y="{oy + 14}" font-weight="bold">{grp} ({count} graph{"s" if count > 1 else ""})'
                   '</text>')
        out.append(f'<line x1="{ox + L}" y1="{Y(1)}" x2="{ox + PW - 10}" y2="{Y(1)}" stroke="black"/>'
                   f'<line x1="{ox + L}" y1="{Y(1)}" x2="{ox + L}" y2="{oy + T}" stroke="black"/>')
        for n in budgets:
            out.append(f'<text x="{X(n):.1f}" y="{Y(1) + 12:.1f}" text-anchor="middle">{n}</text>')
        top = math.exp(ly1)
        ticks = [1]
        for t in sorted((t for t in (1.001, 1.002, 1.005, 1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2, 3, 5, 10, 20) if t <= top),
                        reverse=True):
            if Y(t) <= Y(1) - 12 and all(abs(Y(t) - Y(k)) >= 12 for k in ticks[1:]):
                ticks.append(t)
        ticks = [1] + ticks[1:6]
        for t in ticks:
            out.append(f'<text x="{ox + L - 4}" y="{Y(t) + 3:.1f}" text-anchor="end">{t:g}</text>'
                       f'<line x1="{ox + L}" y1="{Y(t):.1f}" x2="{ox + PW - 10}" y2="{Y(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{ox + (PW + L) / 2}" y="{oy + PH - 6}" text-anchor="middle" fill="#555">'
                   'configs measured</text>')
        for m, _ in METHODS:
            pts = [(n, e[m]) for n, e in zip(budgets, es) if e[m]]
            if not pts:
                continue
            band = [f"{X(n):.1f},{Y(s['q75']):.1f}" for n, s in pts] + \
                   [f"{X(n):.1f},{Y(s['q25']):.1f}" for n, s in reversed(pts)]
            out.append(f'<polygon points="{" ".join(band)}" fill="{COLOURS[m]}" fill-opacity="0.12" stroke="none"/>')
        # The tpuperf loop drawn last and widest, so that lines it shares stay visible under it.
        for m in sorted((m for m, _ in METHODS), key=lambda m: m == "tpuperf"):
            pts = [(n, e[m]) for n, e in zip(budgets, es) if e[m]]
            line = " ".join(f"{X(n):.1f},{Y(s['mean']):.1f}" for n, s in pts)
            dash = ' stroke-dasharray="5 3"' if m in ("random", "trained") else ""
            width = 2.5 if m == "tpuperf" else 1.6
            out.append(f'<polyline points="{line}" fill="none" stroke="{COLOURS[m]}" stroke-width="{width}"{dash}/>')
            out += [f'<circle cx="{X(n):.1f}" cy="{Y(s["mean"]):.1f}" r="2.5" fill="{COLOURS[m]}"/>' for n, s in pts]
    return "\n".join(out + ["</svg>"]) + "\n"


def cmd_report(a):
    records = [json.loads(line) for line in open(a.records)]
    meta = json.load(open(a.meta))
    budgets = meta["budgets"]
    agg = aggregate(records, budgets)
    groups = sorted({r["group"] for r in records}, key=lambda g: (g.startswith("real"), g != "tile:xla", g))
    rows = ["overall"] + groups
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(agg, groups, budgets))
    gsec = {}
    for r in records:
        if r["method"] in ("gbt", "autotvm"):
            gsec.setdefault(r["method"], []).append(r["seconds"])
    tsec = [r["seconds"] for r in records if r["method"] == "tpuperf"]
    L = [f"## {TITLE}", "",
         "Written by `tests/bench/bench_tuning_loop.sh` (issue #57 item 4): an autotuner's loop on graphs whose "
         f"runtimes are all known: measure {meta['batch']} configs (look their runtimes up), update, pick the next "
         f"{meta['batch']}, up to {budgets[-1]} measurements. The figure: the **best-found slowdown**, the best "
         "runtime among the first n configs measured over the graph's true best (1 = it has measured the best "
         "config), at n = " + ", ".join(str(b) for b in budgets) + " (a graph of fewer configs counts all of them, "
         "i.e. 1). Methods:", "",
         "- random search: a seeded permutation of the graph's configs, measured in its order.",
         "- the run's top-B: the run as trained (`Ranker::rank`) measuring its own first n configs.",
         f"- tpuperf loop (`tests/bench/tuning_loop.cpp`, the ranker library in process): round 0 `Ranker::suggest` "
         f"{meta['batch']} with the run as trained, then each round `Ranker::adapted(graph, measured, runtimes, "
         "{seed 0})` (the default, AdaptMethod::Blend) and `suggest` of the adapted ranker excluding the measured "
         "configs (SuggestOptions' defaults: exploration 1, diversity 1).",
         f"- GBT loop (Ansor's way): random search's first {meta['warmup']} configs (Ansor's XGBModel answers "
         "random predictions below its num_warmup_sample, 100 by default; we chose "
         f"{meta['warmup']} so that most rounds to {budgets[-1]} are model rounds), then each round a gradient-boosted "
         f"tree model refit on every measured config and the {meta['batch']} unmeasured configs it predicts fastest "
         "(Ansor's eps-greedy random share of a batch, int(0.05 x 8), is 0).",
         "- AutoTVM transfer: the run's ensemble score (standardized over the graph) as the base margin of a GBT "
         "refit each round on the measured configs, weighted 1 / 2^(n / 64) after n measurements (AutoTVM's "
         "discount); the GBT fits the residual of the standardized log runtime from that margin, and a round "
         "measures the best-predicted unmeasured configs, each pick a random one with probability 0.05 (AutoTVM's "
         "eps_greedy); round 0 is the run's own order.",
         f"- The GBTs: `baselines.py`'s within-graph features (tile: `tile_features`; layout: "
         "`LayoutGraph.features` and the per-node layout values, `within_features`), target the measured configs' standardized log runtime, sklearn "
         f"HistGradientBoostingRegressor as `make_models` builds it, at most {meta['gbt_max_iter']} boosting rounds, "
         "random_state = the draw; the feature columns are those that vary over the graph's configs, one of each set "
         "of identical columns.", "",
         f"Run ended {meta['when']} on {meta['machine']} ({meta['isa']}), load {meta['load'][0]:.2f} → "
         f"{meta['load'][1]:.2f} (other engineers' jobs share the 2 cores), {meta['seconds'] / 60:.1f} min in all "
         f"({meta['run_note']}); every heavy command under `nice -n {meta['nice']}`, one thread each. The tpuperf "
         f"loop took {statistics.mean(tsec):.1f} s a graph on average ({max(tsec):.1f} s at most, the layout graphs' "
         "rounds each score every config with both fold models); a whole GBT loop "
         f"{statistics.mean(gsec.get('gbt', [0])):.1f} s and an AutoTVM loop {statistics.mean(gsec.get('autotvm', [0])):.1f} s a "
         "(graph, draw) on average. This section was written "
         f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} from that run's records.", "",
         f"- The run: {meta['run_settings']}.",
         f"- Graphs: {meta['graphs_note']}",
         f"- Draws: random search, the GBT loop and AutoTVM {meta['draws']} draws per graph (seeds 0..{meta['draws'] - 1}; "
         "the GBT loop's warm-up is random search's first configs of the same draw); the tpuperf loop and the run's "
         "top-B are deterministic, one sequence per graph.",
         "- Spread: mean ± sd (min-max) over the row's graphs x draws, so it holds the graph-to-graph differences "
         "as well as the draws'. Overall pools every graph (the 30-odd tile graphs weigh most).", ""]
    if meta.get("skipped"):
        L += [f"Left out (at most {meta['min_configs']} distinct configs: the first batch measures all of them): " +
              "; ".join(meta["skipped"]) + ".", ""]
    L += [f"![best-found slowdown against configs measured](tuning_loop.svg)", "",
          "### Best-found slowdown (mean ± sd (min-max); 1 = the true best measured)", "",
          "| group | measured | graphs (with more configs) | " + " | ".join(n for _, n in METHODS) +
          " | tpuperf vs random, GBT |", "|---|---|---|" + "---|" * (len(METHODS) + 1)]
    not_won = []
    for grp in rows:
        for n in budgets:
            e = agg[(grp, n)]
            v = verdict(e)
            if v != "wins":
                not_won.append((grp, n, e, v))
            diff = f"{e['tpuperf']['mean'] - e['random']['mean']:+.4f}, {e['tpuperf']['mean'] - e['gbt']['mean']:+.4f}"
            L.append(f"| {'**overall**' if grp == 'overall' else grp} | {n} | {e['graphs']} ({e['open']}) | " +
                     " | ".join(fmt(e[m]) for m, _ in METHODS) + f" | {'**' + diff + '**' if v == 'wins' else diff} |")
    L += ["", "Last column: the tpuperf loop's mean less random search's and less the GBT loop's (bold: below both). "
          "Graphs (with more configs): the row's graphs, and how many have more configs than the row's budget "
          "(the others are measured whole by then, slowdown 1 for every method).", "",
          "### Where the tpuperf loop is not below random search and the GBT loop", "",
          f"Level: the means within {TIE} of each other (half the tables' last digit; runtimes are measured to "
          "about 0.1%).", ""]
    if not_won:
        lost = [x for x in not_won if x[3] == "loses"]
        L += [f"{len(not_won)} of {len(rows) * len(budgets)} rows ({len(lost)} above one of them, "
              f"{len(not_won) - len(lost)} level). Read off the figures by fixed rules; the analysis is a dated note "
              "of docs/experiments/, not written by the bench:", ""]
        L += ["- " + ("[level] " if v == "level" else "") + why_not(records, g, n, e) for g, n, e, v in not_won]
    else:
        L.append(f"None: in every row ({len(rows) * len(budgets)}) the tpuperf loop's mean best-found slowdown is below "
                 "both random search's and the GBT loop's.")
    ov = [agg[("overall", n)] for n in budgets]
    L += ["", "Overall, tpuperf loop / random / GBT loop / AutoTVM / run's top-B at " +
          ", ".join(str(n) for n in budgets) + ": " + "; ".join(
              f"{e['tpuperf']['mean']:.3f} / {e['random']['mean']:.3f} / {e['gbt']['mean']:.3f} / "
              f"{e['autotvm']['mean']:.3f} / {e['trained']['mean']:.3f}" for e in ov) + ".", "",
          f"Command: `bash tests/bench/bench_tuning_loop.sh [BIN_DIR]` (its header says what it runs; the graphs, "
          f"sequences and logs stay in `$TPUPERF_BENCH_DIR/tuning-loop`).", ""]
    text = "\n".join(L)
    if a.results:
        replace_section(a.results, TITLE, text.rstrip("\n") + "\n")
    print(text)


# ---------------------------------------------------------------------------- self-test
def self_test():
    failures = []

    def check(name, got, want):
        ok = (abs(got - want) < 1e-12) if isinstance(want, float) else got == want
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {got!r} (want {want!r})")
        if not ok:
            failures.append(name)

    y = [4.0, 2.0, 8.0, 1.0, 3.0]
    r = record("random", "tile:xla", "tile:xla", "g", 0, y, [2, 0, 4, 3, 1])
    check("best-found after 1", best_found(r, 1), 8.0)
    check("best-found after 2", best_found(r, 2), 4.0)
    check("best-found after 3", best_found(r, 3), 3.0)
    check("best-found after 4 (the best)", best_found(r, 4), 1.0)
    check("best-found beyond the sequence", best_found(r, 64), 1.0)
    check("AutoTVM weight at 0", autotvm_weight(0), 1.0)
    check("AutoTVM weight at 64", autotvm_weight(64), 0.5)
    check("AutoTVM weight at 128", autotvm_weight(128), 0.25)
    mask = np.array([False, True, False, False, False])
    check("top unmeasured", top_unmeasured(np.array([0.5, -1.0, 0.1, 0.3, 0.2]), mask, 3), [2, 4, 3])
    check("top unmeasured ties: lower index", top_unmeasured(np.zeros(5), mask, 2), [0, 2])
    rng = np.random.default_rng(0)
    check("top unmeasured eps=1 stays unmeasured and distinct",
          len(set(top_unmeasured(np.zeros(5), mask, 4, rng, 1.0)) - {1}), 4)
    check("random search: a permutation", sorted(run_random(np.arange(10.0), 64, 3)), list(range(10)))
    check("random search capped at the budget", len(run_random(np.arange(10.0), 4, 3)), 4)
    # A model loop on 20 configs: first 4, then batches of 3 of the lowest "prediction" (index).
    seq = model_loop(None, np.arange(20.0), 12, 3, [19, 18, 17, 16],
                     lambda s, m: top_unmeasured(np.arange(20.0), m, 3))
    check("model loop order", seq, [19, 18, 17, 16, 0, 1, 2, 3, 4, 5, 6, 7])
    check("model loop stops at the graph", len(model_loop(None, np.arange(6.0), 64, 4, [0, 1],
                                                          lambda s, m: top_unmeasured(np.arange(6.0), m, 4))), 6)
    # The GBT loop's warm-up is random search's prefix.
    Xs = np.random.default_rng(1).normal(size=(40, 3))
    ys = np.exp(Xs[:, 0])
    # features(): constant columns dropped, identical ones kept once, in column order.
    dup = np.array([[1.0, 1.0, 5.0, 2.0], [2.0, 2.0, 5.0, 1.0], [3.0, 3.0, 5.0, 0.0]])
    within, bl.within_features = bl.within_features, lambda g, kind: (dup, None)
    try:
        check("features: constant dropped, identical once", features({}, "tile").tolist(),
              [[1.0, 2.0], [2.0, 1.0], [3.0, 0.0]])
    finally:
        bl.within_features = within
    check("GBT warm-up = random's prefix", run_gbt(Xs, ys, 24, 8, 2, 16, 10)[:16], run_random(ys, 24, 2)[:16])
    # Aggregation: two graphs; random over 2 draws, tpuperf one sequence each.
    recs = [record("random", "tile:xla", "tile:xla", "g1", 0, y, [2, 0, 4, 3, 1]),
            record("random", "tile:xla", "tile:xla", "g1", 1, y, [3, 0, 1, 2, 4]),
            record("tpuperf", "tile:xla", "tile:xla", "g1", 0, y, [4, 3, 0, 1, 2], blends=["trained", "run"]),
            record("random", "layout:xla:random", "layout:xla:random", "g2", 0, [1.0, 2.0], [1, 0]),
            record("tpuperf", "layout:xla:random", "layout:xla:random", "g2", 0, [1.0, 2.0], [0, 1])]
    for m in ("gbt", "autotvm", "trained"):
        recs += [dict(x, method=m) for x in recs if x["method"] == "random" and x["draw"] == 0]
    agg = aggregate(recs, [1, 2])
    e = agg[("tile:xla", 1)]
    check("mean over draws", e["random"]["mean"], (8.0 + 1.0) / 2)
    check("sd over draws (n-1)", e["random"]["sd"], float(np.std([8.0, 1.0], ddof=1)))
    check("min-max", (e["random"]["min"], e["random"]["max"]), (1.0, 8.0))
    check("graphs / open", (e["graphs"], e["open"]), (1, 1))
    o = agg[("overall", 1)]
    check("overall pools graphs x draws", o["random"]["n"], 3)
    check("overall mean", o["random"]["mean"], (8.0 + 1.0 + 2.0) / 3)
    check("overall open graphs at 2", agg[("overall", 2)]["open"], 1)
    # tpuperf 3 at 1 on g1, random 4.5: wins against random; GBT (= random's draw 0) 8.
    check("verdict wins", verdict(e), "wins")
    check("verdict loses", verdict(dict(tpuperf=dict(mean=1.2), random=dict(mean=1.1), gbt=dict(mean=1.5))), "loses")
    check("verdict level", verdict(dict(tpuperf=dict(mean=1.0), random=dict(mean=1.0), gbt=dict(mean=1.5))), "level")
    check("blend share before 16", blend_share(recs, "tile:xla", 16), (1, 0, 1))
    recs[2]["weight_run"] = [1.0, 0.0]
    recs[2]["blends"] = ["trained", "ridge alpha=1"]
    check("blend share: the run dropped", blend_share(recs, "tile:xla", 16), (0, 1, 1))
    d = dropped_graphs(recs, "tile:xla", 16)
    check("dropped graphs: the loop and the run's top-16 there", (d["graphs"], d["tpuperf"], d["trained"]), (1, 1.0, 1.0))
    check("dropped graphs: none before 8", dropped_graphs(recs, "tile:xla", 8), None)
    w = why_not(recs, "layout:xla:random", 2, agg[("layout:xla:random", 2)])
    check("why_not: measured whole", "every graph of the row has at most" in w, True)
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
    q.add_argument("--real", action="append", default=[], help="COLLECTION=FILE,NAME (a featurized real graph)")
    q.add_argument("--out", required=True)
    q.add_argument("--max-configs", type=int, default=1000)
    q.add_argument("--min-configs", type=int, default=8, help="graphs with at most this many distinct configs are left out")
    q.add_argument("--skipped", default="", help="where to list the graphs left out")
    q = sub.add_parser("strategies")
    q.add_argument("--sources", required=True)
    q.add_argument("--loop", required=True, help="tuning_loop's JSON lines")
    q.add_argument("--draws", type=int, default=5)
    q.add_argument("--budget", type=int, default=256)
    q.add_argument("--batch", type=int, default=8)
    q.add_argument("--warmup", type=int, default=64)
    q.add_argument("--gbt-max-iter", type=int, default=50)
    q.add_argument("--methods", default="random,gbt,autotvm")
    q.add_argument("--out", required=True, help="records (JSON lines) appended to this file")
    q = sub.add_parser("report")
    q.add_argument("--records", required=True)
    q.add_argument("--meta", required=True)
    q.add_argument("--results", default="")
    q.add_argument("--svg", default="")
    a = p.parse_args()
    {"sources": cmd_sources, "strategies": cmd_strategies, "report": cmd_report}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
