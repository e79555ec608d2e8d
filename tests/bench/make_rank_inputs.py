"""Inputs of the ranker's latency bench (bench_rank.sh), in the release's format, built
from a generated tree's graphs so their features and layout values look like the real ones:

  tile_1k.npz                the tile graph with the most nodes, with 1,000 distinct configs
                             (its configs' tile sizes re-drawn as powers of two)
  layout_10k_nodes_1k.npz    the largest layout:xla:random graph repeated to 10,000 nodes
                             (copies chained by an edge), 100 configurable nodes, 1,000 configs
  layout_10k_nodes_100k.npz  the same graph with 100,000 configs

Each configurable node's 18 values in a config are those of a random config of the
template at the node it copies, drawn independently per node.
"""
import argparse
import glob
import os

import numpy as np

NODES = 10_000
CONFIGURABLE = 100


def largest(pattern, key):
    files = sorted(glob.glob(pattern))
    return max(files, key=lambda f: np.load(f)[key].shape[0])


def tile_input(root, out, rng):
    d = dict(np.load(largest(os.path.join(root, "tile/xla/*/*.npz"), "node_feat")))
    base = d["config_feat"]
    rows = base[rng.integers(0, len(base), 1000)].copy()
    # Tile sizes are the leading columns; powers of two up to 512 make the rows distinct.
    rows[:, :6] = 2.0 ** rng.integers(0, 10, (1000, 6))
    d["config_feat"] = rows.astype(np.float32)
    d["config_runtime"] = np.ones(1000, np.int64)
    d["config_runtime_normalizers"] = np.ones(1000, np.int64)
    np.savez_compressed(os.path.join(out, "tile_1k.npz"), **d)
    print(f"tile_1k.npz: {len(d['node_feat'])} nodes, 1000 configs")


def layout_graph(root):
    t = np.load(largest(os.path.join(root, "layout/xla/random/*/*.npz"), "node_feat"))
    n = len(t["node_feat"])
    copies = -(-NODES // n)
    feat = np.concatenate([t["node_feat"]] * copies)[:NODES]
    opcode = np.concatenate([t["node_opcode"]] * copies)[:NODES]
    edges = [t["edge_index"] + k * n for k in range(copies)]
    # Copy k's first node consumes copy k-1's last one, so the graph is connected.
    edges.append(np.array([[k * n, k * n - 1] for k in range(1, copies)], np.int64))
    edges = np.concatenate(edges)
    edges = edges[(edges < NODES).all(axis=1)]
    ids, ncf = t["node_config_ids"], t["node_config_feat"]
    # The template's configurable nodes in every copy, the first CONFIGURABLE of them.
    all_ids = np.concatenate([ids + k * n for k in range(copies)])
    keep = all_ids < NODES
    config_ids = all_ids[keep][:CONFIGURABLE]
    source_slot = np.tile(np.arange(len(ids)), copies)[keep][:CONFIGURABLE]
    graph = dict(node_feat=feat, node_opcode=opcode, edge_index=edges, node_config_ids=config_ids,
                 node_splits=np.array([[0, NODES]], np.int64))
    return graph, ncf, source_slot


def layout_input(graph, ncf, source_slot, configs, path, rng):
    pick = rng.integers(0, len(ncf), (configs, len(source_slot)))
    feat = ncf[pick, source_slot[None, :], :].astype(np.float32)
    np.savez_compressed(path, **graph, node_config_feat=feat, config_runtime=np.ones(configs, np.int64))
    print(f"{os.path.basename(path)}: {NODES} nodes, {len(source_slot)} configurable, {configs} configs")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--template", required=True, help="a generated tree's npz/ directory")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    tile_input(a.template, a.out, rng)
    graph, ncf, slot = layout_graph(a.template)
    layout_input(graph, ncf, slot, 1000, os.path.join(a.out, "layout_10k_nodes_1k.npz"), rng)
    layout_input(graph, ncf, slot, 100_000, os.path.join(a.out, "layout_10k_nodes_100k.npz"), rng)


if __name__ == "__main__":
    main()
