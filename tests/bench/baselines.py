#!/usr/bin/env python3
"""Flat baselines for tpuperf (issue #20 step 1): ridge and gradient-boosted trees
(sklearn) on fixed-size features built with numpy straight from release-format npz files.
No tpuperf code is used: features, splits and metrics are computed here.

Subcommands:
  make-within   split one graph's distinct configs into a train part and a held-out part,
                written as a release-style tree for tpuperf (train/<stem>.npz with runtimes,
                an empty valid/, test/<stem>.npz with zeroed runtimes as in the release) and
                the held-out runtimes under truth/ (as tpuperf-synth writes them); with
                --noise-free, the held-out configs' noise-free runtimes under noise_free/
  within        ridge and GBT trained on such a tree's train file, ranking its test file;
                where the tree has noise_free/, also the noise-free order (the cost model's
                own order, scored against the measured runtimes) and each model scored
                against the noise-free runtimes
  across        ridge and GBT trained on the train split of a tree (hyper-parameters
                chosen on valid), ranking its test graphs, scored against truth/ (and with
                --noise-free against the noise-free runtimes, with the noise-free order)
  score         score a submission.csv against a truth tree with this file's metrics
  --self-test   the metric code against scipy.stats.kendalltau and hand-computed values

Metrics (as tpugraphs.md and tpuperf-score): tile, per graph 2 - min(y[top5]) / min(y),
y = runtime / normalizer; layout, per graph Kendall's tau-b between the predicted order
(positions of a best-first permutation) and the runtimes; a collection is the mean over its
graphs. Everything prints JSON on stdout when --out is not given."""
import argparse
import csv
import glob
import json
import os
import sys
import time

import numpy as np

OPC_CONV, OPC_DOT, OPC_RESHAPE = 26, 34, 75
NUM_OPCODES = 121
COLLECTIONS = ["tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random", "layout:nlp:default"]


