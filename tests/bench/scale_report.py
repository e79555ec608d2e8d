"""The "Release scale" section of tests/bench/RESULTS.md, from what bench_scale.sh measured
on a tenth of the release (its work directory) and the plan of the whole release
(release_plan.tsv of the generated tree). Writes what has been measured so far: a part
not run yet is said to be missing."""
import argparse
import csv
import datetime
import json
import math
import os
import re

from results_md import machine, replace_section

COLLECTIONS = ["tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random",
               "layout:nlp:default"]
FOLDS, EPOCHS = 5, 10  # configs/tpugraphs.yaml
# Two ranks in one fold group train at 93-98% of twice one rank (README, training bench).
GROUP_EFFICIENCY = 0.95
TS = r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\]"


def seconds_of(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%d %H:%M:%S.%f").timestamp()


def duration(text):
    """format_duration's '31s', '2.5s', '3m05s', '1h02m' -> seconds."""
    total = 0.0
    for value, unit in re.findall(r"([\d.]+)([hms])", text):
        total += float(value) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total


def plan_counts(gen):
    """(collection, split) -> [planned graphs, written graphs, planned bytes, written bytes];
    ("largest", "") -> [0, 0, largest planned bytes, largest written bytes]."""
    out = {("largest", ""): [0, 0, 0.0, 0.0]}
    with open(os.path.join(gen, "release_plan.tsv")) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            c = out.setdefault((r["collection"], r["split"]), [0, 0, 0.0, 0.0])
            written = r["written"] == "1"
            c[0] += 1
            c[1] += written
            c[2] += float(r["est_bytes"])
            c[3] += float(r["est_bytes"]) if written else 0.0
            big = out[("largest", "")]
            big[2] = max(big[2], float(r["est_bytes"]))
            big[3] = max(big[3], float(r["est_bytes"]) if written else 0.0)
    return out


def parse_training(log, collection):
    """Per fold: train graphs, oof graphs, steps an epoch, training seconds, configs/s,
    evaluation seconds; the valid graphs; the run's graphs_per_step and eval_every."""
    folds, valid, settings = {}, 0, {}
    loaded_oof = {}
    for line in open(log):
        m = re.search(TS + r".*\] loaded (\d+) graphs of \S+ \(\S+ (train|oof) fold (\d+)\)", line)
        if m:
            f = folds.setdefault(int(m.group(4)), {})
            f[m.group(3)] = int(m.group(2))
            if m.group(3) == "oof":
                loaded_oof[int(m.group(4))] = seconds_of(m.group(1))
            continue
        m = re.search(r"\] " + re.escape(collection) + r" fold (\d+): model .*?, (\d+) steps an epoch over (\d+) train", line)
        if m:
            folds.setdefault(int(m.group(1)), {})["steps"] = int(m.group(2))
            continue
        m = re.search(r"\]   (?:collections\." + re.escape(collection) + r"\.)?train\.(graphs_per_step|eval_every) = (\d+)", line)
        if m:
            settings[m.group(1)] = int(m.group(2))  # a collection's own value comes after the top-level one
            continue
        m = re.search(r"\] loaded (\d+) graphs of \S+ \(\S+ valid\)", line)
        if m:
            valid = int(m.group(1))
            continue
        # The epoch line ends "N configs/s (R ranks), train 2.9s, eval 1.5s" (the trainer's own
        # split), or, before the split was logged, "..., 2.9s" (training only; evaluation is
        # then the time from the held-out fold's loading to the line, less the training).
        m = re.search(TS + r".*\] " + re.escape(collection) +
                      r" fold (\d+) epoch 1/1: .*?, ([\d.]+) configs/s \(\d+ ranks?[^)]*\), "
                      r"(?:train (\S+), eval (\S+)|(\S+))\s*$", line)
        if m:
            f = folds.setdefault(int(m.group(2)), {})
            f["configs_per_s"] = float(m.group(3))
            if m.group(4):
                f["train_s"], f["eval_s"] = duration(m.group(4)), duration(m.group(5))
                continue
            f["train_s"] = duration(m.group(6))
            f["eval_s"] = max(0.0, seconds_of(m.group(1)) - loaded_oof.get(int(m.group(2)), seconds_of(m.group(1)))
                              - f["train_s"])
    return folds, valid, settings


def shown(cmd):
    """The command as a user would type it: without the per-rank GNU time wrapper."""
    return re.sub(r"/usr/bin/python3 -c import os, subprocess, sys.*?sys\.argv\[2:\]\)\) \S+ ", "", cmd,
                  flags=re.S)


def fmt_s(s):
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.0f} min"
    return f"{s:.0f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--fraction", type=float, required=True)
    ap.add_argument("--train-bin", required=True)
    a = ap.parse_args()
    runs = {}
    path = os.path.join(a.work, "runs.jsonl")
    if os.path.exists(path):
        runs = {r["label"]: r for r in map(json.loads, open(path).read().splitlines())}
    plan = plan_counts(a.gen)
    largest = plan.pop(("largest", ""))
    planned = sum(v[0] for v in plan.values())
    written = sum(v[1] for v in plan.values())
    bytes_all = sum(v[2] for v in plan.values())
    bytes_written = sum(v[3] for v in plan.values())
    byte_ratio = bytes_all / bytes_written
    npz_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(a.gen, "npz"))
                    for f in fs if f.endswith(".npz"))

    L = ["## Release scale", "",
         f"Run {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by "
         "`tests/bench/bench_scale.sh` (this section is written by the script; its parts run at "
         "different times, each with its load average below).", "",
         f"Machine: {machine()}.", "",
         f"Data: `tpuperf-synth --scale release --fraction {a.fraction} --seed 0`: per (collection, split) "
         f"every tenth graph of the release's planned graphs sorted by size (at evenly spaced ranks, so "
         f"the sample keeps the size distribution): {written} of {planned} graphs, "
         f"{bytes_written / 1e9:.1f} of {bytes_all / 1e9:.1f} GB of arrays once decompressed (the "
         f"generator's estimates in `release_plan.tsv`), {npz_bytes / 1e9:.2f} GB of npz on disk.", "",
         "| collection | split | release graphs | in the tenth | GB decompressed, release | in the tenth |",
         "|---|---|---|---|---|---|"]
    for c in COLLECTIONS:
        for split in ("train", "valid", "test"):
            v = plan.get((c, split), [0, 0, 0, 0])
            L.append(f"| {c} | {split} | {v[0]} | {v[1]} | {v[2] / 1e9:.2f} | {v[3] / 1e9:.2f} |")
    L.append("")

    # ---- preprocessing
    pre, rerun = runs.get("preprocess"), runs.get("preprocess-rerun")
    pre_release = None
    L += ["### Preprocessing", ""]
    if pre:
        pre_release = pre["seconds"] * byte_ratio
        L += [f"`{shown(pre['command'])}` (the settings of configs/tpugraphs.yaml: 5 folds, 1-hop pruning, "
              "dedup min, compression 4), then the same command again with nothing changed.", "",
              "| run | wall s | CPU s | peak RSS per rank (MiB) | load 1 min |", "|---|---|---|---|---|"]
        for r in (pre, rerun):
            if r:
                L.append(f"| {r['label']} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
                         f"{' / '.join(f'{m:.0f}' for m in r['rss_mb'])} | {r['load_start']:.2f} → {r['load_end']:.2f} |")
        L += ["", f"Scaled to the whole release (x {byte_ratio:.2f}, the ratio of decompressed bytes, which "
              "preprocessing's time follows: reading is inflating and converting them): "
              f"**{fmt_s(pre_release)} of wall time and {fmt_s(pre['cpu_seconds'] * byte_ratio)} of CPU on this "
              "machine's 2 ranks**. Peak memory per rank does not grow with the number of files but with "
              "the largest file (its largest member inflated whole, plus its converted arrays): the tenth's "
              f"largest file holds {largest[3] / 1e9:.2f} GB of arrays, the release's {largest[2] / 1e9:.2f} GB, "
              f"so the release needs about {largest[2] / max(largest[3], 1):.2f}x the peak above on the rank "
              "that reads it."
              + (f" The unchanged rerun took {rerun['seconds']:.1f} s (it checks sizes, times and hashes of "
                 "the sources and writes nothing); it scales with the number of files, "
                 f"x {planned / written:.1f}: about {fmt_s(rerun['seconds'] * planned / written)}." if rerun else ""),
              ""]
    else:
        L += ["Not measured yet (`bench_scale.sh BIN preprocess`).", ""]

    # ---- training
    L += ["### One training epoch per collection", ""]
    trained = {c: runs.get("train-" + c.replace(":", "-")) for c in COLLECTIONS}
    if not any(trained.values()):
        L += ["Not measured yet (`bench_scale.sh BIN train`).", ""]
    else:
        L += [f"`{shown(trained[next(c for c in COLLECTIONS if trained[c])]['command'])}`, per collection: "
              f"`{a.train_bin}` with configs/tpugraphs.yaml's model and training keys (default model: "
              "hidden 64, 3 layers; tile slate 32, layout slate 16, 8 graphs per step) and `train.epochs=1 "
              "--train-only`, per collection, on the tenth preprocessed with `preprocess.folds=2`: the two "
              "ranks are two fold groups of one rank each, training folds 0 and 1 at once, as a 2-core "
              "machine trains a 5-fold run. Training seconds, evaluation seconds (scoring the held-out fold and "
              "valid after the epoch) and configs/s are the epoch lines' (`train Xs, eval Ys`).", "",
              "| collection | fold | train graphs | train s | configs/s | oof + valid graphs | eval s | "
              "peak RSS per rank (MiB) | run wall s | load 1 min |", "|---|---|---|---|---|---|---|---|---|---|"]
        per_coll = {}
        for c in COLLECTIONS:
            r = trained[c]
            if not r:
                L.append(f"| {c} | not measured | | | | | | | | |")
                continue
            folds, valid, settings = parse_training(r["log"], c)
            for f in sorted(folds):
                d = folds[f]
                L.append(f"| {c} | {f} | {d.get('train', '?')} | {d.get('train_s', float('nan')):.0f} | "
                         f"{d.get('configs_per_s', float('nan')):.0f} | {d.get('oof', 0)} + {valid} | "
                         f"{d.get('eval_s', float('nan')):.0f} | {' / '.join(f'{m:.0f}' for m in r['rss_mb'])} | "
                         f"{r['seconds']:.0f} | {r['load_start']:.2f} → {r['load_end']:.2f} |")
            ok = [d for d in folds.values() if "train_s" in d and "train" in d and "steps" in d]
            if ok:
                ev = sum(d.get("oof", 0) + valid for d in ok)
                per_coll[c] = dict(step_s=sum(d["train_s"] for d in ok) / sum(d["steps"] for d in ok),
                                   steps=max(d["steps"] for d in ok), lone=any(d["train"] == 1 for d in ok),
                                   b=sum(d["eval_s"] for d in ok) / max(ev, 1), rss=max(r["rss_mb"]),
                                   cps=sum(d["configs_per_s"] for d in ok) / len(ok),
                                   gps=settings.get("graphs_per_step", 8), eval_every=settings.get("eval_every", 1))
        L.append("")
        if per_coll:
            logs = [r["log"] for r in trained.values() if r]
            L += full_run_estimate(per_coll, plan, pre_release, byte_ratio, logs)
    replace_section(a.results, "Release scale", "\n".join(L))
    print("\n".join(L))


