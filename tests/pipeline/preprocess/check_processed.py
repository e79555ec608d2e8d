#!/usr/bin/python3
"""Checks a tpuperf processed_dir against the raw npz tree it came from, recomputing
every step independently with numpy (no tpuperf code): config dedup (unique rows, min
runtime), k-hop pruning (frontier expansion over an undirected adjacency), bridges across
pruned nodes (sums of sparse matrix products), re-padding of
the minor_to_major columns (shards hold untransformed features; schema version 2 keeps the
transform in the manifest only), exact decoding of the base-7 packed layout configs, fold
grouping by model family, and the test split left untouched.

usage: check_processed.py RAW_DIR PROCESSED_DIR PRUNE FOLDS [OTHER_PROCESSED_DIR]
PRUNE: the hops of every layout collection, then any per-collection ones and the bridges'
pruned nodes (preprocess.prune_bridges, default 0), e.g. "1,layout:xla:default=2,bridges=3".
With OTHER_PROCESSED_DIR, also asserts that both outputs hold identical graphs (e.g. a
1-rank and a 2-rank run) and identical feature transforms.
"""
import os
import re
import sys

import h5py
import numpy as np
import scipy.sparse as sp
import yaml


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def family(name):
    m = re.match(r"[A-Za-z]+", name)
    return m.group(0).lower() if m else name


def repad(feat):
    feat = feat.copy()
    dims = feat[:, 21:27]
    nonzero = dims != 0
    # rank = number of leading non-zero shape dims
    rank = np.where(nonzero.all(1), 6, np.argmin(nonzero, axis=1))
    pos = np.arange(6)[None, :]
    feat[:, 134:140] = np.where(pos >= rank[:, None], -1.0, feat[:, 134:140])
    return feat


def within_hops(n, edges, seeds, hops):
    if hops < 0:
        return np.ones(n, bool)
    keep = np.zeros(n, bool)
    keep[seeds] = True
    for _ in range(hops):
        nxt = keep.copy()
        if len(edges):
            u, v = edges[:, 0], edges[:, 1]
            nxt[v[keep[u]]] = True
            nxt[u[keep[v]]] = True
        keep = nxt
    return keep


def bridges(n, edges, keep, max_pruned):
    """Rows [u, y], kept u and y not joined by an edge, where u consumes y through a chain
    u -> p1 -> ... -> pk -> y of 1..max_pruned pruned nodes, in (u, y) order. The chains
    with k pruned nodes are the non-zeros of A (D A)^k, A the consumer-by-producer
    adjacency and D the diagonal of pruned nodes."""
    if max_pruned <= 0 or len(edges) == 0:
        return np.zeros((0, 2), np.int64)
    a = sp.csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    a.data[:] = 1.0
    d = sp.diags((~keep).astype(float))
    walk, reach = a, sp.csr_matrix((n, n))
    for _ in range(max_pruned):
        walk = ((walk @ d @ a) > 0).astype(float)
        reach = reach + walk
    r = reach.tocoo()
    u, y = r.row.astype(np.int64), r.col.astype(np.int64)
    direct = np.asarray(a[u, y]).reshape(-1) > 0
    ok = keep[u] & keep[y] & (u != y) & ~direct
    out = np.stack([u[ok], y[ok]], 1)
    return out[np.lexsort((out[:, 1], out[:, 0]))]