# ------------------------------------------------------------------------------ metrics
def kendall_tau_b(a, b):
    """Kendall's tau-b of two sequences with ties (what scipy.stats.kendalltau returns by
    default), O(n^2) in blocks of rows; NaN when n < 2 or either input is constant."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    n = len(a)
    if n != len(b):
        raise ValueError("kendall_tau_b: sizes differ")
    if n < 2 or np.isnan(a).any() or np.isnan(b).any():
        return float("nan")
    conc = disc = ties_a = ties_b = 0
    step = max(1, 2_000_000 // n)
    for s in range(0, n, step):
        e = min(n, s + step)
        da = np.sign(a[s:e, None] - a[None, :])
        db = np.sign(b[s:e, None] - b[None, :])
        # Only pairs i < j.
        mask = np.arange(s, e)[:, None] < np.arange(n)[None, :]
        p = (da * db)[mask]
        conc += int((p > 0).sum())
        disc += int((p < 0).sum())
        ties_a += int(((da == 0) & (db != 0))[mask].sum())
        ties_b += int(((db == 0) & (da != 0))[mask].sum())
    denom = np.sqrt(float(conc + disc + ties_a) * float(conc + disc + ties_b))
    return float("nan") if denom == 0 else (conc - disc) / denom


def positions(order, n):
    """A best-first permutation as scores: the position of each config."""
    pos = np.empty(n, dtype=np.float64)
    pos[np.asarray(order)] = np.arange(len(order))
    return pos


def order_from_scores(scores):
    """Best first (lowest predicted cost first); ties keep index order."""
    return np.argsort(np.asarray(scores, dtype=np.float64), kind="stable")


def layout_score(order, runtimes):
    return kendall_tau_b(positions(order, len(runtimes)), runtimes)


def tile_score(order, y, k=5):
    y = np.asarray(y, dtype=np.float64)
    top = np.asarray(order)[:k]
    return float(2.0 - y[top].min() / y.min())


def slowdown(order, y, k):
    """Top-k slowdown (as tpuperf-score): the best runtime among the k first configs of the
    order over the best runtime of all; 1 = the best config is among them."""
    y = np.asarray(y, dtype=np.float64)
    return float(y[np.asarray(order)[:k]].min() / y.min())


def slowdowns(scores, y):
    """{top1, top5, top10} slowdowns of the order that ranks by `scores` (lowest first)."""
    order = order_from_scores(scores)
    return {f"top{k}": slowdown(order, y, k) for k in (1, 5, 10)}


def tile_order(scores, keep_default):
    """Best first; with keep_default config 0 takes the 5th place when the top 5 leave it
    out (tpuperf's output.tile_keep_default rule)."""
    order = list(order_from_scores(scores))
    if keep_default and 0 not in order[:5] and len(order) > 5:
        order.remove(0)
        order.insert(4, 0)
    return np.asarray(order)


def order_score(scores, y, kind, keep_default):
    """Score of the order that ranks by `scores` (lowest first) against runtimes y."""
    return (tile_score(tile_order(scores, keep_default), y) if kind == "tile" else
            layout_score(order_from_scores(scores), y))


def self_test():
    from scipy.stats import kendalltau
    failures = []

    def check(name, got, want, tol=1e-12):
        ok = (np.isnan(want) and np.isnan(got)) or abs(got - want) <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {got!r} (want {want!r})")
        if not ok:
            failures.append(name)

    # Hand-computed: 4 items, one discordant pair of 6 -> (5 - 1) / 6.
    check("tau hand 4 items", kendall_tau_b([1, 2, 3, 4], [1, 2, 4, 3]), 4 / 6)
    check("tau perfect", kendall_tau_b([1, 2, 3], [10, 20, 30]), 1.0)
    check("tau reversed", kendall_tau_b([1, 2, 3], [30, 20, 10]), -1.0)
    # Ties by hand: a = [1, 1, 2], b = [1, 2, 3]: pairs (0,1) tie in a only, (0,2) and (1,2)
    # concordant: (2 - 0) / sqrt((2 + 0 + 0) * (2 + 0 + 1)) = 2 / sqrt(6).
    check("tau ties by hand", kendall_tau_b([1, 1, 2], [1, 2, 3]), 2 / np.sqrt(6))
    check("tau constant -> nan", kendall_tau_b([1, 1, 1], [1, 2, 3]), float("nan"))
    rng = np.random.default_rng(7)
    for t in range(6):
        n = int(rng.integers(2, 3000))
        a = rng.integers(0, 5 + 10 * t, n).astype(float)   # many ties
        b = a * (t % 3) + rng.normal(size=n) * 3
        if t == 5:
            b = np.round(b)
        check(f"tau vs scipy n={n} t={t}", kendall_tau_b(a, b), float(kendalltau(a, b)[0]), 1e-9)
    # Layout score of a permutation: order [2, 0, 1] over runtimes [5, 9, 1] ranks config 2
    # first, then 0, then 1: positions [1, 2, 0] vs runtimes -> perfectly concordant.
    check("layout score of a permutation", layout_score([2, 0, 1], [5, 9, 1]), 1.0)
    check("layout score reversed", layout_score([1, 0, 2], [5, 9, 1]), -1.0)
    # Tile: y = [4, 2, 8, 1, 3, 6, 5]; the best is 1 (index 3). Top 5 [0, 1, 2, 4, 5] ->
    # best 2 -> 2 - 2 / 1 = 0; with index 3 among them -> 1.
    y = [4, 2, 8, 1, 3, 6, 5]
    check("tile hand slowdown", tile_score([0, 1, 2, 4, 5, 3, 6], y), 0.0)
    check("tile hand best in top 5", tile_score([6, 5, 3, 0, 1, 2, 4], y), 1.0)
    check("tile hand 1.5x", tile_score([2, 5, 6, 0, 4, 1, 3], [v * 2 for v in y]), 2 - 3 / 1)
    # keep_default puts config 0 at the 5th place when the top 5 leave it out.
    o = tile_order([9, 1, 2, 3, 4, 5, 0], keep_default=True)
    check("tile keep_default 5th place", float(o[4]), 0.0)
    check("tile keep_default keeps the first four", float(list(o[:4]) == [6, 1, 2, 3]), 1.0)
    check("tile order lowest first", float(order_from_scores([3, 1, 2])[0]), 1.0)
    # Slowdowns of the order [0, 1, 2, 4, 5, 3, 6] over y above (best 1 at index 3, 6th):
    # top-1 4 / 1, top-5 min(4, 2, 8, 3, 6) = 2, top-10 holds index 3.
    o = [0, 1, 2, 4, 5, 3, 6]
    check("slowdown top-1 by hand", slowdown(o, y, 1), 4.0)
    check("slowdown top-5 by hand", slowdown(o, y, 5), 2.0)
    check("slowdown top-10 (k > n) by hand", slowdown(o, y, 10), 1.0)
    check("slowdowns of scores rank lowest first",
          slowdowns([7, 6, 5, 4, 3, 2, 1], y)["top1"], 5 / 1)
    if failures:
        print(f"self-test FAILED: {len(failures)} check(s): {', '.join(failures)}")
        return 1
    print("self-test passed")
    return 0


# ----------------------------------------------------------------------------- reading
def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def coll_dir(collection):
    return collection.replace(":", "/")


def kind_of(collection):
    return "tile" if collection.startswith("tile") else "layout"


def distinct_configs(g, kind):
    """Indices of the distinct config rows, each the copy with the least runtime (what
    tpuperf-preprocess's dedup=min keeps), in first-occurrence order."""
    if kind == "tile":
        rows = g["config_feat"].reshape(len(g["config_feat"]), -1)
        y = g["config_runtime"] / np.maximum(g["config_runtime_normalizers"], 1)
    else:
        ncf = g["node_config_feat"]
        rows = ncf.reshape(ncf.shape[0], -1)
        y = g["config_runtime"].astype(np.float64)
    _, inv = np.unique(np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))),
                       return_inverse=True)
    inv = inv.ravel()
    best = {}
    for i in range(len(inv)):
        k = inv[i]
        if k not in best or y[i] < y[best[k]]:
            best[k] = i
    return np.array(sorted(best.values()), dtype=np.int64)


def subset(g, idx, kind, zero_runtimes=False):
    out = dict(g)
    if kind == "tile":
        out["config_feat"] = g["config_feat"][idx]
        out["config_runtime"] = g["config_runtime"][idx]
        out["config_runtime_normalizers"] = g["config_runtime_normalizers"][idx]
        if zero_runtimes:
            out["config_runtime"] = np.zeros_like(out["config_runtime"])
            out["config_runtime_normalizers"] = np.ones_like(out["config_runtime_normalizers"])
    else:
        out["node_config_feat"] = g["node_config_feat"][idx]
        out["config_runtime"] = g["config_runtime"][idx]
        if zero_runtimes:
            out["config_runtime"] = np.zeros_like(out["config_runtime"])
    return out


def targets(g, kind):
    if kind == "tile":
        return g["config_runtime"] / np.maximum(g["config_runtime_normalizers"], 1).astype(np.float64)
    return g["config_runtime"].astype(np.float64)


