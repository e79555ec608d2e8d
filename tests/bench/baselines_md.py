#!/usr/bin/env python3
"""Writes the "## Baselines" section of tests/bench/RESULTS.md from the result files of
bench_baselines.sh ($TPUPERF_BENCH_DIR/baselines-results/{within,across}.json).
Usage: baselines_md.py RESULTS_DIR RESULTS_MD"""
import datetime
import json
import os
import statistics
import sys

from results_md import replace_section, subsection


def f4(v):
    return "n/a" if v is None or v != v else f"{v:.4f}"


def sgn(v):
    return "n/a" if v is None or v != v else f"{v:+.4f}"


def s1(v):
    return "n/a" if v is None else f"{v:.1f}"


WITHIN_TITLE = "(a) Within one graph"
ACROSS_TITLE = "(b) Across graphs: the bench tree's unseen test graphs"


COMMANDS = ("Commands: `bash tests/bench/bench_baselines.sh [BIN_DIR] --bench-settings` (what each part "
            "runs is in its header; the trees, runs and logs stay in `$TPUPERF_BENCH_DIR/baselines-work`). "
            "What the figures mean and the experiments behind the defaults are the dated notes of "
            "docs/experiments/, not written by the bench.")


def kept(results, title):
    """A subsection as an earlier bench wrote it, without the commands paragraph that ends the
    section (None when there is none)."""
    text = subsection(results, title)
    return text.split("\n\n" + COMMANDS)[0] if text else None


def kept_runs(part, whens, why):
    """The header's clause on tpuperf runs that an earlier bench made (kept with
    --reuse-tpuperf), empty when this part ran them all. A run's time is when it ended; the
    part's start is its end less its seconds."""
    stamp = "%Y-%m-%d %H:%M UTC"
    start = datetime.datetime.strptime(part["when"], stamp) - datetime.timedelta(seconds=part["seconds"])
    kept = sorted(w for w in set(whens) if w != "?" and datetime.datetime.strptime(w, stamp) < start)
    return f" (tpuperf runs kept from an earlier bench with --reuse-tpuperf: {', '.join(kept)}; {why})" if kept else ""


def rate(v):
    return "n/a" if v is None else f"{v:,.0f}"


