"""Reading what tpuperf writes, as plain Python objects (dicts, numpy arrays).

metrics.csv and submission.csv are read by the C++ readers training and tpuperf-score use
(trainer/eval/metrics_log.h, submission.h), so a file reads the same here as there; a
processed tree's HDF5 shards by h5py, following the layout common/shards/shard.h documents.
"""

import os

import numpy as np

from . import _core

METRICS_COLUMNS = ("collection", "fold", "epoch", "step", "split", "loss", "score", "configs_per_s", "elapsed_s",
                   "slowdown_1", "slowdown_5", "slowdown_10", "slowdown_5_own")


def read_metrics(path):
    """A run's metrics.csv as columns: a dict of numpy arrays of equal length, one per
    column of METRICS_COLUMNS. collection, split: str; fold (-1: the ensemble), epoch,
    step: int64; loss, score, configs_per_s, elapsed_s, slowdown_1/5/10, slowdown_5_own
    (the top-5 of the model's own picks, tile's kept config 0 not put in): float64, NaN
    where the row has no value (a train row has a loss, an oof or valid row a score).
    Files of runs from before the slowdown columns read with NaN there."""
    columns = _core.read_metrics(os.fspath(path))
    for key in ("collection", "split"):
        columns[key] = np.array(columns[key], dtype=str)
    return {key: columns[key] for key in METRICS_COLUMNS}


def cv_summary(metrics_path, collection):
    """The cross-validation figures report.md shows for one collection, from metrics.csv:
    cv_score (the mean over folds of each fold's best oof score, NaN if none), kept_epoch
    ({fold: the epoch whose checkpoint is best.pt}) and kept_oof_slowdown (the top-1, -5,
    -10 slowdowns of those epochs' oof rows, mean over folds)."""
    return _core.cv_summary(os.fspath(metrics_path), collection)


def read_submission(path):
    """submission.csv (or tpuperf-rank --csv's output): {ID: int64 array of config
    indices, best first}, IDs "<collection>:<graph>" in the file's order (sorted)."""
    return _core.read_submission(os.fspath(path))


# The per-graph datasets of a shard and the offsets that index their rows.
_SHARD_ROWS = {
    "node_feat": "node_offsets",
    "node_opcode": "node_offsets",
    "edge_index": "edge_offsets",
    "config_runtime": "config_offsets",
    "config_feat": "config_offsets",
    "config_runtime_normalizers": "config_offsets",
    "node_config_ids": "config_node_offsets",
    "node_config_packed": "packed_offsets",
    "node_splits": "split_offsets",
}
_SHARD_COUNTS = ("num_nodes", "num_edges", "num_configs", "num_config_nodes", "configs_before", "nodes_before",
                 "edges_before")
_TILE_ONLY = ("config_feat", "config_runtime_normalizers")
_LAYOUT_ONLY = ("node_config_ids", "node_config_packed", "node_splits")
_SHARD_OLDEST, _SHARD_NEWEST = 1, 2  # kShardOldestReadableVersion, kShardSchemaVersion


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _shard_error(reason, path, key=""):
    return _core.error(reason, path, key)


def read_shard(path, names=None):
    """The graphs of one HDF5 shard of a processed tree (tpuperf-preprocess's output) as
    {name: graph}, in the shard's order (names: only those, in that order). A graph is a
    dict of the release's keys and dtypes, as preprocessing left the graph (configs
    deduplicated, layout graphs pruned, features re-padded and untransformed):
    node_feat (N, 140) float32, node_opcode (N,) uint8, edge_index (E, 2) int64,
    config_runtime (C,) int64; tile: config_feat (C, 24) float32,
    config_runtime_normalizers (C,) int64; layout: node_config_ids (nc,) int64,
    node_config_feat (C, nc, 18) int8 (the C++ API's dtype; the release's is float32),
    node_splits (S,) int64. Beside them: name, collection, split, fold (0..k-1 train, -1
    valid, -2 test) and the counts num_nodes, num_edges, num_configs, num_config_nodes and
    configs_before, nodes_before, edges_before (in the source file).
    HDF5 checks every chunk's fletcher32 checksum as it reads."""
    import h5py  # only the shard reader needs it

    path = os.fspath(path)
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise _shard_error(f"cannot be opened as HDF5 ({e})", path) from None
    with f:
        attrs = f.attrs
        if _text(attrs.get("created_by", b"")) != "tpuperf-preprocess":
            raise _shard_error("is not a tpuperf shard (no created_by = tpuperf-preprocess)", path, "created_by")
        version = int(attrs["schema_version"])
        if not _SHARD_OLDEST <= version <= _SHARD_NEWEST:
            raise _shard_error(f"has schema_version {version}; this reader reads {_SHARD_OLDEST}..{_SHARD_NEWEST}",
                               path, "schema_version")
        collection, split = _text(attrs["collection"]), _text(attrs["split"])
        tile = collection.startswith("tile:")
        stored = [_text(n) for n in f["name"][()]]
        wanted = stored if names is None else list(names)
        index = {n: i for i, n in enumerate(stored)}
        offsets = {o: f[o][()] for o in set(_SHARD_ROWS.values())}
        per_graph = {k: f[k][()] for k in ("fold",) + _SHARD_COUNTS}
        graphs = {}
        for name in wanted:
            if name not in index:
                raise _shard_error(f"holds no graph {name}", path, "name")
            i = index[name]
            g = {"name": name, "collection": collection, "split": split}
            g.update({k: int(v[i]) for k, v in per_graph.items()})
            for key, off in _SHARD_ROWS.items():
                if key in (_LAYOUT_ONLY if tile else _TILE_ONLY):
                    continue
                g[key] = f[key][offsets[off][i]:offsets[off][i + 1]]
            _to_release_form(g, tile)
            graphs[name] = g
        return graphs


def _to_release_form(g, tile):
    """The shard's storage dtypes and packing -> the release's."""
    g["edge_index"] = g["edge_index"].astype(np.int64)
    if tile:
        return
    g["node_config_ids"] = g["node_config_ids"].astype(np.int64)
    packed = g.pop("node_config_packed").reshape(g["num_configs"], g["num_config_nodes"])
    g["node_config_feat"] = _core.unpack_layout_values(packed)