# ------------------------------------------------------------------------------ features
def graph_features(g):
    """Per-graph size statistics and the opcode histogram (the same for every config)."""
    op = g["node_opcode"].astype(np.int64)
    nf = g["node_feat"]
    hist = np.bincount(np.clip(op, 0, NUM_OPCODES - 1), minlength=NUM_OPCODES).astype(np.float64)
    n, m = len(op), len(g["edge_index"])
    size = np.log1p(np.maximum(nf[:, 28], 0))
    f = [np.log1p(n), np.log1p(m), m / max(n, 1), size.sum(), size.max(initial=0), size.mean() if n else 0]
    names = ["log_nodes", "log_edges", "edges_per_node", "sum_log_size", "max_log_size", "mean_log_size"]
    f += list(np.log1p(hist))
    names += [f"log_count_opcode_{i}" for i in range(NUM_OPCODES)]
    return np.array(f, dtype=np.float64), names


def pad_up(x, m):
    return np.ceil(x / m) * m


def tile_features(g, cfg=None):
    """(configs, features): the 24 config features and their logs, what a tiling means for
    the kernel's root output (grid steps per dim = ceil(dim / tile), their product, the tile
    padded to (8 x 128) on the root's two minor dims and its waste) and the graph features."""
    cf = (g["config_feat"] if cfg is None else cfg).astype(np.float64)
    c = len(cf)
    nf = g["node_feat"]
    roots = np.nonzero(nf[:, 0] > 0)[0]
    root = roots[-1] if len(roots) else len(nf) - 1
    dims = nf[root, 21:27].astype(np.float64)
    m2m = nf[root, 134:140].astype(np.int64)
    gf, gnames = graph_features(g)
    kb = cf[:, 0:6]     # kernel_bounds[0..5]; 6 sum, 7 product
    ob = cf[:, 8:14]    # output_bounds[0..5]; 14 sum, 15 product
    valid = (ob > 0) & (dims[None, :] > 0)
    steps = np.where(valid, np.ceil(dims[None, :] / np.where(ob > 0, ob, 1)), 1.0)
    grid = steps.prod(1)
    tile = np.where(ob > 0, ob, 1.0)
    padded = tile.copy()
    rank = int((dims > 0).sum())
    minor = m2m[0] if rank >= 1 and 0 <= m2m[0] < 6 else -1
    second = m2m[1] if rank >= 2 and 0 <= m2m[1] < 6 else -1
    if minor >= 0:
        padded[:, minor] = pad_up(tile[:, minor], 128)
    if second >= 0:
        padded[:, second] = pad_up(tile[:, second], 8)
    tile_elems = np.where(valid, tile, 1).prod(1)
    padded_elems = np.where(valid, padded, 1).prod(1)
    ktile = np.where(kb > 0, kb, 1).prod(1)
    extra = np.stack([np.log(grid), np.log(tile_elems), np.log(padded_elems), padded_elems / tile_elems,
                      np.log(grid * padded_elems), np.log(ktile), np.log(grid) + np.log(ktile),
                      ob[:, minor] if minor >= 0 else np.zeros(c), ob[:, second] if second >= 0 else np.zeros(c)], 1)
    X = np.hstack([cf, np.log1p(np.maximum(cf, 0)), extra, np.repeat(gf[None, :], c, 0),
                   np.repeat(np.concatenate([np.log1p(np.maximum(dims, 0)), [rank]])[None, :], c, 0)])
    names = ([f"config_feat_{i}" for i in range(24)] + [f"log_config_feat_{i}" for i in range(24)] +
             ["log_grid_steps", "log_tile_elems", "log_padded_tile_elems", "tile_pad_waste", "log_grid_x_padded_tile",
              "log_kernel_tile_elems", "log_grid_x_kernel_tile", "tile_minor_extent", "tile_second_minor_extent"] +
             gnames + [f"log_root_dim_{i}" for i in range(6)] + ["root_rank"])
    return X, names


