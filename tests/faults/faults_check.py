#!/usr/bin/python3
"""Checks of the faults suite, independent of tpuperf's code (numpy, h5py, yaml only).

  faults_check.py same REF DIR [--clean]
      DIR holds the same graphs (content, fold, counts) and feature transforms as REF,
      whatever their shard layout or generation names; --clean also requires that DIR
      holds no temporary files and no shard the manifest does not list.
  faults_check.py bad-inputs CASES_TSV RUNS_TSV REF_DIR OUT_MD
      every run of RUNS_TSV (case, ranks, processed dir, log, exit code, seconds, peak
      RSS kB) rejected exactly its case's files, naming file, key and reason, exited with
      3, and left the good graphs identical to REF_DIR. Writes a markdown table to OUT_MD.
  faults_check.py bad-records CASES_JSON RUNS_TSV GOOD_DIR STAGE_DIR ALL_DIR OUT_MD
      every run of RUNS_TSV (name, output dir, log, exit code, seconds, peak RSS kB,
      rejected TSV) of tpuperf-featurize on make_bad_records.py's cases exited with 3,
      rejected exactly what its cases expect (file, record and reason, in the TSV and the
      log) and wrote every other output equal to the good run's (GOOD_DIR); run "all"
      holds every case at once as ALL_DIR/<case>.pb. Writes a markdown table to OUT_MD.
  faults_check.py metrics REF_CSV CSV
      the two metrics.csv hold the same rows (collection, fold, epoch, split) with the
      same loss and score (timing columns may differ).
  faults_check.py flip SHARD DATASET
      flips one byte in the middle of the first stored chunk of DATASET (its data, not
      HDF5's metadata) and prints the names of the graphs with rows in that chunk, one a
      line (none for a per-graph table, whose chunk holds every graph's entry).
  faults_check.py results RESULTS_MD SECTION BODY_FILE
      replaces (or appends) SECTION of RESULTS_MD with BODY_FILE, under a lock, so the
      suite's scripts can run in parallel.
  faults_check.py publish BUILT_MD TRACKED_MD
      copies every section of BUILT_MD (the suite's results under the build directory)
      into TRACKED_MD (tests/faults/RESULTS.md); run by jobs/update_docs.sh.
"""
import fcntl
import hashlib
import json
import os
import re
import sys

import h5py
import numpy as np
import yaml

FIELDS = {  # dataset -> offsets naming its rows
    "node_feat": "node_offsets", "node_opcode": "node_offsets", "edge_index": "edge_offsets",
    "config_runtime": "config_offsets", "config_feat": "config_offsets",
    "config_runtime_normalizers": "config_offsets", "node_config_ids": "config_node_offsets",
    "node_config_packed": "packed_offsets", "node_splits": "split_offsets",
}
PER_GRAPH = ["fold", "num_nodes", "num_edges", "num_configs", "num_config_nodes",
             "configs_before", "nodes_before", "edges_before"]


def load_manifest(d):
    with open(os.path.join(d, "manifest.yaml")) as f:
        return yaml.safe_load(f)


def digest(d):
    """{(collection, split, name): sha1 of every row and per-graph value}, plus each
    collection's feature transform under (collection, 'transform')."""
    m = load_manifest(d)
    out, cache = {}, {}
    for g in m["graphs"]:
        if g["shard"] not in cache:
            with h5py.File(os.path.join(d, g["shard"]), "r") as f:
                cache[g["shard"]] = {k: f[k][()] for k in list(FIELDS) + list(set(FIELDS.values()))
                                     + PER_GRAPH + ["name"]}
        s, i = cache[g["shard"]], g["index"]
        h = hashlib.sha1()
        h.update(bytes(s["name"][i]).rstrip(b"\0"))
        for k in PER_GRAPH:
            h.update(np.int64(s[k][i]).tobytes())
        for k, off in FIELDS.items():
            rows = s[k][s[off][i]:s[off][i + 1]]
            h.update(k.encode() + str(rows.dtype).encode() + str(rows.shape).encode() + rows.tobytes())
        out[(g["collection"], g["split"], g["name"])] = h.hexdigest()
    for c, t in (m.get("feature_transforms") or {}).items():
        out[(c, "transform")] = hashlib.sha1(json.dumps(t, sort_keys=True).encode()).hexdigest()
    return out


def restricted(dig, collections):
    """The part of a digest that belongs to the given collections."""
    return {k: v for k, v in dig.items() if k[0] in collections}