def decode(packed, nc):
    out = np.zeros((len(packed), 18), np.int64)
    p = packed.astype(object)  # exact integer arithmetic
    for j in range(18):
        out[:, j] = np.array([x % 7 for x in p], np.int64) - 1
        p = np.array([x // 7 for x in p], dtype=object)
    return out.reshape(-1, nc, 18) if nc else out.reshape(-1, 0, 18)


class Shards:
    def __init__(self, root):
        self.root, self.open = root, {}

    def graph(self, shard, i):
        if shard not in self.open:
            f = h5py.File(os.path.join(self.root, shard), "r")
            # Schema version 2: the transform lives in the manifest, not in the shards.
            if int(f.attrs["schema_version"]) != 2 or "feature_transform" in f:
                fail(f"{shard}: schema_version {f.attrs['schema_version']} with groups "
                     f"{sorted(f.keys())}, expected 2 without feature_transform")
            self.open[shard] = f
        f = self.open[shard]

        def rows(name, off):
            o = f[off][:]
            return f[name][o[i]:o[i + 1]]

        g = dict(name=f["name"][i].decode() if isinstance(f["name"][i], bytes) else str(f["name"][i]),
                 fold=int(f["fold"][i]),
                 node_feat=rows("node_feat", "node_offsets"),
                 node_opcode=rows("node_opcode", "node_offsets"),
                 edge_index=rows("edge_index", "edge_offsets"),
                 config_runtime=rows("config_runtime", "config_offsets"))
        if f.attrs["collection"].startswith(b"tile") if isinstance(f.attrs["collection"], bytes) \
                else str(f.attrs["collection"]).startswith("tile"):
            g["config_feat"] = rows("config_feat", "config_offsets")
            g["normalizers"] = rows("config_runtime_normalizers", "config_offsets")
        else:
            g["node_config_ids"] = rows("node_config_ids", "config_node_offsets")
            g["packed"] = rows("node_config_packed", "packed_offsets")
            g["node_splits"] = rows("node_splits", "split_offsets")
        return g


def unique_min(rows, runtime):
    """dict: row bytes -> min runtime, and the number of distinct rows."""
    best = {}
    for r, t in zip(rows, runtime):
        k = r.tobytes()
        best[k] = min(best.get(k, t), t)
    return best


def check_graph(raw, man_graph, g, hops, max_bridged):
    coll, split, name = man_graph["collection"], man_graph["split"], man_graph["name"]
    parts = coll.split(":")
    path = os.path.join(raw, *( ["tile", "xla"] if parts[0] == "tile" else ["layout", parts[1], parts[2]]),
                        split, name + ".npz")
    z = np.load(path)
    where = f"{coll} {split} {name}"
    if g["name"] != name:
        fail(f"{where}: shard holds {g['name']}")
    if parts[0] == "tile":
        feat = repad(z["node_feat"])
        if not np.array_equal(g["node_feat"], feat):
            fail(f"{where}: node_feat differs from the re-padded source")
        if not np.array_equal(g["edge_index"], z["edge_index"]):
            fail(f"{where}: tile edges changed")
        cf, rt = z["config_feat"], z["config_runtime"]
        if split == "test":
            if not (np.array_equal(g["config_feat"], cf) and np.array_equal(g["config_runtime"], rt)):
                fail(f"{where}: test configs were changed")
        else:
            best = unique_min(cf, rt)
            if len(best) != len(g["config_runtime"]):
                fail(f"{where}: {len(g['config_runtime'])} configs after dedup, expected {len(best)}")
            for r, t in zip(g["config_feat"], g["config_runtime"]):
                if best[r.tobytes()] != t:
                    fail(f"{where}: runtime {t} is not the min {best[r.tobytes()]} of its duplicates")
        return 0
    # layout
    n = z["node_feat"].shape[0]
    ids = z["node_config_ids"]
    keep = within_hops(n, z["edge_index"], ids, hops)
    kept = np.nonzero(keep)[0]
    remap = -np.ones(n, np.int64)
    remap[kept] = np.arange(len(kept))
    if not np.array_equal(g["node_feat"], repad(z["node_feat"])[kept]):
        fail(f"{where}: pruned node set or features differ from the independent computation")
    if not np.array_equal(g["node_opcode"], z["node_opcode"][kept]):
        fail(f"{where}: opcodes differ")
    e = z["edge_index"]
    b = bridges(n, e, keep, max_bridged if hops >= 1 else 0)
    e = np.concatenate([e[keep[e[:, 0]] & keep[e[:, 1]]], b]).astype(np.int64)
    if not np.array_equal(g["edge_index"], remap[e]):
        fail(f"{where}: pruned edges (or their {len(b)} bridges) differ")
    if not np.array_equal(g["node_config_ids"], remap[ids]):
        fail(f"{where}: node_config_ids not re-indexed")
    splits = z["node_splits"].reshape(-1)
    expect_splits = np.searchsorted(kept, splits, side="left")
    if not np.array_equal(g["node_splits"], expect_splits):
        fail(f"{where}: node_splits not re-indexed")
    nc = len(ids)
    src = z["node_config_feat"].astype(np.int64).reshape(len(z["config_runtime"]), -1)
    got = decode(g["packed"], nc).reshape(len(g["config_runtime"]), -1)
    rt = z["config_runtime"]
    if split == "test":
        if not (np.array_equal(got, src) and np.array_equal(g["config_runtime"], rt)):
            fail(f"{where}: test configs were changed")
    else:
        best = unique_min(src, rt)
        if len(best) != len(got):
            fail(f"{where}: {len(got)} configs after dedup, expected {len(best)}")
        for r, t in zip(got, g["config_runtime"]):
            if best.get(r.tobytes()) != t:
                fail(f"{where}: decoded config not in the source or runtime not the min")
    return len(b)


def load(processed):
    with open(os.path.join(processed, "manifest.yaml")) as f:
        return yaml.safe_load(f)


def parse_prune(spec):
    """"1,layout:xla:default=2,bridges=3" -> (1, {"layout:xla:default": 2}, 3)."""
    first, *rest = spec.split(",")
    named = {c: int(h) for c, h in (e.split("=") for e in rest)}
    max_bridged = named.pop("bridges", 0)
    return int(first), named, max_bridged


def main():
    raw, processed, k = sys.argv[1], sys.argv[2], int(sys.argv[4])
    hops, own_hops, max_bridged = parse_prune(sys.argv[3])
    m = load(processed)
    shards = Shards(processed)
    fam_fold = {}
    num_bridges = 0
    for mg in m["graphs"]:
        g = shards.graph(mg["shard"], mg["index"])
        num_bridges += check_graph(raw, mg, g, own_hops.get(mg["collection"], hops), max_bridged)
        if g["fold"] != mg["fold"]:
            fail(f"{mg['name']}: fold {g['fold']} in shard, {mg['fold']} in manifest")
        if mg["split"] == "train":
            if not 0 <= mg["fold"] < k:
                fail(f"{mg['name']}: fold {mg['fold']} not in [0, {k})")
            key = (mg["collection"], family(mg["name"]))
            if fam_fold.setdefault(key, mg["fold"]) != mg["fold"]:
                fail(f"family {key} split across folds")
        elif mg["fold"] != {"valid": -1, "test": -2}[mg["split"]]:
            fail(f"{mg['name']}: {mg['split']} graph has fold {mg['fold']}")
    for sh in m["shards"]:
        if os.path.getsize(os.path.join(processed, sh["file"])) != sh["size"]:
            fail(f"shard {sh['file']} size differs from the manifest")
    print(f"checked {len(m['graphs'])} graphs in {len(m['shards'])} shards against the sources "
          f"({num_bridges} bridges)")
    if len(sys.argv) > 5:
        other = load(sys.argv[5])
        oshards = Shards(sys.argv[5])
        ours = {(g["collection"], g["split"], g["name"]): g for g in m["graphs"]}
        theirs = {(g["collection"], g["split"], g["name"]): g for g in other["graphs"]}
        if ours.keys() != theirs.keys():
            fail("the two outputs hold different graphs")
        for key, mg in ours.items():
            a, b = shards.graph(mg["shard"], mg["index"]), oshards.graph(theirs[key]["shard"], theirs[key]["index"])
            for f in a:
                if not np.array_equal(np.asarray(a[f]), np.asarray(b[f])):
                    fail(f"{key}: field {f} differs between the two outputs")
        if m["feature_transforms"] != other["feature_transforms"]:
            fail("feature transforms differ between the two outputs")
        print("both outputs hold identical graphs and transforms")


if __name__ == "__main__":
    main()
