#!/usr/bin/python3
"""Baseline for the preprocessing benchmark: the per-file steps of tpuperf-preprocess done
with numpy, over the files in 2 processes (as tpuperf-preprocess runs on 2 ranks).

Per file: np.load, shape/dtype/value validation, dedup of re-measured configs (identical
rows collapse to their first occurrence, keeping the minimum runtime; train and valid
only, test keeps its indices), for layout files 1-hop pruning around the configurable
nodes with re-indexing of edges, node_config_ids and node_splits, base-7 packing of
node_config_feat, then np.savez_compressed of the result.

The dedup sorts the config rows seen as bytes (as tpuperf compares them bitwise): O(c log c)
per file, not the pairwise O(c^2) of the published solutions. As a numpy expert writes it
(--peer expert, the default), each row is one opaque np.void value, so np.unique sorts one
1-D array with memcmp; and the base-7 packing is a float64 matrix-vector product (BLAS;
exact, since every packed value is below 7^18 < 2^53). --peer original keeps this script's
first version, np.unique(axis=0) (numpy sorts a 2-D array field by field, ~50x slower) and
an integer product (no BLAS for integers), so that figures taken against it can be
reproduced. Both write the same outputs.

Usage:
  reference_preprocess.py --input-root RAW --out DIR [--files REL ...] [--file-list F]
                          [--processes N] [--report JSON] [--peer expert|original]
Files are relative to RAW (e.g. tile/xla/train/x.npz); the processes take them largest
first, each the next file when it is free. The report gives per file its seconds and
CPU seconds, and per process its peak RSS.
"""
import argparse
import json
import multiprocessing
import os
import resource
import sys
import time

import numpy as np

NODE_FEAT_DIM = 140
TILE_CONFIG_DIM = 24
LAYOUT_CONFIG_DIM = 18
SHAPE_DIMS = 21
MINOR_TO_MAJOR = 134
MAX_RANK = 6


class BadFile(Exception):
    pass


def require(cond, key, reason):
    if not cond:
        raise BadFile(f"{key}: {reason}")


def check_common(z, n_key="node_feat"):
    feat = z["node_feat"]
    require(feat.ndim == 2 and feat.shape[1] == NODE_FEAT_DIM, n_key, f"shape {feat.shape}")
    n = feat.shape[0]
    require(n >= 1, n_key, "no nodes")
    require(np.isfinite(feat).all(), n_key, "not finite")
    op = z["node_opcode"]
    require(op.shape == (n,), "node_opcode", f"shape {op.shape}")
    require(((op >= 0) & (op <= 120)).all(), "node_opcode", "outside 0..120")
    edges = z["edge_index"]
    require(edges.ndim == 2 and edges.shape[1] == 2, "edge_index", f"shape {edges.shape}")
    require(((edges >= 0) & (edges < n)).all(), "edge_index", "endpoint out of range")
    return n


def check_tile(z):
    check_common(z)
    cf = z["config_feat"]
    c = z["config_runtime"].shape[0]
    require(c >= 1, "config_runtime", "no configs")
    require(cf.shape == (c, TILE_CONFIG_DIM), "config_feat", f"shape {cf.shape}")
    require(np.isfinite(cf).all(), "config_feat", "not finite")
    norm = z["config_runtime_normalizers"]
    require(norm.shape == (c,), "config_runtime_normalizers", f"shape {norm.shape}")
    require((z["config_runtime"] >= 0).all(), "config_runtime", "negative")
    require((norm >= 1).all(), "config_runtime_normalizers", "below 1")


def check_layout(z):
    n = check_common(z)
    ids = z["node_config_ids"]
    require(ids.ndim == 1 and ids.size >= 1, "node_config_ids", f"shape {ids.shape}")
    require(((ids >= 0) & (ids < n)).all(), "node_config_ids", "out of range")
    require(np.unique(ids).size == ids.size, "node_config_ids", "not unique")
    rt = z["config_runtime"]
    c = rt.shape[0]
    require(c >= 1, "config_runtime", "no configs")
    require((rt >= 0).all(), "config_runtime", "negative")
    ncf = z["node_config_feat"]
    require(ncf.shape == (c, ids.size, LAYOUT_CONFIG_DIM), "node_config_feat", f"shape {ncf.shape}")
    as_int = ncf.astype(np.int8)
    require((as_int == ncf).all(), "node_config_feat", "not integers")
    require(((as_int >= -1) & (as_int <= 5)).all(), "node_config_feat", "outside -1..5")
    splits = z["node_splits"].reshape(-1)
    require(((splits >= 0) & (splits <= n)).all() and (np.diff(splits) >= 0).all(),
            "node_splits", "not non-decreasing within [0, n]")
    return as_int