def differences(ref, got):
    """Human-readable differences between two digests (empty: identical)."""
    diff = []
    for k in sorted(set(ref) | set(got)):
        if k not in got:
            diff.append("missing " + " ".join(k))
        elif k not in ref:
            diff.append("extra " + " ".join(k))
        elif ref[k] != got[k]:
            diff.append("differs " + " ".join(k))
    return diff


def leftovers(d):
    """Temporary files and shards/feature files the manifest does not reference."""
    m = load_manifest(d)
    listed = {sh["file"] for sh in m["shards"]} | set((m.get("feature_files") or {}).values())
    bad = []
    for root, _, files in os.walk(d):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), d)
            if ".tmp" in f or (f.endswith(".h5") and rel not in listed):
                bad.append(rel)
    return sorted(bad)


def cmd_same(argv):
    ref, d = argv[0], argv[1]
    diff = differences(digest(ref), digest(d))
    if "--clean" in argv:
        diff += ["left behind " + f for f in leftovers(d)]
    for line in diff[:20]:
        print(line)
    if diff:
        print(f"FAIL: {d} differs from {ref} ({len(diff)} differences)")
        return 1
    print(f"same graphs and transforms as {ref}")
    return 0


def read_tsv(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def read_rejected(d):
    path = os.path.join(d, "rejected.txt")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [line.rstrip("\n").split("\t", 2) for line in f if not line.startswith("#") and line.strip()]


SIGNS_OF_CRASH = re.compile(r"Segmentation fault|Aborted|core dumped|exited on signal|"
                            r"terminate called|std::bad_alloc|AddressSanitizer|runtime error:")


def check_run(cases, run, ref_digest):
    """Problems of one run (empty list: passed) and what it rejected, for the table."""
    names, ranks, d, log, rc, secs, rss = run
    want = {cases[n][0]: (n, cases[n][1], cases[n][2]) for n in names.split(",")}
    problems = []
    text = open(log, errors="replace").read()
    if rc == "124":
        problems.append("timed out (hang)")
    elif rc != "3":
        problems.append(f"exit code {rc}, expected 3")
    if SIGNS_OF_CRASH.search(text):
        problems.append("crash in log: " + SIGNS_OF_CRASH.search(text).group(0))
    rejected = read_rejected(d) or []
    got = {r[0]: r for r in rejected}
    for f in set(got) - set(want):
        problems.append(f"also rejected {f}")
    for f, (n, key, reason) in want.items():
        if f not in got:
            problems.append(f"{n}: not rejected")
            continue
        _, gkey, greason = (got[f] + ["", ""])[:3]
        if gkey != key:
            problems.append(f"{n}: key '{gkey}', expected '{key}'")
        if not re.search(reason, greason):
            problems.append(f"{n}: reason '{greason}' does not match /{reason}/")
        # The log names the file (absolute path), the key and the reason on one line.
        line = next((l for l in text.splitlines() if "rejected" in l and f in l), "")
        if not line or (key and f"key '{key}'" not in line) or greason not in line:
            problems.append(f"{n}: no log line naming file, key and reason")
    if os.path.exists(os.path.join(d, "manifest.yaml")):
        # A run may cover fewer collections than the reference (only the bad file's).
        diff = differences(restricted(ref_digest, load_manifest(d)["collections"]), digest(d))
        if diff:
            problems.append(f"good graphs differ from the run without bad files: {diff[:3]}")
    else:
        problems.append("no manifest written")
    return problems, got


def write_table(out_md, header, rows, failed, what):
    """The markdown table of a bad-input or bad-record check; returns the exit code."""
    with open(out_md, "w") as f:
        f.write(f"| {header} |\n|" + "---|" * (header.count("|") + 1) + "\n")
        f.write("\n".join(rows) + "\n")
    print(f"{len(rows) - failed} of {len(rows)} {what} runs passed")
    return 1 if failed else 0


def cmd_bad_inputs(argv):
    cases_tsv, runs_tsv, ref, out_md = argv
    cases = {r[0]: (r[1], r[2], r[3], r[4]) for r in read_tsv(cases_tsv)}
    ref_digest = digest(ref)
    rows, failed = [], 0
    for run in read_tsv(runs_tsv):
        problems, got = check_run(cases, run, ref_digest)
        names, ranks, _, _, rc, secs, rss = run
        failed += bool(problems)
        outcome = "PASS" if not problems else "FAIL: " + "; ".join(problems)
        if "," in names:
            what = f"all {len(names.split(','))} bad files at once"
            said = f"{len(got)} files rejected"
        else:
            what = f"`{names}`: {cases[names][3]} (`{cases[names][0]}`)"
            r = got.get(cases[names][0], ["", "", ""])
            said = f"key `{r[1] or '-'}`: {r[2]}".replace("|", "\\|")
        rows.append(f"| {what} | {ranks} | {rc} | {secs} | {int(rss) // 1024} | {said} | {outcome} |")
        if problems:
            print(f"FAIL {names} ({ranks} ranks): " + "; ".join(problems))
    return write_table(out_md, "case | ranks | exit | s | peak RSS MB | rejection (key: reason) | outcome",
                       rows, failed, "bad-input")


def npz_outputs(d):
    """{file stem: relative path} of the npz files under d."""
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            if f.endswith(".npz"):
                out[f[:-4]] = os.path.relpath(os.path.join(root, f), d)
    return out


def without_config(arrays, j):
    """A featurized file's arrays without config j (what a rejected run leaves)."""
    out = dict(arrays)
    for k in ("config_feat", "config_runtime", "config_runtime_normalizers", "node_config_feat"):
        if k in out:
            out[k] = np.delete(out[k], j, axis=0)
    return out


def same_arrays(a, b):
    return sorted(a) == sorted(b) and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and np.array_equal(a[k], b[k]) for k in a)