class LayoutGraph:
    """What the layout features need of one graph, computed once: per configurable node its
    opcode class, tensor dims of the output and of its first two operands, and the links
    between configurable nodes (a producer reached from a consumer through at most two
    non-configurable nodes)."""

    def __init__(self, g):
        self.g = g
        nf = g["node_feat"]
        op = g["node_opcode"].astype(np.int64)
        ids = g["node_config_ids"].astype(np.int64)
        self.ids = ids
        self.nc = len(ids)
        cls = np.full(self.nc, 3)
        cls[op[ids] == OPC_CONV] = 0
        cls[op[ids] == OPC_DOT] = 1
        cls[op[ids] == OPC_RESHAPE] = 2
        self.cls = cls
        e = g["edge_index"].astype(np.int64)
        operands = {}
        for u, v in e:
            operands.setdefault(int(u), []).append(int(v))
        self.dims = np.zeros((self.nc, 3, 6))
        for i, nid in enumerate(ids):
            self.dims[i, 0] = nf[nid, 21:27]
            ops = operands.get(int(nid), [])
            for s, v in enumerate(ops[:2]):
                self.dims[i, 1 + s] = nf[v, 21:27]
        self.size = np.log1p(np.maximum(nf[ids, 28], 0))
        pos = {int(n): i for i, n in enumerate(ids)}
        links = set()
        for i, nid in enumerate(ids):
            frontier = [(v, s) for s, v in enumerate(operands.get(int(nid), [])[:2])]
            for hop in range(3):
                nxt = []
                for v, s in frontier:
                    if v in pos:
                        links.add((pos[v], i, s))
                    elif hop < 2:
                        nxt += [(w, s) for w in operands.get(v, [])[:1]]
                frontier = nxt
        self.links = np.array(sorted(links), dtype=np.int64).reshape(-1, 3)

    def features(self, ncf):
        """(configs, features) for node_config_feat rows ncf (c, nc, 18)."""
        ncf = ncf.astype(np.int64)
        c = ncf.shape[0]
        slots = ncf.reshape(c, self.nc, 3, 6)
        feats, names = [], []
        is_default = (slots == -1).all(3)                                   # (c, nc, 3)
        present = (self.dims > 0).any(2)[None, :, :]                         # (1, nc, 3)
        rank = (self.dims > 0).sum(2)                                       # (nc, 3)
        # Row-major: minor_to_major = rank-1, ..., 0.
        rowmajor = np.full((self.nc, 3, 6), -1)
        for i in range(self.nc):
            for s in range(3):
                r = rank[i, s]
                rowmajor[i, s, :r] = np.arange(r - 1, -1, -1)
        is_rowmajor = (slots == rowmajor[None]).all(3) & ~is_default
        # Padding factor of the chosen layout: minor dim padded to 128, second-minor to 8.
        minor = slots[..., 0]
        second = slots[..., 1]
        d = np.broadcast_to(self.dims[None], (c, self.nc, 3, 6))
        dm = np.where(minor >= 0, np.take_along_axis(d, np.clip(minor, 0, 5)[..., None], 3)[..., 0], 0)
        ds = np.where(second >= 0, np.take_along_axis(d, np.clip(second, 0, 5)[..., None], 3)[..., 0], 0)
        padf = np.where(dm > 0, pad_up(np.maximum(dm, 1), 128) / np.maximum(dm, 1), 1.0) * \
            np.where(ds > 0, pad_up(np.maximum(ds, 1), 8) / np.maximum(ds, 1), 1.0)
        padf = np.where(is_default | ~present, 1.0, padf)
        w = np.exp(self.size)[None, :, None]                                # node size weight
        for k, kname in enumerate(["conv", "dot", "reshape", "other"]):
            sel = (self.cls == k)[None, :, None]
            for s, sname in enumerate(["out", "in", "kernel"]):
                ss = sel[:, :, 0] & present[:, :, s]
                tag = f"{kname}_{sname}"
                feats += [(is_default[:, :, s] & ss).sum(1), (is_rowmajor[:, :, s] & ss).sum(1),
                          np.log((np.where(ss, padf[:, :, s], 1.0) * np.where(ss, w[:, :, 0], 0)).sum(1) + 1),
                          np.where(ss, np.log(padf[:, :, s]), 0).sum(1)]
                names += [f"n_default_{tag}", f"n_rowmajor_{tag}", f"log_padded_size_{tag}", f"sum_log_pad_{tag}"]
                # Counts of (opcode class, slot, position 0/1, layout value).
                for p in range(2):
                    v = slots[:, :, s, p]
                    for val in range(-1, 6):
                        feats.append(((v == val) & ss).sum(1))
                        names.append(f"n_{tag}_pos{p}_val{val}")
        # Producer/consumer pairs whose layouts disagree (the copies they cost).
        if len(self.links):
            prod = slots[:, self.links[:, 0], 0, :]
            cons = slots[:, self.links[:, 1], 1, :]
            cons2 = slots[:, self.links[:, 1], 2, :]
            cons = np.where((self.links[:, 2] == 1)[None, :, None], cons2, cons)
            mism = (prod != cons).any(2)
            both_default = (prod == -1).all(2) & (cons == -1).all(2)
            mism &= ~both_default
            lw = np.exp(self.size[self.links[:, 0]])[None, :]
            feats += [mism.sum(1), np.log1p((mism * lw).sum(1))]
        else:
            feats += [np.zeros(c), np.zeros(c)]
        names += ["n_link_mismatch", "log_link_mismatch_size"]
        feats += [is_default.all(2).sum(1), (is_rowmajor & present).sum((1, 2)),
                  np.log((padf * np.where(present, w, 0)).sum((1, 2)) + 1)]
        names += ["n_default_nodes", "n_rowmajor_slots", "log_padded_size_all"]
        X = np.stack([np.asarray(f, dtype=np.float64) for f in feats], 1)
        gf, gnames = graph_features(self.g)
        X = np.hstack([X, np.repeat(gf[None], c, 0),
                       np.full((c, 1), np.log1p(self.nc))])
        return X, names + gnames + ["log_configurable_nodes"]