def release_steps(m, R):
    """Steps an epoch of a release fold: the trainer's plan (TrainSettings::steps_per_epoch_by_cost)
    is the larger of one pass over the fold's train graphs and a floor; the floor and its caps
    do not depend on the number of graphs (min_steps_per_epoch; the config-passes cap binds only
    on folds of few configs; the node-config cap on the cost of a step, whose size distribution
    the tenth keeps) unless a fold has one train graph. So a release fold plans the tenth's
    steps, or its own pass when that is longer."""
    return max(m["steps"], math.ceil(0.8 * R / m["gps"]))


def evaluated_epochs(every):
    return sum(1 for e in range(1, EPOCHS + 1) if e % every == 0 or e == EPOCHS)


def full_run_estimate(per_coll, plan, pre_release, byte_ratio, logs):
    L = ["### A full configs/tpugraphs.yaml run, estimated", "",
         f"From the measured costs: s = seconds per training step, b = evaluation seconds per "
         f"evaluated graph (one rank, one fold model). For the release's graphs (R train, V valid, T "
         f"test per collection) with {FOLDS} folds and {EPOCHS} epochs, a fold model trains {EPOCHS} "
         f"epochs of P steps, P the trainer's plan for a release fold (the larger of the tenth's "
         f"steps and one pass over 4/5 R graphs at graphs_per_step: the plan's floor does not grow "
         f"with the graphs), and scores its R/5 + V held-out and valid graphs after each of E "
         f"epochs (train.eval_every; the last always), then predicts valid and test once: "
         f"{EPOCHS} x P x s + E x b x (R/5 + V) + b x (V + T). Evaluation share = E x b x (R/5 + V) "
         f"over that sum. A machine with G fold groups runs ceil({FOLDS}/G) rounds of them per "
         f"collection, collections one after another; a group of g > 1 ranks trains at g x "
         f"{GROUP_EFFICIENCY} (the training bench's 2-rank efficiency). The sample keeps the size "
         "distribution, so per-step and per-graph costs carry over; they were measured with one rank "
         "per core, as every layout below runs.", "",
         "| collection | s (s/step) | P: steps an epoch, tenth → release | b (s/graph) | E | configs/s | "
         "training | evaluation | one fold model, release | evaluation share | peak RSS per rank, tenth (MiB) |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    fold_model, lone = {}, []
    for c, m in per_coll.items():
        R, V, T = (plan.get((c, s), [0])[0] for s in ("train", "valid", "test"))
        P, E = release_steps(m, R), evaluated_epochs(m["eval_every"])
        train, evaluation = EPOCHS * P * m["step_s"], E * m["b"] * (0.2 * R + V)
        t = train + evaluation + m["b"] * (V + T)
        fold_model[c] = t
        if m["lone"]:
            lone.append(c)
        L.append(f"| {c} | {m['step_s']:.3f} | {m['steps']} → {P} | {m['b']:.3f} | {E} | {m['cps']:.0f} | "
                 f"{fmt_s(train)} | {fmt_s(evaluation)} | {fmt_s(t)} | {100 * evaluation / t:.0f}% | {m['rss']:.0f} |")
    if lone:
        L += ["", f"A fold of the tenth had a single train graph ({', '.join(lone)}): its plan follows "
              "that graph's configs (train.single_graph_min_config_passes_per_epoch), so its steps "
              "do not carry over to the release's folds of many graphs; the estimate above uses them."]
    held = [float(x) for log in logs for x in re.findall(r"\): ([\d.]+) MB in memory", open(log).read())]
    L += ["", f"Memory per rank: the data a rank holds (the trainer's 'loaded ... MB in memory' lines: at "
          f"most {max(held, default=0):.1f} MB per graph set here) grows with the number of graphs, "
          f"x 10 at the release's scale, tens of MB; the peak is the working memory of the largest "
          "graph's slates and evaluation chunks, which the tenth holds (its largest graphs are the "
          "release's largest, see the table above), so the release's peak per rank is about the "
          "tenth's: up to the figure above, per collection."]
    missing = [c for c in COLLECTIONS if c not in per_coll]
    L += ["", "| machine | ranks | fold groups x ranks | rounds | training | preprocessing | total |",
          "|---|---|---|---|---|---|---|"]
    pre = pre_release or 0.0
    for nodes in (1, 2, 3, 5):
        ranks = 2 * nodes
        groups = min(ranks, FOLDS)
        per_group = ranks // groups
        rounds = math.ceil(FOLDS / groups)
        speed = per_group * (GROUP_EFFICIENCY if per_group > 1 else 1.0)
        train = sum(rounds * t / speed for t in fold_model.values())
        # Preprocessing spreads files over all ranks balanced by size.
        p = pre / nodes
        name = "this machine" if nodes == 1 else f"{nodes} such nodes"
        L.append(f"| {name} | {ranks} | {groups} x {per_group} | {rounds} | {fmt_s(train)} | "
                 f"{fmt_s(p) if pre else 'n/a'} | {fmt_s(train + p)} |")
    L += ["", "Per added node (2 cores each): fold groups grow until there is one per fold (5), "
          "which takes the training from 3 rounds to 2 (2 nodes) to 1 (3 nodes); beyond that more "
          "ranks join each group (data-parallel), each added node then saving about its share "
          "of the rank count. Preprocessing divides over the nodes while there are files to "
          "deal, down to the largest file's time. Prediction is counted per fold model; "
          "ensembling and writing the submission are seconds."
          + (f" Not measured, so not in the totals: {', '.join(missing)}." if missing else ""), ""]
    return L


if __name__ == "__main__":
    main()
