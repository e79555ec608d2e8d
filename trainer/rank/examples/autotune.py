#!/usr/bin/env python3
"""An autotuner on tpuperf: measure a graph's configs a few at a time, asking the ranker
which to measure next, and adapt the ranker to what it measured.

    autotune.py --run RUN_DIR --graph FILE.npz --runtimes RUNTIMES.npz --plot OUT.png
                [--collection C] [--budget N] [--batch K] [--method blend|finetune]
                [--exploration X] [--seed S] [--json OUT.json]

FILE.npz is the graph in the release's format (its configs are the candidates);
RUNTIMES.npz holds every config's runtime (config_runtime, for tile over
config_runtime_normalizers when it has them): a train or valid file itself, or for a
generated test file the generator's truth/ twin. measure() looks the runtime up there; a
real autotuner would compile and run the config instead.

Each round measures the K configs Ranker.suggest picks among those not measured yet
(the predicted cost traded against the fold models' disagreement, the batch kept
diverse), then adapts the run's ranker to every measurement so far (Ranker.adapted, by
default the blend; from 2 measurements on). The plot shows the best runtime found against the number of
measurements, beside the run's ranker as trained (its order, no adaptation) and a random
order; --json writes the same curves.
"""

import argparse
import json
import os
import sys

import numpy as np

import tpuperf


def known_runtimes(path):
    """Every config's runtime from a file of measured runtimes (tile: per normalizer)."""
    d = np.load(path)
    y = d["config_runtime"].astype(np.float64)
    if "config_runtime_normalizers" in d:
        y = y / d["config_runtime_normalizers"]
    if not (y > 0).all():
        sys.exit(f"autotune.py: {path}: key 'config_runtime': not every config has a runtime (> 0)")
    return y


def collection_of(run, graph, given):
    """--collection, else the run's only collection of the graph's kind."""
    if given:
        return given
    kind = "layout" if "node_config_feat" in graph else "tile"
    of_kind = [c for c in tpuperf.trained_collections(run) if c.startswith(kind + ":")]
    if len(of_kind) != 1:
        sys.exit(f"autotune.py: pass --collection (the run has {', '.join(of_kind) or 'no'} {kind} models)")
    return of_kind[0]


def measured_rows(graph, kind, configs):
    """The candidate arrays of the measured configs, as Ranker.adapted takes them."""
    if kind == "tile":
        return {"config_feat": graph["config_feat"][configs]}
    return {"node_config_ids": graph["node_config_ids"], "node_config_feat": graph["node_config_feat"][configs]}


def autotune(ranker, graph, name, measure, budget, batch, method, exploration, seed):
    """Measures up to budget configs (fewer when the rest are copies of measured ones:
    suggest never picks those); returns the configs in the order measured."""
    measured, runtimes = [], []
    current = ranker
    while len(measured) < budget:
        k = min(batch, budget - len(measured))
        suggested = current.suggest(graph, count=k, exploration=exploration, exclude=measured, name=name)["configs"]
        if len(suggested) == 0:
            break  # every config left is a copy of a measured one: nothing new to learn
        for c in suggested:
            measured.append(int(c))
            runtimes.append(measure(int(c)))
        if len(measured) >= 2 and len(measured) < budget:
            current = ranker.adapted(graph, measured_rows(graph, ranker.kind, measured), runtimes, method=method,
                                     seed=seed, name=name)
            a = current.adaptation
            how = (f"{a['blend']}, held-out tau {a['cv_tau']:.3f} (run {a['cv_tau_run']:.3f})" if a["method"] == "blend"
                   else f"loss {a['first_loss']:.4f} -> {a['last_loss']:.4f}")
            print(f"{len(measured):4d} measured, best {min(runtimes):.6g}; adapted in {a['seconds']:.2f} s: {how}",
                  file=sys.stderr)
    return measured


def best_so_far(configs, y):
    return np.minimum.accumulate(y[np.asarray(configs)]).tolist()


def plot(curves, true_best, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    styles = [{"linewidth": 2.5}, {"linestyle": "--"}, {"linestyle": ":"}]  # the adapted curve on top of equal ones
    for (label, best), style in zip(curves.items(), styles):
        ax.step(np.arange(1, len(best) + 1), np.asarray(best) / true_best, where="post", label=label, **style)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("configs measured")
    ax.set_ylabel("best runtime found / best of all configs")
    ax.set_title(title, fontsize=10)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="the training run's directory")
    p.add_argument("--graph", required=True, help="the graph and its candidate configs (.npz)")
    p.add_argument("--runtimes", required=True, help="every config's runtime (.npz), what measure() looks up")
    p.add_argument("--collection", help="whose models rank (default: the run's only one of the graph's kind)")
    p.add_argument("--budget", type=int, default=32, help="configs to measure")
    p.add_argument("--batch", type=int, default=4, help="configs measured per round")
    p.add_argument("--method", default="blend", choices=("blend", "finetune"), help="how to adapt (Ranker.adapted)")
    p.add_argument("--exploration", type=float, default=1.0, help="Ranker.suggest's weight of the models' disagreement")
    p.add_argument("--seed", type=int, default=0, help="adaptation's and the random order's seed")
    p.add_argument("--plot", required=True, help="the picture (.png or .svg)")
    p.add_argument("--json", help="the curves as JSON")
    args = p.parse_args()

    graph = dict(np.load(args.graph))
    y = known_runtimes(args.runtimes)
    if len(y) != (len(graph["config_feat"]) if "config_feat" in graph else len(graph["node_config_feat"])):
        sys.exit(f"autotune.py: {args.runtimes} holds {len(y)} runtimes, not one per config of {args.graph}")
    budget = min(args.budget, len(y))
    ranker = tpuperf.Ranker(args.run, collection_of(args.run, graph, args.collection))
    name = os.path.splitext(os.path.basename(args.graph))[0]

    def measure(config):
        return float(y[config])

    adaptive = autotune(ranker, graph, name, measure, budget, args.batch, args.method, args.exploration, args.seed)
    n = len(adaptive)  # the baselines measure as many
    as_trained = [int(c) for c in ranker.rank(graph)["order"][:n]]
    random = np.random.default_rng(args.seed).permutation(len(y))[:n].tolist()
    curves = {
        "tpuperf: suggest, measure, adapt": best_so_far(adaptive, y),
        "tpuperf as trained (its order)": best_so_far(as_trained, y),
        "random order": best_so_far(random, y),
    }
    title = f"{ranker.collection} {name}\n{len(y)} configs, {ranker.folds} fold models, {args.batch} measured a round"
    plot(curves, float(y.min()), title, args.plot)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"collection": ranker.collection, "graph": args.graph, "configs": len(y), "true_best": y.min(),
                       "measured": adaptive, "best_so_far": curves}, f, indent=1)
    for label, best in curves.items():
        print(f"{label}: best after {n} measurements {best[-1] / y.min():.4f} x the best of all")
    print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