def main():
    res, results = sys.argv[1:3]
    load = lambda n: json.load(open(os.path.join(res, n))) if os.path.exists(os.path.join(res, n)) else None
    within, across = load("within.json"), load("across.json")
    L = ["## Baselines", "",
         "Written by `tests/bench/bench_baselines.sh` (issue #20 step 1): tpuperf against flat models "
         "on the same configs and splits: ridge and gradient-boosted trees (sklearn "
         "`HistGradientBoostingRegressor`, Debian's python3-sklearn) in `tests/bench/baselines.py`, "
         "whose features are built with numpy straight from the npz files and whose metrics are "
         "checked against scipy.stats.kendalltau and hand-computed values (`baselines.py --self-test`) "
         "and, on every tpuperf submission of this bench, against tpuperf-score (equal to 1e-6). "
         "Higher scores are better (tile: 2 - best of the top 5 / best; layout: Kendall's tau-b); "
         "margin = tpuperf - the better flat model.", "",
         "Each table names the machine it ran on; other engineers' jobs shared it (load figures per part). Every "
         "heavy command ran under `nice -n 19`; tpuperf on 2 MPI ranks (`mpirun --bind-to none -np 2`), "
         "the flat models on one thread.", ""]
    if within:
        w = within
        L += ["### " + WITHIN_TITLE, "",
              f"Run {w['when']} on {w.get('machine', 'an unrecorded machine')}, "
              f"load {w['load'][0]:.2f} → {w['load'][1]:.2f}, {w['seconds'] / 60:.1f} min"
              + kept_runs(w, [t['tpuperf'].get('when', '?') for t in w['tasks']], "the splits are deterministic")
              + ". "
              "A random 70/30 split of the graph's distinct configs (identical rows collapsed to the "
              "least runtime); both sides train on the 70% and rank the held-out 30% (generated "
              "graphs: at most 2,000 train and 1,000 held-out configs). tpuperf: the split written "
              "as a release tree (train/: the 70% with runtimes; valid/ empty; test/: the held-out "
              "configs, runtimes zeroed) and `tpuperf-preprocess` + `mpirun --bind-to none -np 2 "
              "tpuperf-train` with the schema's defaults except `preprocess.folds=1` (one model that "
              "sees every train config: with 2 folds over one graph a fold would see none or all of "
              "it, so no out-of-fold selection is possible; the last epoch is kept), "
              "the trainer's steps for a fold of one graph (its collection's floor on the steps of an epoch, "
              "raised to `train.single_graph_min_config_passes_per_epoch` and capped at "
              "`train.max_config_passes_per_epoch` passes over the train configs: the generated layout "
              "files train more steps than the floor, the real graphs fewer), and "
              "`output.tile_keep_default=false` (config 0 of a held-out part is not the compiler's "
              "default); scored by `tpuperf-score`. Flat models: ridge on standardized aggregate "
              "features plus (layout) a one-hot of every (node, slot) layout value that varies in "
              "train, alpha by 5-fold CV on train; GBT (500 rounds at most, early stopping on 10% of "
              "train when it has 200 rows or more) on the aggregates and the raw (node, slot) values "
              "(tile: the 24 config features, their logs and the tiling measured against the root's "
              "shape: grid steps, padded tile); target: log runtime standardized within the graph.", "",
              "| graph | collection | distinct configs | train / held-out | tpuperf | ridge | GBT | random "
              "| margin vs best flat | train s: tpuperf wall (steps); ridge; GBT | predictions/s: tpuperf-rank; "
              "ridge; GBT |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        groups = {}
        for t in w["tasks"]:
            s, tp, b = t["split"], t["tpuperf"], t["baselines"]["models"]
            name = s["stem"] + (f" (split {s['seed']})" if s["stem"].startswith("real") else "")
            best = max(b["ridge"]["score"], b["gbt"]["score"])
            L.append(f"| {name} | {s['collection']} | {s['distinct']} | {s['train']} / {s['test']} | "
                     f"{f4(tp['score'])} | {f4(b['ridge']['score'])} | {f4(b['gbt']['score'])} | "
                     f"{f4(t['baselines']['random'])} | **{sgn(tp['score'] - best)}** | "
                     f"{s1(tp['train_wall_s'])} ({s1(tp['steps_s'])}); {s1(b['ridge']['train_s'])}; "
                     f"{s1(b['gbt']['train_s'])} | {rate(tp['rank']['per_s'] if tp['rank'] else None)}; "
                     f"{rate(b['ridge']['predictions_per_s'])}; {rate(b['gbt']['predictions_per_s'])} |")
            if s["stem"].startswith("real"):
                groups.setdefault((s["stem"], s["collection"]), []).append(
                    (tp["score"], b["ridge"]["score"], b["gbt"]["score"]))
        for (stem, c), v in groups.items():
            if len(v) > 1:
                m = [statistics.mean(x[i] for x in v) for i in range(3)]
                sd = [statistics.stdev(x[i] for x in v) for i in range(3)]
                # Per split against the better flat model there, as the split rows print it.
                margins = [round(x[0] - max(x[1], x[2]), 4) for x in v]
                above, level = sum(d > 0 for d in margins), sum(d == 0 for d in margins)
                L.append(f"| {stem}, mean ± sd of {len(v)} splits | {c} | | | {m[0]:.4f} ± {sd[0]:.3f} | "
                         f"{m[1]:.4f} ± {sd[1]:.3f} | {m[2]:.4f} ± {sd[2]:.3f} | | "
                         f"**{sgn(m[0] - max(m[1], m[2]))}** against the better mean; mean of the "
                         f"splits' margins {sgn(statistics.mean(margins))}; splits above / level with "
                         f"/ below the better flat model: {above} / {level} / {len(v) - above - level} | | |")
        nf = [t for t in w["tasks"] if t["baselines"].get("noise_free") and t["tpuperf"].get("noise_free") is not None]
        if nf:
            L += ["", "The generated graphs against their noise-free runtimes (the bench tree's "
                  "`tpuperf-synth --noise-free` files): *noise-free order* is the noise-free runtimes' order "
                  "(ties in index order) scored against the measured held-out runtimes as the table above "
                  "scores every model, so what a model that learned the cost model exactly would score there; "
                  "not a bound, since a held-out runtime is the least of its config's re-measurements "
                  "(lower the more often it was measured, which the models can learn). The other columns score "
                  "each model's order against the noise-free runtimes instead of the measured ones (layout: "
                  "configs of equal noise-free runtime are ties of tau-b).", "",
                  "| graph | collection | noise-free order | tpuperf | ridge | GBT | margin vs best flat |",
                  "|---|---|---|---|---|---|---|"]
            for t in nf:
                b = t["baselines"]["noise_free"]
                best = max(b["models"]["ridge"], b["models"]["gbt"])
                L.append(f"| {t['split']['stem']} | {t['split']['collection']} | {f4(b['order'])} | "
                         f"{f4(t['tpuperf']['noise_free'])} | {f4(b['models']['ridge'])} | "
                         f"{f4(b['models']['gbt'])} | **{sgn(t['tpuperf']['noise_free'] - best)}** |")
        L += ["", "tpuperf's train time is the wall time of tpuperf-train (loading, training, test "
              "prediction; every collection of a tree trains in the same run, one after another), in "
              "brackets the training steps of that collection (metrics.csv); its predictions/s are "
              "the held-out configs over the wall time of `tpuperf-rank --csv` on the test file "
              "(model loading included, one thread). The flat models' train time is features + fit "
              "(GBT's fit dominates), predictions/s the held-out configs over features + predict.", ""]
        imp = [t for t in w["tasks"] if t["baselines"]["models"]["gbt"].get("importances")]
        if imp:
            L += ["GBT permutation importances within a graph (drop in R² of the standardized log runtime "
                  "when one column is shuffled, on up to 1,000 train rows; `node<N>:opcode<K>`: the layout values of "
                  "configurable node N (its position in node_config_ids; opcode 26 convolution, 34 dot, 75 "
                  "reshape), all its slots shuffled together; the other names are aggregate features, "
                  "`config_feat_<i>` the release's tile config columns, 15 = the output tile's product):", ""]
            for t in imp:
                top = ", ".join(f"{n} {v:.3f}" for n, v in t["baselines"]["models"]["gbt"]["importances"][:8])
                L.append(f"- {t['split']['stem']} ({t['split']['collection']}): {top}")
            L.append("")
    elif old := kept(results, WITHIN_TITLE):  # a bench run with --skip-within keeps the table it did not rerun
        L += [old, ""]
    if across:
        a = across
        b = a["baselines"]["collections"]
        runs = a["tpuperf"]
        L += ["### " + ACROSS_TITLE, "",
              f"Run {a['when']} on {a.get('machine', 'an unrecorded machine')}, "
              f"load {a['load'][0]:.2f} → {a['load'][1]:.2f}, {a['seconds'] / 60:.1f} min"
              + kept_runs(a, [r.get('when', '?') for r in runs.values()], "the minutes count only what this bench ran")
              + ". "
              f"Data: `tpuperf-synth --out {a['tree']} --scale bench --seed 0`, all five collections; "
              "test graphs scored against its truth (30 tile, 2 per layout collection: few, so the "
              "valid split's 2 graphs per collection are shown too). tpuperf: `tpuperf-preprocess` and "
              "`mpirun --bind-to none -np 2 tpuperf-train --fresh` with the project's defaults at the "
              "time of the run (configs/tpugraphs.yaml, i.e. the schema's: 5 folds, 10 epochs of one "
              "pass over the fold's train graphs but at least the collection's floor, its entry in "
              "the collections: section or else train.min_steps_per_epoch, "
              "default models and losses)"
              + (" and with the bench settings of `bench_train.sh --bench-tree` (2 folds, 8 epochs x 20 "
                 "steps, lr 0.003, tile slate 64, hidden 32, 2 layers)" if "across-bench" in runs else "")
              + ". Flat models: trained on the train split ("
              f"{a['baselines']['settings']['train_configs_per_graph']} distinct configs sampled per "
              "layout graph, every tile config), one row per (graph, config) of fixed-size features "
              "(tile: config features, tiling vs the root's shape, graph sizes and opcode counts; "
              "layout: counts of (opcode class, slot, position, layout value) at configurable nodes, "
              "the padding the chosen layouts cause, default and row-major counts, producer/consumer "
              "layout mismatches, graph sizes and opcode counts), target: log runtime standardized "
              "per graph; ridge alpha from {1, 10, 100, 1000} and the GBT from 2 settings chosen "
              "on the valid split; tile predictions keep config 0 among the top 5, as tpuperf's do.", "",
              "| collection | test graphs | tpuperf defaults | " +
              ("tpuperf bench settings | " if "across-bench" in runs else "") +
              "ridge | GBT | margin defaults vs best flat | valid: tpuperf defaults; " +
              ("bench settings; " if "across-bench" in runs else "") + "ridge; GBT | "
              "train s: tpuperf defaults wall (steps); ridge; GBT | predictions/s: tpuperf-rank; ridge; GBT |",
              "|---|---|---|" + ("---|" if "across-bench" in runs else "") + "---|---|---|---|---|---|"]
        d = runs["across-defaults"]
        bench = runs.get("across-bench")
        sums = {"d": [], "b": [], "r": [], "g": []}
        for c in ["tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random", "layout:nlp:default"]:
            sc = next((x for x in d["score"]["collections"] if x["collection"] == c), None)
            if sc is None or c not in b:
                continue
            bc = next((x for x in bench["score"]["collections"] if x["collection"] == c), None) if bench else None
            r, g = b[c]["models"]["ridge"], b[c]["models"]["gbt"]
            sums["d"].append(sc["score"]), sums["r"].append(r["test"]), sums["g"].append(g["test"])
            if bc:
                sums["b"].append(bc["score"])
            valid = f"{f4(d['valid'].get(c))}; " + (f"{f4(bench['valid'].get(c))}; " if bench else "") + \
                f"{f4(r['valid'])}; {f4(g['valid'])}"
            L.append(f"| {c} | {sc['graphs']} | {f4(sc['score'])} | " + (f"{f4(bc['score'])} | " if bench else "") +
                     f"{f4(r['test'])} | {f4(g['test'])} | **{sgn(sc['score'] - max(r['test'], g['test']))}** | "
                     f"{valid} | {s1(d['wall_s'])} ({s1(d['steps_s'].get(c))}); {s1(r['train_s'])}; "
                     f"{s1(g['train_s'])} | {rate(d['rank'][c]['per_s'])}; {rate(r['predictions_per_s'])}; "
                     f"{rate(g['predictions_per_s'])} |")
        if len(sums["d"]) == 5:
            m = {k: statistics.mean(v) for k, v in sums.items() if v}
            L.append(f"| overall (mean of 5) | | {f4(m['d'])} | " + (f"{f4(m['b'])} | " if bench else "") +
                     f"{f4(m['r'])} | {f4(m['g'])} | **{sgn(m['d'] - max(m['r'], m['g']))}** | | | |")
        L += ["", "tpuperf's train time: the wall time of the whole tpuperf-train run (all five "
              "collections, every fold, per-epoch out-of-fold and valid evaluation, test prediction) "
              "and in brackets the training steps of the collection summed over its folds; the flat "
              "models' train time: features of the train split (shared by both) + the chosen "
              "setting's fit (the selection grid's other fits not counted). Tile scores of the flat "
              "models without the keep-config-0 rule: " +
              ", ".join(f"{k} {f4(b['tile:xla']['models'][k].get('test_without_keep_default'))}"
                        for k in ("ridge", "gbt")) + ".", ""]
        if bench:
            L += [f"Bench-settings run: tpuperf-train {bench['wall_s']:.0f} s wall.", ""]
        L += ["Per test graph (ridge; GBT; tpuperf defaults): " + "; ".join(
            f"{c}: " + ", ".join(f"{x:.3f}" for x in b[c]['models']['gbt']['test_per_graph'])
            + " / " + ", ".join(f"{x:.3f}" for x in [d['per_graph'][c]['graphs'][k] for k in sorted(d['per_graph'][c]['graphs'])])
            for c in b if not c.startswith("tile")) + " (GBT / tpuperf, test files in name order).", ""]
        nf = d.get("noise_free")
        if nf and all("noise_free_order" in b[c] for c in b):
            L += ["Against the noise-free runtimes (the bench tree's `tpuperf-synth --noise-free` files): "
                  "*noise-free order* is the noise-free runtimes' order (ties in index order) scored against the "
                  "measured test runtimes, as the table above scores every model: what a model that learned the "
                  "cost model exactly would score (mean over the test graphs, per graph in brackets for layout); "
                  "the other columns score each model's order against the noise-free runtimes instead of the "
                  "measured ones.", "",
                  "| collection | noise-free order | tpuperf defaults | ridge | GBT | margin defaults vs best flat |",
                  "|---|---|---|---|---|---|"]
            for c in b:
                if c not in nf:
                    continue
                r, g = b[c]["models"]["ridge"]["test_noise_free"], b[c]["models"]["gbt"]["test_noise_free"]
                per = "" if c.startswith("tile") else " (" + ", ".join(f"{x:.3f}" for x in b[c]["noise_free_order_per_graph"]) + ")"
                tp = nf[c]["mean"]
                L.append(f"| {c} | {f4(b[c]['noise_free_order'])}{per} | {f4(tp)} | {f4(r)} | {f4(g)} | "
                         f"**{sgn(tp - max(r, g))}** |")
            L.append("")
        L += ["What the GBT uses (permutation importance on its train rows, drop in R² of the "
              "per-graph standardized log runtime) and what it loses without each feature group "
              "(refitted without the group, same setting; test and valid scores):", ""]
        L += ["| collection | top features (importance) | ablation: test / valid score without the group |",
              "|---|---|---|"]
        for c, r in b.items():
            top = ", ".join(f"{n} {v:.3f}" for n, v in r.get("importances", [])[:6])
            g = r["models"]["gbt"]
            abl = "; ".join(f"{x['group']}: {f4(x['without_test'])} / {f4(x['without_valid'])}" for x in r.get("ablation", []))
            L.append(f"| {c} | {top} | all features: {f4(g['test'])} / {f4(g['valid'])}; {abl} |")
        L.append("")
    elif old := kept(results, ACROSS_TITLE):  # likewise with --skip-across
        L += [old, ""]
    L += [COMMANDS, ""]
    replace_section(results, "Baselines", "\n".join(L).rstrip("\n") + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
