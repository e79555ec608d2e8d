"""tpuperf.Ranker: the C++ ranker library (tpuperf/ranker.h) on numpy arrays.

A graph and its candidate configs are the release's arrays, as np.load gives them from a
TpuGraphs .npz (a dict, or the NpzFile itself), here with the dtypes the C++ API holds:

    tile:   node_feat (N, 140) float32, node_opcode (N,) uint8, edge_index (E, 2) int64,
            config_feat (C, 24) float32
    layout: node_feat, node_opcode, edge_index, node_splits (any shape, e.g. (1, S)) int64,
            node_config_ids (nc,) int64, node_config_feat (C, nc, 18) int8

Arrays of these dtypes, C-contiguous, are handed to C++ as they are; others are converted
first, integers only when every value is one of the target dtype (the release's files hold
node_config_feat as float32: converted, each value an integer -1..5). Either way the C++
API's std::vector members take one copy of each array (RankGraph, TileCandidates and
LayoutCandidates own their data). Every call into C++ releases the GIL.
"""

import os

import numpy as np

from . import _core

Error = _core.Error

# key -> (the C++ API's dtype, the trailing shape after the first axis; None: any shape,
# flattened)
_GRAPH_KEYS = {
    "node_feat": (np.float32, (_core.node_feat_dim,)),
    "node_opcode": (np.uint8, ()),
    "edge_index": (np.int64, (2,)),
}
_TILE_KEYS = {"config_feat": (np.float32, (_core.tile_config_dim,))}
_LAYOUT_KEYS = {
    "node_config_ids": (np.int64, ()),
    "node_config_feat": (np.int8, (-1, _core.layout_config_dim)),  # -1: len(node_config_ids)
}
_OPTIONAL_KEYS = {"node_splits": (np.int64, None)}


def _error(reason, file="", key=""):
    """A tpuperf.Error whose message reads as the C++ side's: 'FILE: key 'KEY': REASON'."""
    return _core.error(reason, file, key)


def _source_of(arrays, name):
    """(the graph's name, what errors name): an NpzFile's path, else the name."""
    path = getattr(getattr(arrays, "fid", None), "name", None)
    if isinstance(path, str):
        return (name or os.path.splitext(os.path.basename(path))[0]), path
    return (name or "graph"), (name or "graph")


def _as_api_array(value, key, dtype, trailing, source, nc=None):
    """value as a C-contiguous array of dtype, converted only when it is not one already."""
    a = np.asarray(value)
    want = np.dtype(dtype)
    if a.dtype != want:
        if a.dtype.kind not in "fiu":
            raise _error(f"holds {a.dtype} values, not numbers", source, key)
        with np.errstate(invalid="ignore"):  # NaN or out of range: found below
            converted = a.astype(want)
        if want.kind in "iu":
            bad = np.flatnonzero(converted != a)
            if bad.size:
                at = np.unravel_index(bad[0], a.shape)
                raise _error(f"value {a[at]} at {tuple(int(i) for i in at)} does not fit {want} "
                             f"(converting from {a.dtype})", source, key)
        a = converted
    a = np.ascontiguousarray(a)  # no copy when it is already
    if trailing is None:
        return a.reshape(-1)
    shape = tuple(nc if d == -1 else d for d in trailing)
    if a.ndim != 1 + len(shape) or a.shape[1:] != shape:
        want_shape = str(("n",) + shape).replace("'", "")  # "(n, 140)", "(n,)"
        raise _error(f"has shape {a.shape}, not {want_shape}", source, key)
    return a


def _api_arrays(arrays, keys, source, required=True):
    out = {}
    for key, (dtype, trailing) in keys.items():
        if key not in arrays:
            if required:
                raise _error("is missing", source, key)
            continue
        nc = len(out["node_config_ids"]) if key == "node_config_feat" else None
        out[key] = _as_api_array(arrays[key], key, dtype, trailing, source, nc)
    return out


def _naming(source, fn, *args):
    """fn(*args), a tpuperf.Error that names no file given the graph's source, as
    tpuperf::Error::with_file adds one (the C++ API's checks of arrays in memory know the
    key, not where the arrays came from)."""
    try:
        return fn(*args)
    except Error as e:
        if e.file:
            raise
        raise _core.error(e.reason, source, e.key) from None


def _is_path(x):
    return isinstance(x, (str, os.PathLike))