def load_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def expected_outputs(case, good, prefix):
    """{output stem in this run: (good stem, config index removed or None)} for a case."""
    source_dir = "npz/tile/" if case["source"].startswith("op_") else "npz/layout/"
    stems = [s for s, rel in good.items() if rel.startswith(source_dir)]
    src_stem = case["source"][:-3]
    out = {}
    for stem in stems:
        if "*" in case["lost"] or stem in case["lost"]:
            continue
        out[prefix + stem[len(src_stem):]] = (stem, case["shrunk"].get(stem))
    return out


def check_rejections(case, path, rows, text):
    problems = []
    got = [r for r in rows if r[0] == path]
    if len(got) != len(case["expect"]):
        problems.append(f"{len(got)} rejections of {path}, expected {len(case['expect'])}: {got}")
    for (record_re, reason_re), row in zip(case["expect"], got):
        if not re.search(record_re, row[1]) or not re.search(reason_re, row[2]):
            problems.append(f"rejection '{row[1]}: {row[2]}' does not match /{record_re}/ /{reason_re}/")
        if f"rejected {path}: {row[1]}: {row[2]}" not in text:
            problems.append(f"no log line naming {path}, '{row[1]}' and the reason")
    return problems


def check_outputs(expected, good_dir, good, out_dir):
    problems = []
    got = npz_outputs(out_dir)
    for stem in sorted(set(got) - set(expected)):
        problems.append(f"unexpected output {got[stem]}")
    for stem, (good_stem, removed) in sorted(expected.items()):
        if stem not in got:
            problems.append(f"lost output {stem}")
            continue
        want = load_npz(os.path.join(good_dir, good[good_stem]))
        if removed is not None:
            want = without_config(want, removed)
        if not same_arrays(load_npz(os.path.join(out_dir, got[stem])), want):
            problems.append(f"output {stem} differs from the good run's"
                            + (f" without config {removed}" if removed is not None else ""))
    return problems


def check_record_run(cases, run, good_dir, good, stage_dir, all_dir):
    """Problems of one tpuperf-featurize run over bad records (empty: passed)."""
    name, out_dir, log, rc, secs, rss, rejected_tsv = run
    text = open(log, errors="replace").read()
    problems = [] if rc == "3" else ["timed out (hang)" if rc == "124" else f"exit code {rc}, expected 3"]
    if SIGNS_OF_CRASH.search(text):
        problems.append("crash in log: " + SIGNS_OF_CRASH.search(text).group(0))
    rows = read_tsv(rejected_tsv) if os.path.exists(rejected_tsv) else []
    rows = [r for r in rows if not r[0].startswith("#")]
    if name == "all":
        runs_cases = [(c, os.path.join(all_dir, c["case"] + ".pb"), c["case"]) for c in cases.values()]
        expected = {}
    else:
        c = cases[name]
        runs_cases = [(c, os.path.join(stage_dir, c["file"]), c["source"][:-3])]
        # The good companion file of the other kind is featurized in the same run.
        companion = {"case": "-", "source": "module_tuning_data_layout.pb" if c["source"].startswith("op_")
                     else "op_tuning_data.pb", "lost": [], "shrunk": {}}
        expected = expected_outputs(companion, good, companion["source"][:-3])
    for c, path, prefix in runs_cases:
        problems += check_rejections(c, path, rows, text)
        expected.update(expected_outputs(c, good, prefix))
    known = {p for _, p, _ in runs_cases}
    problems += [f"also rejected {r[0]}: {r[1]}: {r[2]}" for r in rows if r[0] not in known]
    problems += check_outputs(expected, good_dir, good, out_dir)
    return problems, rows, len(expected)