def row_groups_void(rows):
    """np.unique over each row as one opaque value: (first index, group of each row)."""
    flat = np.ascontiguousarray(rows).reshape(rows.shape[0], -1)
    as_void = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()
    _, first, group = np.unique(as_void, return_index=True, return_inverse=True)
    return first, group.reshape(-1)


def row_groups_axis0(rows):
    """The original peer: np.unique(axis=0) over the rows' bytes (sorted field by field)."""
    as_bytes = np.ascontiguousarray(rows).reshape(rows.shape[0], -1).view(np.uint8)
    _, first, group = np.unique(as_bytes, axis=0, return_index=True, return_inverse=True)
    return first, group.reshape(-1)


PEER = {"expert": {}, "original": {}}  # filled below, once the functions exist


def dedup_unique(rows, runtime, peer="expert"):
    """Identical rows (bytewise) collapse; returns (kept source indices in order, min runtimes)."""
    first, group = PEER[peer]["groups"](rows)
    # Per group the minimum runtime: sort by (group, runtime), take each group's first.
    order = np.lexsort((runtime, group))
    starts = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0])
    best = runtime[order[starts]].astype(np.int64)  # groups in np.unique's (sorted) order
    by_first = np.argsort(first, kind="stable")
    return first[by_first].astype(np.int64), best[by_first]


def repad_minor_to_major(feat):
    nonzero = feat[:, SHAPE_DIMS:SHAPE_DIMS + MAX_RANK] != 0
    rank = np.cumprod(nonzero, axis=1).sum(axis=1)
    pad = np.arange(MAX_RANK)[None, :] >= rank[:, None]
    feat[:, MINOR_TO_MAJOR:MINOR_TO_MAJOR + MAX_RANK][pad] = -1.0


def prune(z, hops):
    n = z["node_feat"].shape[0]
    edges = z["edge_index"].astype(np.int64)
    keep = np.zeros(n, bool)
    keep[z["node_config_ids"]] = True
    for _ in range(hops):
        frontier = keep.copy()
        frontier[edges[keep[edges[:, 0]], 1]] = True
        frontier[edges[keep[edges[:, 1]], 0]] = True
        keep = frontier
    kept_nodes = np.flatnonzero(keep)
    new_id = np.cumsum(keep) - 1
    edge_kept = keep[edges[:, 0]] & keep[edges[:, 1]]
    out = {
        "node_feat": z["node_feat"][kept_nodes].astype(np.float32),
        "node_opcode": z["node_opcode"][kept_nodes].astype(np.uint8),
        "edge_index": new_id[edges[edge_kept]].astype(np.int32),
        "node_config_ids": new_id[z["node_config_ids"]].astype(np.int32),
        "node_splits": np.searchsorted(kept_nodes, z["node_splits"].reshape(-1)).astype(np.int64),
    }
    return out


def pack_base7_float64(ncf_int8):
    """c x nc x 18 in -1..5 -> c x nc uint64, value v at position j worth (v + 1) * 7^j: a
    float64 product, exact because the largest packed value, 7^18 - 1, is below 2^53."""
    weights = 7.0 ** np.arange(LAYOUT_CONFIG_DIM, dtype=np.float64)
    digits = ncf_int8.astype(np.float64) + 1.0
    return (digits @ weights).astype(np.uint64)


def pack_base7_uint64(ncf_int8):
    """The original peer: the same packing as an integer product (numpy has no BLAS for it)."""
    weights = (7 ** np.arange(LAYOUT_CONFIG_DIM, dtype=np.uint64)).astype(np.uint64)
    digits = (ncf_int8.astype(np.int16) + 1).astype(np.uint64)
    return (digits * weights).sum(axis=2, dtype=np.uint64)


PEER["expert"].update(groups=row_groups_void, pack=pack_base7_float64)
PEER["original"].update(groups=row_groups_axis0, pack=pack_base7_uint64)