# -------------------------------------------------------------------------------- models
def make_models(n_rows, budget_s, gbt_max_iter=500):
    """The two flat models. The GBT's rounds are bounded by early stopping on an internal
    10% split (and max_iter); budget_s is stated, not enforced by sklearn: training times
    are reported next to it."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return {
        "ridge": lambda alpha=1.0: make_pipeline(StandardScaler(), Ridge(alpha=alpha)),
        "gbt": lambda lr=0.1, leaves=31: HistGradientBoostingRegressor(
            max_iter=gbt_max_iter, learning_rate=lr, max_leaf_nodes=leaves, min_samples_leaf=min(20, max(2, n_rows // 20)),
            l2_regularization=1e-3, early_stopping=n_rows >= 200, validation_fraction=0.1,
            n_iter_no_change=20, random_state=0),
    }


def graph_target(y):
    """Per-graph normalized target: log runtime, centred and scaled within the graph."""
    ly = np.log(np.maximum(y, 1e-30))
    sd = ly.std()
    return (ly - ly.mean()) / (sd if sd > 0 else 1.0)


def importances(model, X, t, names, top=12, seed=0, units=None, rows=3000):
    """Permutation importance: the drop in R^2 of the (per-graph normalized) target when one
    unit (a feature column, or a list of columns shuffled together) is shuffled, mean of 2
    shuffles, on up to `rows` rows; the top units. units: {name: [columns]} (default: every
    column that varies, alone)."""
    from sklearn.metrics import r2_score
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(X), rows, replace=False) if len(X) > rows else np.arange(len(X))
    Xs, ts = X[idx].copy(), t[idx]
    base = r2_score(ts, model.predict(Xs))
    if units is None:
        units = {names[j]: [j] for j in range(X.shape[1])}
    imp = []
    for uname, cols in units.items():
        cols = [j for j in cols if Xs[:, j].min() != Xs[:, j].max()]
        if not cols:
            continue
        drops = []
        for r in range(2):
            keep = Xs[:, cols].copy()
            Xs[:, cols] = keep[rng.permutation(len(keep))]
            drops.append(base - r2_score(ts, model.predict(Xs)))
            Xs[:, cols] = keep
        imp.append((uname, round(float(np.mean(drops)), 4)))
    imp.sort(key=lambda x: -x[1])
    return imp[:top]


# ------------------------------------------------------------------------- make-within
def cmd_make_within(a):
    kind = kind_of(a.collection)
    g = load(a.src)
    idx = distinct_configs(g, kind)
    rng = np.random.default_rng(a.seed)
    perm = rng.permutation(idx)
    ntrain = a.train_size if a.train_size else int(round(a.train_frac * len(perm)))
    if ntrain >= len(perm):
        raise SystemExit(f"{a.src}: --train-size {ntrain} leaves no held-out config of its {len(perm)} distinct ones")
    tr, te = perm[:ntrain], perm[ntrain:]
    if a.max_train and len(tr) > a.max_train:
        tr = tr[:a.max_train]
    if a.max_test and len(te) > a.max_test:
        te = te[:a.max_test]
    tr, te = np.sort(tr), np.sort(te)
    stem = a.name or os.path.basename(a.src)[:-4]
    base = os.path.join(a.out, "npz", coll_dir(a.collection))
    for split in ("train", "valid", "test"):
        os.makedirs(os.path.join(base, split), exist_ok=True)
    os.makedirs(os.path.join(a.out, "truth", coll_dir(a.collection), "test"), exist_ok=True)
    np.savez(os.path.join(base, "train", stem + ".npz"), **subset(g, tr, kind))
    np.savez(os.path.join(base, "test", stem + ".npz"), **subset(g, te, kind, zero_runtimes=True))
    t = subset(g, te, kind)
    truth = {"config_runtime": t["config_runtime"]}
    if kind == "tile":
        truth["config_runtime_normalizers"] = t["config_runtime_normalizers"]
    np.savez(os.path.join(a.out, "truth", coll_dir(a.collection), "test", stem + ".npz"), **truth)
    if a.held:
        # The held-out part with its runtimes, for tools that score a file's own runtimes
        # (tpuperf-rank --json); in a release-style tree so its collection is its path.
        d = os.path.join(a.out, "held", coll_dir(a.collection), "test")
        os.makedirs(d, exist_ok=True)
        np.savez(os.path.join(d, stem + ".npz"), **t)
    if a.noise_free:
        # The held-out configs' runtimes without measurement noise (tpuperf-synth --noise-free:
        # row for row the source file's), in a truth tree of their own.
        nf = load(a.noise_free)
        if len(nf["config_runtime"]) != len(g["config_runtime"]):
            raise SystemExit(f"{a.noise_free}: {len(nf['config_runtime'])} runtimes, {a.src} has "
                             f"{len(g['config_runtime'])} configs")
        d = os.path.join(a.out, "noise_free", coll_dir(a.collection), "test")
        os.makedirs(d, exist_ok=True)
        np.savez(os.path.join(d, stem + ".npz"), **{k: v[te] for k, v in nf.items()})
    info = dict(src=a.src, collection=a.collection, seed=a.seed, configs=int(len(targets(g, kind))),
                distinct=int(len(idx)), train=int(len(tr)), test=int(len(te)), stem=stem,
                noise_free=bool(a.noise_free))
    with open(os.path.join(a.out, f"split-{coll_dir(a.collection).replace('/', '_')}.json"), "w") as f:
        json.dump(info, f)
    print(json.dumps(info))


# ------------------------------------------------------------------------------ within
def within_features(g, kind, rows=None, lg=None):
    if kind == "tile":
        cf = g["config_feat"] if rows is None else g["config_feat"][rows]
        return tile_features(g, cf)
    lg = lg or LayoutGraph(g)
    ncf = g["node_config_feat"] if rows is None else g["node_config_feat"][rows]
    X, names = lg.features(ncf)
    # Within one graph the per-node values themselves are features: (node, slot) columns.
    raw = ncf.reshape(len(ncf), -1).astype(np.float64)
    return np.hstack([X, raw]), names + [f"node{n // 18}_slot{n % 18}" for n in range(raw.shape[1])]


class OneHot:
    """One-hot of the (node, slot) layout values seen in train, per column: ridge's model of
    a cost per node choice."""

    def __init__(self, raw):
        self.vals = [np.unique(raw[:, j]) for j in range(raw.shape[1])]

    def __call__(self, raw):
        from scipy import sparse
        blocks = [sparse.csr_matrix((raw[:, j][:, None] == v[None, :]).astype(np.float64))
                  for j, v in enumerate(self.vals)]
        return sparse.hstack(blocks).tocsr() if blocks else sparse.csr_matrix((len(raw), 0))


def cmd_within(a):
    from scipy import sparse
    from sklearn.linear_model import Ridge
    kind = kind_of(a.collection)
    d = os.path.join(a.tree, "npz", coll_dir(a.collection))
    tr_path = glob.glob(os.path.join(d, "train", "*.npz"))[0]
    stem = os.path.basename(tr_path)[:-4]
    te_path = os.path.join(d, "test", stem + ".npz")
    truth = load(os.path.join(a.tree, "truth", coll_dir(a.collection), "test", stem + ".npz"))
    gtr, gte = load(tr_path), load(te_path)
    gte.update(truth)
    ytr, yte = targets(gtr, kind), targets(gte, kind)
    t = graph_target(ytr)
    out = dict(collection=a.collection, graph=stem, train=int(len(ytr)), test=int(len(yte)), models={})
    # Generated graphs: their held-out runtimes without the measurement noise as well.
    nf_path = os.path.join(a.tree, "noise_free", coll_dir(a.collection), "test", stem + ".npz")
    yexact = targets(load(nf_path), kind) if os.path.exists(nf_path) else None
    if yexact is not None:
        # The noise-free order scored against the measured runtimes: what a model that learned
        # the cost model exactly scores (ties broken by index). Not a bound: a held-out runtime is
        # the least of its config's re-measurements, lower the more often the config was
        # measured, and how often is learnable from the config (docs/experiments E18).
        out["noise_free"] = dict(order=order_score(yexact, yte, kind, False), models={})
    # Features of the train part; only the columns that vary in it are kept (within one graph
    # most (node, slot) values never change).
    t0 = time.perf_counter()
    lg = LayoutGraph(gtr) if kind == "layout" else None
    Xtr, names = within_features(gtr, kind, lg=lg)
    var = np.nonzero(Xtr.min(0) != Xtr.max(0))[0]
    Xtr, names = Xtr[:, var], [names[j] for j in var]
    nagg = sum(1 for n in names if not n.startswith("node"))   # aggregates come first
    feat_s = time.perf_counter() - t0
    out["features"] = dict(varying=int(len(var)), aggregates=int(nagg), seconds=feat_s)
    for name in ("ridge", "gbt"):
        t0 = time.perf_counter()
        if name == "ridge" and kind == "layout":
            mu, sd = Xtr[:, :nagg].mean(0), Xtr[:, :nagg].std(0)
            sd[sd == 0] = 1
            enc = OneHot(Xtr[:, nagg:])
            design = lambda X: sparse.hstack([enc(X[:, nagg:]), sparse.csr_matrix((X[:, :nagg] - mu) / sd)]).tocsr()
            A = design(Xtr)
            alpha = choose_alpha(A, t)
            model = Ridge(alpha=alpha).fit(A, t)
        elif name == "ridge":
            alpha = choose_alpha_dense(Xtr, t)
            model = make_models(len(t), a.budget)["ridge"](alpha).fit(Xtr, t)
            design = lambda X: X
        else:
            model = make_models(len(t), a.budget, a.gbt_max_iter)["gbt"]().fit(Xtr, t)
            design = lambda X: X
        train_s = time.perf_counter() - t0 + feat_s
        # Prediction: features of the test file and the model, timed together.
        t0 = time.perf_counter()
        Xte = within_features(gte, kind, lg=lg)[0][:, var]
        pred = model.predict(design(Xte))
        pred_s = time.perf_counter() - t0
        score = order_score(pred, yte, kind, False)
        if yexact is not None:
            out["noise_free"]["models"][name] = order_score(pred, yexact, kind, False)
        m = dict(score=score, slowdown=slowdowns(pred, yte), train_s=train_s, predict_s=pred_s,
                 predictions_per_s=len(yte) / max(pred_s, 1e-9))
        if name == "ridge":
            m["alpha"] = alpha
        if name == "gbt":
            m["iterations"] = int(model.n_iter_)
            if a.importances:
                # Aggregates one by one; the raw layout values of one configurable node (its
                # varying slots shuffled together), named node<N>:opcode<K> (N: position in
                # node_config_ids).
                units = {n: [j] for j, n in enumerate(names) if not n.startswith("node")}
                if kind == "layout":
                    op = gtr["node_opcode"][gtr["node_config_ids"]]
                    for j, n in enumerate(names):
                        if n.startswith("node"):
                            i = int(n[4:].split("_")[0])
                            units.setdefault(f"node{i}:opcode{int(op[i])}", []).append(j)
                m["importances"] = importances(model, Xtr, t, names, units=units, rows=1000)
        out["models"][name] = m
    # Reference point: a random order.
    rng = np.random.default_rng(0)
    r = rng.permutation(len(yte))
    out["random"] = tile_score(r, yte) if kind == "tile" else layout_score(r, yte)
    emit(out, a.out)


def choose_alpha(A, t):
    """Ridge alpha by 5-fold CV on the train part (the only data a model may look at)."""
    from sklearn.linear_model import RidgeCV
    return float(RidgeCV(alphas=[0.1, 1, 10, 100, 1000]).fit(A, t).alpha_) if A.shape[0] >= 10 else 10.0


def choose_alpha_dense(X, t):
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    if len(t) < 10:
        return 10.0
    p = make_pipeline(StandardScaler(), RidgeCV(alphas=[0.1, 1, 10, 100, 1000])).fit(X, t)
    return float(p[-1].alpha_)


def emit(obj, path):
    text = json.dumps(obj, indent=1)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
    print(text)


# ------------------------------------------------------------------------------ across
GROUPS = {
    "tile": [("config features (raw, log)", ("config_feat_", "log_config_feat_")),
             ("tiling vs root shape (grid steps, padded tile)", ("log_grid", "log_tile", "log_padded", "tile_pad",
                                                                  "log_kernel", "tile_minor", "tile_second")),
             ("graph (sizes, opcode counts, root dims)", ("log_nodes", "log_edges", "edges_per", "sum_log", "max_log",
                                                          "mean_log", "log_count_opcode", "log_root_dim", "root_rank"))],
    "layout": [("(opcode, slot, position, value) counts", ("n_conv_", "n_dot_", "n_reshape_", "n_other_")),
               ("padding of the chosen layouts", ("log_padded_size", "sum_log_pad")),
               ("default / row-major counts", ("n_default", "n_rowmajor")),
               ("producer/consumer mismatches", ("n_link_mismatch", "log_link_mismatch")),
               ("graph (sizes, opcode counts)", ("log_nodes", "log_edges", "edges_per", "sum_log", "max_log",
                                                 "mean_log", "log_count_opcode", "log_configurable"))],
}


def graph_rows(g, kind, rows, lg=None):
    if kind == "tile":
        return tile_features(g, g["config_feat"][rows])
    lg = lg or LayoutGraph(g)
    return lg.features(g["node_config_feat"][rows])


def read_split(raw, truth, collection, split, per_graph, rng, dedup):
    """[(name, X, y)] of a split; per_graph: configs sampled per graph (0: all)."""
    kind = kind_of(collection)
    out = []
    for p in sorted(glob.glob(os.path.join(raw, "npz", coll_dir(collection), split, "*.npz"))):
        g = load(p)
        stem = os.path.basename(p)[:-4]
        if split == "test":
            g.update(load(os.path.join(truth, coll_dir(collection), "test", stem + ".npz")))
        idx = distinct_configs(g, kind) if dedup else np.arange(len(g["config_runtime"]))
        if per_graph and len(idx) > per_graph:
            idx = np.sort(rng.choice(idx, per_graph, replace=False))
        X, names = graph_rows(g, kind, idx)
        out.append((stem, X, targets(g, kind)[idx], names))
    return out


def split_score(model, graphs, kind, keep_default, cols=None, ys=None):
    """Mean and per-graph scores of the model's orders; ys: runtimes to score against
    instead of the graphs' own (the noise-free ones)."""
    s = []
    for i, (_, X, y, _) in enumerate(graphs):
        pred = model.predict(X if cols is None else X[:, cols])
        s.append(order_score(pred, y if ys is None else ys[i], kind, keep_default))
    return float(np.nanmean(s)), [round(v, 4) for v in s]