def cmd_bad_records(argv):
    cases_json, runs_tsv, good_dir, stage_dir, all_dir, out_md = argv
    cases = {c["case"]: c for c in json.load(open(cases_json))}
    good = npz_outputs(good_dir)
    lines, failed = [], 0
    for run in read_tsv(runs_tsv):
        name, rc, secs, rss = run[0], run[3], run[4], run[5]
        problems, rows, kept = check_record_run(cases, run, good_dir, good, stage_dir, all_dir)
        failed += bool(problems)
        outcome = "PASS" if not problems else "FAIL: " + "; ".join(problems[:3])
        if name == "all":
            what, said = f"all {len(cases)} bad records at once", f"{len(rows)} rejections"
        else:
            what = f"`{name}`: {cases[name]['description']}"
            said = "<br>".join(f"`{r[1]}`: {r[2]}" for r in rows)
        said = said.replace("|", "\\|")
        lines.append(f"| {what} | {rc} | {secs} | {int(rss) // 1024} | {said} | {kept} | {outcome} |")
        if problems:
            print(f"FAIL {name}: " + "; ".join(problems))
    return write_table(out_md, "case | exit | s | peak RSS MB | rejections (record: reason) | outputs kept | outcome",
                       lines, failed, "bad-record")


def cmd_metrics(argv):
    import csv

    def load(p):
        with open(p) as f:
            return {(r["collection"], r["fold"], r["epoch"], r["split"]): (r["loss"], r["score"])
                    for r in csv.DictReader(f)}
    a, b = load(argv[0]), load(argv[1])
    problems = [f"missing row {k}" for k in sorted(set(a) - set(b))]
    problems += [f"extra row {k}" for k in sorted(set(b) - set(a))]
    problems += [f"{k}: {a[k]} != {b[k]}" for k in sorted(set(a) & set(b)) if a[k] != b[k]]
    for p in problems[:10]:
        print(p)
    if problems:
        print(f"FAIL: metrics differ ({len(problems)} rows)")
        return 1
    print(f"{len(a)} metric rows identical")
    return 0


def cmd_flip(argv):
    shard, name = argv
    with h5py.File(shard, "r") as f:
        ds = f[name]
        info = ds.id.get_chunk_info(0)
        rows = ds.chunks[0]
        graphs = []
        if name in FIELDS:
            off, names = f[FIELDS[name]][()], f["name"][()]
            first = info.chunk_offset[0]
            graphs = [bytes(names[i]).rstrip(b"\0").decode() for i in range(len(names))
                      if off[i] < first + rows and off[i + 1] > first]
    with open(shard, "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    for g in graphs:
        print(g)
    return 0


def replace_section(path, section, body):
    """Replaces (or appends) SECTION of the markdown file PATH with BODY, under a lock."""
    begin, end = f"<!-- begin {section} -->", f"<!-- end {section} -->"
    lock = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = open(path).read() if os.path.exists(path) else (
            "# Faults suite results\n\nWritten by the suite's scripts (`ctest -L faults`) under "
            "the build directory, and copied here by `bash jobs/update_docs.sh`; each "
            "section is replaced by the latest run of its script.\n")
        block = f"{begin}\n{body}\n{end}"
        if begin in text and end in text:
            text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        os.close(lock)


def cmd_results(argv):
    path, section, body_file = argv
    replace_section(path, section, open(body_file).read().rstrip("\n"))
    return 0


def cmd_publish(argv):
    """Copies every section of the suite's results under the build directory into the
    tracked document (sections the run did not write stay as they were)."""
    built, tracked = argv
    text = open(built).read()
    sections = re.findall(r"<!-- begin (.+?) -->\n(.*?)\n<!-- end \1 -->", text, re.S)
    for section, body in sections:
        replace_section(tracked, section, body)
    print(f"faults: {len(sections)} sections copied from {built} into {tracked}")
    return 0


def main(argv):
    cmds = {"same": cmd_same, "bad-inputs": cmd_bad_inputs, "bad-records": cmd_bad_records,
            "metrics": cmd_metrics, "flip": cmd_flip, "results": cmd_results,
            "publish": cmd_publish}
    if not argv or argv[0] not in cmds:
        print(__doc__)
        return 2
    return cmds[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