class Ranker:
    """Ranks the configs of graphs with the fold models of a finished training run.

    Ranker(run_dir, collection, threads=1, fused=True, keep_freed_memory=True) loads every
    fold's best checkpoint of the collection ("tile:xla", "layout:nlp:random", ...), as
    tpuperf::Ranker(run_dir, collection, RankerOptions{threads, fused, keep_freed_memory}).
    threads and keep_freed_memory are process-wide settings (LibTorch's pool, malloc's).
    Python threads sharing one Ranker take turns; one Ranker per thread ranks in parallel.
    """

    def __init__(self, run_dir, collection, threads=1, fused=True, keep_freed_memory=True):
        self._core = _core.Ranker(os.fspath(run_dir), collection, int(threads), bool(fused), bool(keep_freed_memory))

    @classmethod
    def _wrap(cls, core):
        r = cls.__new__(cls)
        r._core = core
        return r

    @property
    def collection(self):
        """The collection whose models rank, e.g. "tile:xla"."""
        return self._core.collection

    @property
    def kind(self):
        """"tile" or "layout": which candidates this ranker ranks."""
        return self.collection.split(":", 1)[0]

    @property
    def folds(self):
        """The number of fold models ensembled."""
        return self._core.folds

    @property
    def adaptation(self):
        """How this ranker was adapted, or None for one loaded as trained: a dict of
        tpuperf::Adaptation's fields: graph, measured_configs, method ("blend" or
        "finetune"), seed, seconds; blend: blend (what the cross-validation chose, e.g.
        "run", "ridge alpha=0.1"), weight_run, weight_fit, cv_folds, cv_tau_run, cv_tau;
        finetune: steps, lr, slate, loss, first_loss, last_loss."""
        return self._core.adaptation

    def _candidate_keys(self):
        return _TILE_KEYS if self.kind == "tile" else _LAYOUT_KEYS

    def _checked(self, graph, candidates, name):
        """(name, graph arrays, candidate arrays) as the C++ API takes them, and the source
        errors name."""
        name, source = _source_of(graph, name)
        g = _api_arrays(graph, _GRAPH_KEYS, source)
        g.update(_api_arrays(graph, _OPTIONAL_KEYS, source, required=False))
        c = _api_arrays(graph if candidates is None else candidates, self._candidate_keys(), source)
        return (name, g, c), source

    def rank(self, graph, candidates=None, *, name=None):
        """Ranks every candidate config of a graph; returns a dict:
        order (int64 array: every config index, best first; tile: config 0 first where
        the run's first_pick.json says so), score (float64
        array: per config index the ensemble's score, lower = predicted faster), collection,
        name, unique_configs (distinct configs scored; duplicates share a score), folds.

        graph: a path to a release-format .npz (its runtimes are not used), or a mapping of
        the release's arrays (np.load's result). candidates: a mapping of the candidate
        arrays (config_feat; node_config_ids and node_config_feat), by default graph's own.
        name names the graph in results and errors (default: the npz's stem, or "graph").
        """
        if _is_path(graph):
            return self._core.rank_file(os.fspath(graph))
        args, source = self._checked(graph, candidates, name)
        return _naming(source, self._core.rank, *args)

    def adapted(self, graph, measured, runtimes, method="blend", steps=0, lr=0.0, slate=0, seed=0, *, name=None):
        """A new Ranker adapted to measured configs of this graph (Ranker::adapted).

        graph: the graph's arrays (a mapping, as for rank); measured: the measured
        candidates' arrays (config_feat rows; node_config_ids and node_config_feat rows),
        runtimes[i] the runtime of measured config i (tile: runtime / normalizer; any unit),
        each finite and > 0, at least two. method: "blend" (AdaptMethod::Blend: the run's
        score blended with a ridge fit on the measurements, chosen by cross-validation over
        them; the run alone unless that helps) or "finetune" (copies of the fold models
        fine-tuned on them). steps, lr, slate (finetune; 0 = the defaults) and seed (the
        cross-validation folds; finetune's slates and dropout) as in AdaptOptions. This
        ranker is left as it is; the new one ranks this graph only (another raises
        tpuperf.Error naming both).
        """
        (name, g, c), source = self._checked(graph, measured, name)
        y = _as_api_array(runtimes, "runtimes", np.float64, (), source)
        core = _naming(source, self._core.adapted, name, g, c, y, method, int(steps), float(lr), int(slate), int(seed))
        return Ranker._wrap(core)

    def adapted_file(self, path, method="blend", steps=0, lr=0.0, slate=0, seed=0):
        """Ranker::adapted_file: adapted to a release-format .npz's measured configs (tile:
        config_runtime / config_runtime_normalizers; layout: config_runtime; 0 = not
        measured). The options as for adapted."""
        core = self._core.adapted_file(os.fspath(path), method, int(steps), float(lr), int(slate), int(seed))
        return Ranker._wrap(core)

    def suggest(self, graph, candidates=None, count=8, exploration=1.0, diversity=1.0, exclude=(), *, name=None):
        """The count configs to measure next (Ranker::suggest, SuggestOptions): greedily the
        lowest predicted cost less exploration x the fold models' disagreement, plus
        diversity x the similarity to the configs picked before it; exclude: candidate
        indices already measured (never suggested, nor configs identical to them). An
        adapted ranker predicts with its adaptation. graph and candidates as for rank (a
        path: Ranker::suggest_file). Returns a dict: configs (int64 array, in the order to
        measure them), score and uncertainty (float64 arrays per suggested config: the
        predicted cost standardized over the candidates, lower = faster, and the fold
        models' disagreement in the same units), collection, name, candidates (the graph's
        configs).
        """
        options = (int(count), float(exploration), float(diversity), [int(c) for c in exclude])
        if _is_path(graph):
            return self._core.suggest_file(os.fspath(graph), *options)
        args, source = self._checked(graph, candidates, name)
        return _naming(source, self._core.suggest, *args, *options)

    def __repr__(self):
        adapted = f", adapted to {self.adaptation['graph']}" if self.adaptation else ""
        return f"<tpuperf.Ranker {self.collection}: {self.folds} fold models{adapted}>"


def trained_collections(run_dir):
    """The collections a run directory holds trained models of, e.g. ["layout:xla:random", "tile:xla"]."""
    return _core.trained_collections(os.fspath(run_dir))