def noise_free_targets(root, collection, graphs):
    """The test graphs' noise-free runtimes (tpuperf-synth --noise-free), in graphs' order."""
    kind = kind_of(collection)
    return [targets(load(os.path.join(root, coll_dir(collection), "test", stem + ".npz")), kind)
            for stem, _, _, _ in graphs]


def cmd_across(a):
    out = dict(tree=a.raw, collections={}, settings=dict(train_configs_per_graph=a.per_graph, budget_s=a.budget))
    for collection in a.collections.split(","):
        kind = kind_of(collection)
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        per = a.per_graph if kind == "layout" else a.tile_per_graph
        train = read_split(a.raw, a.truth, collection, "train", per, rng, dedup=True)
        valid = read_split(a.raw, a.truth, collection, "valid", 1000, rng, dedup=True)
        feat_s = time.perf_counter() - t0
        names = train[0][3]
        X = np.vstack([x for _, x, _, _ in train])
        t = np.concatenate([graph_target(y) for _, _, y, _ in train])
        models = make_models(len(t), a.budget)
        grids = {"ridge": [dict(alpha=v) for v in (1.0, 10.0, 100.0, 1000.0)],
                 "gbt": [dict(lr=0.1, leaves=31), dict(lr=0.05, leaves=63)]}
        res = dict(train_graphs=len(train), train_rows=int(len(t)), features=int(X.shape[1]),
                   feature_build_s=feat_s, models={})
        best_models = {}
        for name, grid in grids.items():
            tried = []
            grid_t0 = time.perf_counter()
            for hp in grid:
                t1 = time.perf_counter()
                m = models[name](**hp).fit(X, t)
                fit_s = time.perf_counter() - t1
                v, _ = split_score(m, valid, kind, keep_default=True)
                tried.append((v, fit_s, hp, m))
            grid_s = time.perf_counter() - grid_t0
            v, fit_s, hp, m = max(tried, key=lambda r: (np.nan_to_num(r[0], nan=-9), -r[1]))
            best_models[name] = (m, hp)
            # Test: features from the npz and the prediction, timed together, every config.
            t1 = time.perf_counter()
            test = read_split(a.raw, a.truth, collection, "test", 0, rng, dedup=False)
            preds = [m.predict(x) for _, x, _, _ in test]
            pred_s = time.perf_counter() - t1
            n_test = sum(len(y) for _, _, y, _ in test)
            score, per_graph = split_score(m, test, kind, keep_default=True)
            r = dict(hp=hp, valid=v, valid_per_graph=split_score(m, valid, kind, True)[1], test=score,
                     test_per_graph=per_graph, fit_s=fit_s, grid_s=grid_s,
                     train_s=feat_s + fit_s, predict_s=pred_s, predictions_per_s=n_test / max(pred_s, 1e-9),
                     test_configs=n_test)
            if a.noise_free:
                exact = noise_free_targets(a.noise_free, collection, test)
                r["test_noise_free"], r["test_noise_free_per_graph"] = split_score(m, test, kind, True, ys=exact)
                # The noise-free order against the measured runtimes: what the cost model itself
                # scores (test rows are not deduplicated, so their noise is independent).
                exact_order = [order_score(e, y, kind, True) for e, (_, _, y, _) in zip(exact, test)]
                res["noise_free_order"] = float(np.nanmean(exact_order))
                res["noise_free_order_per_graph"] = [round(v, 4) for v in exact_order]
            if kind == "tile":
                r["test_without_keep_default"] = split_score(m, test, kind, keep_default=False)[0]
            if name == "gbt":
                r["iterations"] = int(m.n_iter_)
            res["models"][name] = r
        res["test_graphs"] = len(test)
        # Analysis of the better GBT: permutation importances and feature-group ablations.
        if a.analysis:
            m, hp = best_models["gbt"]
            res["importances"] = importances(m, X, t, names, top=10)
            abl = []
            for gname, prefixes in GROUPS[kind]:
                drop = [j for j, n in enumerate(names) if n.startswith(prefixes)]
                keep = [j for j in range(len(names)) if j not in set(drop)]
                mm = models["gbt"](**hp).fit(X[:, keep], t)
                abl.append(dict(group=gname, columns=len(drop),
                                without_test=split_score(mm, test, kind, True, keep)[0],
                                without_valid=split_score(mm, valid, kind, True, keep)[0]))
                if kind == "layout" and prefixes[0] == "n_conv_" or kind == "tile" and prefixes[0] == "config_feat_":
                    mm = models["gbt"](**hp).fit(X[:, drop], t)
                    abl.append(dict(group="only " + gname, columns=len(drop),
                                    without_test=split_score(mm, test, kind, True, drop)[0],
                                    without_valid=split_score(mm, valid, kind, True, drop)[0]))
            res["ablation"] = abl
        out["collections"][collection] = res
        print(f"{collection}: " + ", ".join(f"{k} test {v['test']:.4f} valid {v['valid']:.4f} fit {v['fit_s']:.1f}s"
                                            for k, v in res["models"].items()), file=sys.stderr)
    emit(out, a.out)