def process_tile(z, split, peer):
    check_tile(z)
    feat = z["node_feat"].astype(np.float32)
    repad_minor_to_major(feat)
    rt = z["config_runtime"]
    cf = z["config_feat"].astype(np.float32)
    norm = z["config_runtime_normalizers"]
    if split != "test":
        kept, rt = dedup_unique(cf, rt, peer)
        cf, norm = cf[kept], norm[kept]
    return {"node_feat": feat, "node_opcode": z["node_opcode"].astype(np.uint8),
            "edge_index": z["edge_index"].astype(np.int32), "config_feat": cf,
            "config_runtime": rt.astype(np.int64),
            "config_runtime_normalizers": norm.astype(np.int64)}


def process_layout(z, split, hops, peer):
    ncf = check_layout(z)
    rt = z["config_runtime"].astype(np.int64)
    if split != "test":
        kept, rt = dedup_unique(ncf.reshape(ncf.shape[0], -1), rt, peer)
        ncf = ncf[kept]
    out = prune(z, hops)
    repad_minor_to_major(out["node_feat"])
    out["config_runtime"] = rt
    out["node_config_packed"] = PEER[peer]["pack"](ncf)
    return out


def process_file(root, rel, out_dir, hops, peer):
    parts = rel.split("/")
    split = parts[-2]
    with np.load(os.path.join(root, rel)) as npz:
        z = {k: npz[k] for k in npz.files}
    if parts[0] == "tile":
        out = process_tile(z, split, peer)
    else:
        out = process_layout(z, split, hops, peer)
    dest = os.path.join(out_dir, rel)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    np.savez_compressed(dest, **out)
    return out["config_runtime"].shape[0]


def run_one(job):
    """One file in a worker process: its record, with the worker's pid and peak RSS so far."""
    root, rel, out_dir, hops, peer = job
    t0, c0 = time.monotonic(), time.process_time()
    rec = {"file": rel, "bytes": os.path.getsize(os.path.join(root, rel))}
    try:
        rec["configs_after"] = int(process_file(root, rel, out_dir, hops, peer))
    except BadFile as e:
        rec["rejected"] = str(e)
    rec.update(seconds=time.monotonic() - t0, cpu_seconds=time.process_time() - c0, pid=os.getpid(),
               peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return rec


def read_files(args):
    files = list(args.files or [])
    if args.file_list:
        with open(args.file_list) as f:
            files += [line.strip() for line in f if line.strip() and not line.startswith("#")]
    if not files:
        sys.exit("no files given (--files or --file-list)")
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input-root", required=True, help="the npz tree (…/npz)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--files", nargs="*", help="files relative to the input root")
    ap.add_argument("--file-list", help="file with one relative path a line")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--prune-hops", type=int, default=1)
    ap.add_argument("--report", help="write a JSON report here")
    ap.add_argument("--peer", choices=sorted(PEER), default="expert",
                    help="expert: void-view dedup and float64 packing (default); original: "
                         "np.unique(axis=0) and the integer product of the first version")
    args = ap.parse_args()
    files = read_files(args)
    files.sort(key=lambda rel: -os.path.getsize(os.path.join(args.input_root, rel)))
    jobs = [(args.input_root, rel, args.out, args.prune_hops, args.peer) for rel in files]
    start = time.monotonic()
    done = []
    with multiprocessing.Pool(args.processes) as pool:
        for rec in pool.imap_unordered(run_one, jobs, chunksize=1):
            done.append(rec)
            print(f"{len(done)}/{len(files)} {rec['file']}: {rec['bytes'] / 1e6:.1f} MB in "
                  f"{rec['seconds']:.1f} s", flush=True)
    seconds = time.monotonic() - start
    rss = {}
    for d in done:
        rss[d["pid"]] = max(rss.get(d["pid"], 0), d["peak_rss_mb"])
    report = {"files_given": len(files), "processes": args.processes, "peer": args.peer, "done": done,
              "rejected": [{"file": d["file"], "reason": d["rejected"]} for d in done if "rejected" in d],
              "seconds": seconds, "cpu_seconds": sum(d["cpu_seconds"] for d in done),
              "bytes": sum(d["bytes"] for d in done),
              "peak_rss_mb": sorted(rss.values(), reverse=True)}
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)
    print(f"done {len(done)} files, {report['bytes'] / 1e6:.1f} MB in {seconds:.1f} s with "
          f"{args.processes} processes")


if __name__ == "__main__":
    main()