# ------------------------------------------------------------------------------- score
def cmd_score(a):
    """Per-graph scores of a submission (competition format) against a truth tree."""
    rows = list(csv.DictReader(open(a.submission)))
    out = {}
    for r in rows:
        parts = r["ID"].split(":")
        collection, stem = ":".join(parts[:-1]), parts[-1]
        truth = load(os.path.join(a.truth, coll_dir(collection), "test", stem + ".npz"))
        order = [int(x) for x in r["TopConfigs"].split(";") if x != ""]
        if collection.startswith("tile"):
            s = tile_score(order, targets(truth, "tile"))
        else:
            s = layout_score(order, truth["config_runtime"].astype(np.float64))
        out.setdefault(collection, {})[stem] = s
    res = {c: dict(mean=float(np.nanmean(list(v.values()))), graphs=v) for c, v in out.items()}
    emit(res, a.out)


def main():
    if "--self-test" in sys.argv[1:]:
        return self_test()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("make-within")
    q.add_argument("--src", required=True)
    q.add_argument("--collection", required=True)
    q.add_argument("--out", required=True)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--train-frac", type=float, default=0.7)
    q.add_argument("--train-size", type=int, default=0,
                   help="exactly this many train configs, drawn at random (instead of --train-frac)")
    q.add_argument("--held", action="store_true",
                   help="also write the held-out part with its runtimes as held/<collection>/test/<stem>.npz")
    q.add_argument("--max-train", type=int, default=0)
    q.add_argument("--max-test", type=int, default=0)
    q.add_argument("--name", default="")
    q.add_argument("--noise-free", default="", help="the source's noise-free runtimes (tpuperf-synth --noise-free)")
    q = sub.add_parser("within")
    q.add_argument("--tree", required=True)
    q.add_argument("--collection", required=True)
    q.add_argument("--budget", type=float, default=60)
    q.add_argument("--importances", action="store_true")
    q.add_argument("--gbt-max-iter", type=int, default=500,
                   help="the GBT's boosting rounds at most (early stopping needs 200 train rows)")
    q.add_argument("--out", default="")
    q = sub.add_parser("across")
    q.add_argument("--raw", required=True)
    q.add_argument("--truth", required=True)
    q.add_argument("--collections", default=",".join(COLLECTIONS))
    q.add_argument("--per-graph", type=int, default=2000, help="layout train configs sampled per graph")
    q.add_argument("--tile-per-graph", type=int, default=0, help="tile train configs per graph (0: all)")
    q.add_argument("--budget", type=float, default=120)
    q.add_argument("--analysis", action="store_true")
    q.add_argument("--noise-free", default="",
                   help="root of the tree's noise-free runtimes (tpuperf-synth --noise-free: DIR/noise_free)")
    q.add_argument("--out", default="")
    q = sub.add_parser("score")
    q.add_argument("--submission", required=True)
    q.add_argument("--truth", required=True)
    q.add_argument("--out", default="")
    a = p.parse_args()
    {"make-within": cmd_make_within, "within": cmd_within, "across": cmd_across, "score": cmd_score}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
