#!/usr/bin/python3
"""Reference trainer for the training benchmark: the models and loop of tpuperf-train
(trainer/models: tile_early_join.cpp, layout_sage.cpp, layout_shape_context.cpp, blocks.cpp,
shape_features.cpp, config_dims.cpp; trainer/losses; batch.cpp, sampler.cpp and train_fold /
train_step in fold_training.cpp) written in plain PyTorch (index_add_ / scatter_reduce, no
PyG), fed from the same HDF5 shards (common/shards/shard.h) with the manifest's feature transform.

Models (--arch): the schema's defaults, tile early_join_shape and layout sage_shape_context
(hidden 64, 3 layers: shape features from the raw shape columns, the wide terms, the
configurable nodes pooled apart, the config-free context pass), and the bench models early_join
and sage. Losses (--loss): ListMLE and the pairwise hinge (the tile default), a step's batches
weighted as backward_joint_loss does.

It reproduces tpuperf's run of one fold on one rank: the same train graphs in manifest
order, the same slates (the splitmix64 sampler re-implemented), the same initial weights
(torch.manual_seed with tpuperf's mix_seed, modules built in the same order), the same
batches (a step's graphs split by slate width: sampler.cpp batches_by_width) and batch
layout, the loss, AdamW, warm-up + cosine learning rate and gradient clipping.
Dropout masks differ from tpuperf's (a splitmix64 hash of seed and element,
trainer/kernels/fused_ops.h; the reference draws from torch's generator). So with --dropout 0
(and tpuperf's model dropout 0) its per-epoch losses should equal the ones tpuperf logs, and
its final weights the fold's last.pt training weights (--compare-checkpoint), up to float
rounding, which grows through training (AdamW): that is the check that both sides train the
same thing before their speeds are compared (bench_train.sh runs it, short, apart from the
timed runs, which use the configured dropout on both sides).

Timing: only the optimizer steps of an epoch (batch building, forward, loss, backward,
clipping, AdamW), as tpuperf's "configs/s" does. Unlike tpuperf, which reads layout config
rows from the shard at every step and samples inside the step, the reference holds every
row in memory and draws an epoch's slates before its clock starts: both differences favour
the reference. tpuperf also updates its weight average (train.ema_decay) in its steps; the
reference keeps none.

It is written as a PyTorch user who wants it fast would write it, with the same math: the
first SAGE block split as tpuperf's (tile: forward_split, node rows N + per-(slot, graph)
rows; layout: node rows N + configurable-node rows S x M, whose products move only along the
edges from configurable nodes), per-config states node-major (N x S x H, so that gathers and
scatters over nodes move contiguous rows), aggregation without the 3H-wide cat, pooling over
the graphs' contiguous node runs, the layout config embedding as a one-hot matmul (for
sage_shape_context one matmul of [shape features | one-hot values] with [shape_in's weight;
the value table], whose input rows the wide term reuses as one batched matmul), dropout masks
from 16-bit draws, parameters and gradients in flat buffers (one clipping norm, one AdamW
tensor), and tpuperf-train's allocator settings (glibc environment). Each speed-up has a flag
that turns it off (--no-split, --no-layout-split, --no-node-major, --no-catfree,
--no-segment-reduce, --no-onehot-config, --dropout-rng bernoulli, --optimizer plain|foreach,
--no-malloc-env; --jit scripts the losses and the aggregation), so that bench_train.sh can
measure each one's effect.

Usage: reference_train.py --processed DIR --collection C [--fold F] [options] [--json OUT]
"""
import argparse
import json
import math
import os
import sys
import time
import warnings

import h5py
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

class Options:
    """The reference's speed-ups (all on by default; each has a --no-... flag, so that its
    effect can be measured alone): see main's argument parser."""
    split = layout_split = catfree = segment_reduce = onehot_config = node_major = True
    optimizer = "flat"
    dropout_rng = "bits16"
    jit = False


O = Options()

M64 = (1 << 64) - 1
NUM_OPCODES = 121
TILE_CONFIG_DIM = 24
LAYOUT_CONFIG_DIM = 18
LAYOUT_LEVELS = 7
LAYOUT_ONEHOT = LAYOUT_CONFIG_DIM * LAYOUT_LEVELS  # 126 rows of the value table
# trainer/models/shape_features.h: per tile config and per (layout config, configurable node).
TILE_SHAPE_FEAT = 17
LAYOUT_SHAPE_FEAT = 27
# common/graph/feature_transform.h: raw columns of the shape dims and of minor_to_major.
SHAPE_DIMS_BEGIN, MINOR_TO_MAJOR_BEGIN, MAX_RANK = 21, 134, 6
# The schema's default architectures (common/config/config_schema.cpp) and the bench's.
DEFAULT_ARCH = {"tile": "early_join_shape", "layout": "sage_shape_context"}
ARCHS = {"tile": ("early_join", "early_join_shape"), "layout": ("sage", "sage_shape_context")}

# ----------------------------------------------------------------- seeds (common/base/random.h)
def mix_seed(seed, what):
    """common/base/random.h mix_seed with a string label: the torch seed of a fold's init and of
    each epoch (fold_training.cpp)."""
    h = 0xCBF29CE484222325
    for b in what.encode():
        h = ((h ^ b) * 0x100000001B3) & M64
    return splitmix64(splitmix64(seed & M64) ^ h)


# --------------------------------------------------------------- sampler (sampler.cpp)
def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def mix(key, value):
    return splitmix64(key ^ splitmix64(value & M64))


class Rng:
    def __init__(self, key):
        self.state = key

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        limit = M64 - M64 % n
        x = self.next()
        while x >= limit:
            x = self.next()
        return x % n


PERM_TAG, SLATE_TAG = 0x7065726D, 0x736C6174


def sample_without_replacement(n, k, key):
    if n <= k:
        return list(range(n))
    rng, taken = Rng(key), set()
    for j in range(n - k, n):
        t = rng.below(j + 1)
        taken.add(j if t in taken else t)
    return sorted(taken)


class SlateSampler:
    def __init__(self, num_configs, seed, fold, graphs_per_step, slate):
        self.num_configs, self.seed, self.fold = num_configs, seed, fold
        self.graphs_per_step, self.slate = graphs_per_step, slate
        self.cache = (None, None)

    def steps_per_pass(self):
        return (len(self.num_configs) + self.graphs_per_step - 1) // self.graphs_per_step

    def step_key(self, epoch, tag):
        return mix(mix(mix(self.seed, tag), self.fold), epoch)

    def permutation(self, epoch, cycle):
        if self.cache[0] == (epoch, cycle):
            return self.cache[1]
        perm = list(range(len(self.num_configs)))
        rng = Rng(mix(self.step_key(epoch, PERM_TAG), cycle))
        for i in range(len(perm), 1, -1):
            j = rng.below(i)
            perm[i - 1], perm[j] = perm[j], perm[i - 1]
        self.cache = ((epoch, cycle), perm)
        return perm

    def draw(self, epoch, step):
        """All graphs of a step (one rank): [(graph, configs)]."""
        n, out = len(self.num_configs), []
        for j in range(self.graphs_per_step):
            pos = step * self.graphs_per_step + j
            g = self.permutation(epoch, pos // n)[pos % n]
            key = mix(self.step_key(epoch, SLATE_TAG), pos)
            out.append((g, sample_without_replacement(self.num_configs[g], self.slate, key)))
        return out


def batches_by_width(width, cost, overhead):
    """sampler.cpp batches_by_width: the cheapest split into batches (overhead + widest slate
    x summed cost each), as runs of the distinct widths in order; ascending indices per batch."""
    order = sorted(range(len(width)), key=lambda i: width[i])
    start, summed = [], [0]
    for j, i in enumerate(order):
        if j == 0 or width[i] != width[order[j - 1]]:
            start.append(j)
            summed.append(summed[-1])
        summed[-1] += cost[i]
    k = len(start)
    start.append(len(order))
    best, cut = [0] * (k + 1), [0] * (k + 1)
    for j in range(1, k + 1):
        best[j] = None
        widest = width[order[start[j - 1]]]
        for i in range(j):
            c = best[i] + overhead + widest * (summed[j] - summed[i])
            if best[j] is None or c < best[j]:
                best[j], cut[j] = c, i
    out, j = [], k
    while j > 0:
        out.append(sorted(order[start[cut[j]]:start[j]]))
        j = cut[j]
    return out[::-1]


# fold_training.cpp: a graph's cost is its nodes + 1.
CONFIG_WORK_IN_NODES = 1


def batch_overhead_in_node_slots(hidden, layers):
    """fold_training.cpp: 2000 at hidden 32 with 2 layers, scaled by 1 / (layers x hidden^2)."""
    return 2000 * (2 * 32 * 32) // max(max(layers, 1) * hidden * hidden, 1)


def step_batches(graphs, draw, overhead):
    """A step's draws split into tpuperf's batches: lists of (graph, configs)."""
    width = [len(c) for _, c in draw]
    cost = [graphs[g].num_nodes + CONFIG_WORK_IN_NODES for g, _ in draw]
    return [[draw[i] for i in part] for part in batches_by_width(width, cost, overhead)]


# ------------------------------------------------------------------ data (common/shards/shard.h)
class Graph:
    pass


def signed_log1p(x):
    return np.sign(x) * np.log1p(np.abs(x))


def load_graphs(processed, collection, fold, folds):
    """The train graphs of fold `fold` (all train graphs when k = 1), in manifest order,
    transformed like trainer/dataset.cpp; every config row in memory."""
    manifest = json.load(open(os.path.join(processed, "manifest.yaml")))
    t = manifest["feature_transforms"][collection]
    kept = np.asarray(t["kept_columns"], dtype=np.int64)
    use_log = np.asarray(t["log1p"], dtype=bool)
    mean, std = np.asarray(t["mean"]), np.asarray(t["stddev"])
    tile = collection.startswith("tile:")
    shards, graphs = {}, []
    for m in manifest["graphs"]:
        if m["collection"] != collection or m["split"] != "train":
            continue
        if folds > 1 and m["fold"] == fold:
            continue
        f = shards.get(m["shard"]) or shards.setdefault(m["shard"], h5py.File(os.path.join(processed, m["shard"]), "r"))
        i = m["index"]
        assert f["name"][i].decode().rstrip("\0") == m["name"], (m["shard"], i, m["name"])
        rows = lambda key, data: f[data][f[key][i]:f[key][i + 1]]
        g = Graph()
        g.name = m["name"]
        raw = rows("node_offsets", "node_feat")
        x = raw[:, kept].astype(np.float64)
        x[:, use_log] = signed_log1p(x[:, use_log])
        g.node_feat = ((x - mean) / std).astype(np.float32)
        g.num_nodes = g.node_feat.shape[0]
        g.opcode = rows("node_offsets", "node_opcode").astype(np.int64)
        e = rows("edge_offsets", "edge_index").astype(np.int64)
        g.consumer, g.producer = e[:, 0], e[:, 1]
        g.runtime = rows("config_offsets", "config_runtime").astype(np.float64)
        if tile:
            g.config_feat = rows("config_offsets", "config_feat").astype(np.float32)
            g.target = g.runtime / rows("config_offsets", "config_runtime_normalizers").astype(np.float64)
            g.config_dims = tile_config_dims(raw, g.opcode, g.consumer, g.producer)
        else:
            g.config_ids = rows("config_node_offsets", "node_config_ids").astype(np.int64)
            nc = len(g.config_ids)
            if nc == 0:
                raise SystemExit(f"{g.name}: a layout graph without configurable nodes (the reference "
                                 "pools them per graph and does not handle that case)")
            g.packed = rows("packed_offsets", "node_config_packed").reshape(len(g.runtime), nc)
            g.target = g.runtime
            g.config_dims = layout_config_dims(raw, g.config_ids, g.consumer, g.producer)
            # max_layout_elements: over every tensor of every configurable node, at least 1.
            g.max_elements = max(1.0, float(elements(g.config_dims.reshape(-1, MAX_RANK)).max()))
        g.num_configs = len(g.runtime)
        graphs.append(g)
    for f in shards.values():
        f.close()
    return graphs


# ----------------------------------------- shape features (config_dims.cpp, shape_features.cpp)
# What a config means for the graph's tensors, from the raw (untransformed) shape columns:
# the default models' extra inputs, computed in float64 and stored as float32 like tpuperf.
def raw_dims(row_block):
    """copy_dims: raw values rounded half away from zero and clamped at -1 (int64)."""
    v = np.clip(row_block.astype(np.float64), -1.0, 1e15)
    if not np.isfinite(v).all():
        raise SystemExit("a shape dim is not finite")
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


# Bytes of an element by the one-hot's column - 2 (upstream's PrimitiveType order); 4 if none.
ELEMENT_BYTES = np.array([0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8, 16, 0, 0, 0], dtype=np.int64)
FUSION_OPCODE, PARAMETER_OPCODE, TUPLE_OPCODE, TUPLE_TYPE = 41, 63, 100, 16


def element_type(raw_rows):
    """element_type per row: the first one-hot column (2-20) over 0.5, else -1."""
    hot = raw_rows[:, 2:21] > 0.5
    return np.where(hot.any(1), hot.argmax(1), -1)


def element_bytes(raw_rows):
    """element_bytes per row: the type's width, 4 without a type."""
    t = element_type(raw_rows)
    return np.where(t >= 0, ELEMENT_BYTES[np.maximum(t, 0)], 4)


def tile_output(raw, opcode, consumer, producer, root, width, count):
    """tile_output: the node whose shape the tile covers (a tuple's largest element; a
    tuple-shaped call's callee root first) and the bytes written per output element."""
    node = root
    for _ in range(4):
        if opcode[node] == TUPLE_OPCODE or element_type(raw[node:node + 1])[0] != TUPLE_TYPE:
            break
        callees = [p for p in producer[consumer == node] if raw[p, 0] > 0]
        if not callees:
            break
        node = max(callees)
    if opcode[node] != TUPLE_OPCODE:
        return node, int(width[node])
    shaped, out_bytes = node, 0
    for element in producer[consumer == node]:
        out_bytes += int(width[element])
        if shaped == node or count[element] > count[shaped]:
            shaped = element
    return shaped, out_bytes


def tile_config_dims(raw, opcode, consumer, producer):
    """attach_tile: the output's shape dims and minor_to_major (the root: the last node with
    is_root set, else the last node; through tile_output), its bytes per element, the
    inputs' bytes and elements: 15 int64."""
    roots = np.nonzero(raw[:, 0] > 0)[0]
    root = roots[-1] if len(roots) else raw.shape[0] - 1
    width = element_bytes(raw)
    count = np.where(np.isfinite(raw[:, 28]) & (raw[:, 28] > 0), raw[:, 28], 0).astype(np.float64)
    shaped, out_bytes = tile_output(raw, opcode, consumer, producer, root, width, count)
    inputs = producer[consumer == root] if opcode[root] == FUSION_OPCODE else np.arange(raw.shape[0])
    inputs = inputs[opcode[inputs] == PARAMETER_OPCODE]
    in_bytes, in_elements = 0.0, 0.0
    for i in inputs:  # in order, as attach_tile sums
        in_bytes += count[i] * float(width[i])
        in_elements += count[i]
    rnd = lambda v: int(np.floor(min(v, 1e15) + 0.5))
    return np.concatenate([raw_dims(raw[shaped, SHAPE_DIMS_BEGIN:SHAPE_DIMS_BEGIN + MAX_RANK]),
                           raw_dims(raw[shaped, MINOR_TO_MAJOR_BEGIN:MINOR_TO_MAJOR_BEGIN + MAX_RANK]),
                           np.array([out_bytes, rnd(in_bytes), rnd(in_elements)], dtype=np.int64)])


def layout_config_dims(raw, config_ids, consumer, producer):
    """attach_layout: per configurable node (config_ids order) its output's dims, then its
    first two operands' in edge order (0 where absent), M x 18 int64. A one-time pass at
    loading (not timed)."""
    dims = np.zeros((len(config_ids), 3 * MAX_RANK), dtype=np.int64)
    shape = raw_dims(raw[:, SHAPE_DIMS_BEGIN:SHAPE_DIMS_BEGIN + MAX_RANK])
    slot_of = np.full(raw.shape[0], -1, dtype=np.int64)
    slot_of[config_ids] = np.arange(len(config_ids))
    dims[:, :MAX_RANK] = shape[config_ids]
    operands = np.zeros(len(config_ids), dtype=np.int64)
    for c, p in zip(consumer.tolist(), producer.tolist()):
        m = slot_of[c]
        if m < 0 or operands[m] == 2:
            continue
        operands[m] += 1
        dims[m, operands[m] * MAX_RANK:(operands[m] + 1) * MAX_RANK] = shape[p]
    return dims


def rank_of(dims):
    """Leading positive dims along the last axis (the release pads shapes with 0)."""
    return np.cumprod(dims > 0, axis=-1).sum(-1)


def elements(dims):
    """The product of the leading positive dims in float64, multiplied in order."""
    r, e = rank_of(dims), np.ones(dims.shape[:-1])
    for i in range(MAX_RANK):
        e = np.where(i < r, e * dims[..., i].astype(np.float64), e)
    return e


def log_pad(x, m):
    """log(x padded up to a multiple of m / x), 0 where x is 0."""
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, np.log(np.ceil(safe / m) * m / safe), 0.0)


def tile_shape_features(cfg, dims15):
    """tile_shape_features for config rows cfg (... x 24 float32) of one graph -> ... x 17."""
    dims, m2m = dims15[:MAX_RANK], dims15[MAX_RANK:2 * MAX_RANK]
    rank = int(rank_of(dims))
    minor = int(m2m[0]) if rank >= 1 and 0 <= m2m[0] < rank else -1
    second = int(m2m[1]) if rank >= 2 and 0 <= m2m[1] < rank else -1
    kernel, tile = cfg[..., 0:6].astype(np.float64), cfg[..., 8:14].astype(np.float64)
    out = np.zeros(cfg.shape[:-1] + (TILE_SHAPE_FEAT,))
    log_grid = log_tile = log_padded = log_kernel = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(MAX_RANK):
            t = tile[..., i]
            on = (t > 0) if i < rank else np.zeros(t.shape, dtype=bool)
            steps = np.where(on, np.ceil(float(dims[i]) / np.where(on, t, 1.0)), 1.0)
            pad = 128 if i == minor else 8 if i == second else None
            padded = t if pad is None else np.ceil(t / pad) * pad
            log_tile = log_tile + np.where(on, np.log(np.where(on, t, 1.0)), 0.0)
            log_padded = log_padded + np.where(on, np.log(np.where(on, padded, 1.0)), 0.0)
            out[..., i] = np.log(steps) / 4
            log_grid = log_grid + np.log(steps)
            k = kernel[..., i]
            log_kernel = log_kernel + np.where(k > 0, np.log(np.where(k > 0, k, 1.0)), 0.0)
    padded = np.exp(log_padded)
    in_bytes, in_elements = float(dims15[13]), float(dims15[14])
    out_bytes = padded * float(dims15[12])
    scaled_in = padded * in_bytes / max(1.0, float(elements(dims)))
    kernel_in = np.exp(log_kernel) * (in_bytes / in_elements if in_elements > 0 else 0.0)
    f = [log_grid / 8, log_tile / 8, log_padded / 8, (log_padded - log_tile) / 4,
         (log_grid + log_padded) / 8, log_kernel / 8, (log_grid + log_kernel) / 8,
         np.log1p(out_bytes) / 16, np.log1p(scaled_in) / 16, np.log1p(kernel_in) / 16,
         np.log1p(out_bytes + scaled_in) / 16]
    for j, v in enumerate(f):
        out[..., MAX_RANK + j] = v
    return out.astype(np.float32)


def layout_shape_features(values, dims18, max_elements):
    """layout_shape_features for decoded values (... x M x 18, -1..5) against the nodes'
    dims (M x 18) and the graph's largest tensor (per node, M) -> ... x M x 27 float32."""
    out = np.zeros(values.shape[:-1] + (LAYOUT_SHAPE_FEAT,))
    per = LAYOUT_SHAPE_FEAT // 3
    for t in range(3):
        v = values[..., t * MAX_RANK:(t + 1) * MAX_RANK]
        d = dims18[:, t * MAX_RANK:(t + 1) * MAX_RANK]
        rank, size = rank_of(d), elements(d)  # per node
        is_default = (v == -1).all(-1)
        o = out[..., t * per:(t + 1) * per]
        o[..., 0] = is_default
        o[..., 6] = np.where(rank > 0, np.log1p(size) / 16, 0.0)
        live = ~is_default & (rank > 0)
        row_major = np.ones(v.shape[:-1], dtype=bool)
        for i in range(MAX_RANK):
            row_major &= (i >= rank) | (v[..., i] == rank - 1 - i)

        def picked(j):  # the size of the dim value j puts there (0 if none)
            ok = (v[..., j] >= 0) & (v[..., j] < rank)
            idx = np.clip(v[..., j], 0, MAX_RANK - 1)
            return np.where(ok, np.take_along_axis(np.broadcast_to(d, v.shape), idx[..., None], -1)[..., 0], 0)
        minor, second = picked(0).astype(np.float64), picked(1).astype(np.float64)
        lp_minor, lp_second = log_pad(minor, 128), log_pad(second, 8)
        waste = size * np.expm1(lp_minor + lp_second) / max_elements
        for j, val in ((1, row_major), (2, np.log1p(minor) / 8), (3, np.log1p(second) / 8), (4, lp_minor / 4),
                       (5, lp_second / 2), (7, waste / 8), (8, np.log1p(waste))):
            o[..., j] = np.where(live, val, 0.0)
    return out.astype(np.float32)


POW7 = 7 ** np.arange(LAYOUT_CONFIG_DIM, dtype=np.uint64)
ROW0 = LAYOUT_LEVELS * np.arange(LAYOUT_CONFIG_DIM, dtype=np.int64)


def layout_values(packed):
    """Base-7 digits (position j holds v + 1, processed_graph.h) -> embedding rows j*7 + v+1."""
    return ((packed[..., None] // POW7) % 7).astype(np.int64) + ROW0


def make_batch(tile, graphs, slates, shape=False):
    """trainer/batch.cpp make_batch: graphs concatenated, slots padded with the first config.
    shape: also the configs' shape features (config_shape: tile G x S x 17; layout S x M x 27,
    node-major M x S x 27), which the default models read."""
    G, S = len(graphs), max(len(s) for s in slates)
    offsets = np.cumsum([0] + [g.num_nodes for g in graphs])
    b = {"G": G, "S": S}
    b["node_feat"] = torch.from_numpy(np.concatenate([g.node_feat for g in graphs]))
    b["opcode"] = torch.from_numpy(np.concatenate([g.opcode for g in graphs]))
    b["node_graph"] = torch.from_numpy(np.repeat(np.arange(G), [g.num_nodes for g in graphs]))
    b["consumer"] = torch.from_numpy(np.concatenate([g.consumer + o for g, o in zip(graphs, offsets)]))
    b["producer"] = torch.from_numpy(np.concatenate([g.producer + o for g, o in zip(graphs, offsets)]))
    index = np.array([[s[j] if j < len(s) else s[0] for j in range(S)] for s in slates], dtype=np.int64)
    mask = np.array([[j < len(s) for j in range(S)] for s in slates])
    target = np.stack([g.target[ix] for g, ix in zip(graphs, index)]) * mask
    b["mask"] = torch.from_numpy(mask)
    b["target"] = torch.from_numpy(target)
    lengths = np.array([g.num_nodes for g in graphs])
    assert lengths.min() > 0, "a graph without nodes"  # segment_reduce's max would be -inf
    b["lengths"] = torch.from_numpy(lengths)
    b["offsets"] = [int(o) for o in offsets]
    n = int(offsets[-1])
    consumer, producer = b["consumer"].numpy(), b["producer"].numpy()
    if O.catfree or (O.split if tile else O.layout_split):
        # Per-batch tables of the cat-free aggregation and the split first block, built in
        # numpy with the batch (no tensor ops per block): producers/consumers per node, and
        # for each edge direction the row of the projected states it reads and its weight.
        has_p = np.bincount(consumer, minlength=n)  # u is a consumer: it has producers
        has_c = np.bincount(producer, minlength=n)
        # Per edge, the weight of its term in its consumer's mean over producers and in its
        # producer's mean over consumers (project_aggregate).
        w_p = (1.0 / has_p[consumer]).astype(np.float32)
        w_c = (1.0 / has_c[producer]).astype(np.float32)
        b["w_p"], b["w_c"] = torch.from_numpy(w_p), torch.from_numpy(w_c)
        node_graph = np.repeat(np.arange(G), [g.num_nodes for g in graphs])
        b["kind"] = torch.from_numpy(node_graph * 4 + (has_p > 0) + 2 * (has_c > 0))
    if tile:
        cf = [g.config_feat[ix] for g, ix in zip(graphs, index)]
        b["config_feat"] = torch.from_numpy(np.stack(cf))
        if shape:
            b["config_shape"] = torch.from_numpy(np.stack([tile_shape_features(c, g.config_dims)
                                                           for c, g in zip(cf, graphs)]))
        return b
    config_counts = [len(g.config_ids) for g in graphs]
    b["config_node"] = torch.from_numpy(np.concatenate([g.config_ids + o for g, o in zip(graphs, offsets)]))
    b["config_offsets"] = [int(o) for o in np.cumsum([0] + config_counts)]
    b["config_lengths"] = torch.tensor(config_counts)
    b["config_graph"] = torch.from_numpy(np.repeat(np.arange(G), config_counts))
    if O.layout_split:
        # The split first block (SageBlock.forward_layout_split): the config term's products
        # with W_self, W_producers and W_consumers are rows 3m, 3m + 1, 3m + 2 of a table
        # (m: the configurable node's position); each reaches the node itself and, along
        # the edges whose source is a configurable node, its consumers' (producers') rows,
        # weighted as in project_aggregate. One gather (src), one weight per row, one
        # scatter (dst), sorted by dst so that the scatter writes ascending rows.
        config_node = b["config_node"].numpy()
        M = config_node.size
        pos = np.full(n, -1, dtype=np.int64)
        pos[config_node] = np.arange(M)
        if (pos >= 0).sum() != M:  # tpuperf adds both terms; this table has one row per node
            raise ValueError("layout split: a configurable node listed twice (run with --no-layout-split)")
        from_p, from_c = pos[producer] >= 0, pos[consumer] >= 0  # the edge's source is configurable
        src = np.concatenate([3 * np.arange(M), 3 * pos[producer[from_p]] + 1, 3 * pos[consumer[from_c]] + 2])
        dst = np.concatenate([config_node, consumer[from_p], producer[from_c]])
        weight = np.concatenate([np.ones(M, dtype=np.float32), w_p[from_p], w_c[from_c]])
        order = np.argsort(dst, kind="stable")
        b["split_src"] = torch.from_numpy(src[order])
        b["split_dst"] = torch.from_numpy(dst[order])
        b["split_w"] = torch.from_numpy(weight[order])
    # S x M x 18 (node-major: M x S x 18): slot s of every configurable node of graph g
    # uses config index[g, s].
    packed = np.concatenate([g.packed[ix] for g, ix in zip(graphs, index)], axis=1)
    values = layout_values(packed)  # S x M x 18 table rows
    if shape:
        dims = np.concatenate([g.config_dims for g in graphs])
        max_el = np.repeat([g.max_elements for g in graphs], config_counts)
        feat = layout_shape_features(values - ROW0 - 1, dims, max_el)  # decoded values -1..5
        b["config_shape"] = torch.from_numpy(np.ascontiguousarray(feat.transpose(1, 0, 2) if O.node_major else feat))
    b["config_values"] = torch.from_numpy(np.ascontiguousarray(values.transpose(1, 0, 2) if O.node_major else values))
    return b


# ----------------------------------------------------------- graph ops (graph_ops.cpp)
def clamped_counts(index, n, like):
    counts = torch.zeros(n, dtype=like.dtype).index_add_(0, index, torch.ones(index.size(0), dtype=like.dtype))
    return counts.clamp_min(1).unsqueeze(-1)


def node_dim(x):
    """Where the nodes are in a state tensor: per-config states are S x N x H (tpuperf's
    layout) or, node-major (the default here), N x S x H, whose gathers and scatters over
    nodes move contiguous S x H rows (index_select / index_add_ along dimension 0 are
    several times faster than along dimension 1 in torch 1.13); node states N x H."""
    return 0 if O.node_major or x.dim() == 2 else x.dim() - 2


def column(v, x, dim):
    """A per-node (or per-edge) vector shaped to broadcast along x's dimension dim."""
    return v.view([-1] + [1] * (x.dim() - 1 - dim))


def scatter_mean(x, src, dst):
    dim = node_dim(x)
    n = x.size(dim)
    out = torch.zeros_like(x).index_add_(dim, dst, x.index_select(dim, src))
    return out / column(clamped_counts(dst, n, x), x, dim)


def with_nodes(x, dim, n):
    shape = list(x.shape)
    shape[dim] = n
    return shape


def segment_mean(x, seg, n):
    dim = node_dim(x)
    out = torch.zeros(with_nodes(x, dim, n), dtype=x.dtype).index_add_(dim, seg, x)
    return out / column(clamped_counts(seg, n, x), x, dim)


def segment_max(x, seg, n):
    dim = node_dim(x)
    view = [1] * x.dim()
    view[dim] = seg.size(0)
    index = seg.view(view).expand(x.shape)
    return torch.zeros(with_nodes(x, dim, n), dtype=x.dtype).scatter_reduce(dim, index, x, "amax",
                                                                              include_self=False)


# ----------------------------------------------------------------- models (models.cpp)
# Submodules are created in the order of the C++ constructors, so that the same torch seed
# gives the same initial weights, and named like the C++ modules, so that a tpuperf
# checkpoint's "model.*" tensors load into them.
def dropout(x, p, training):
    """nn.Dropout's function. --dropout-rng bits16 draws the mask as tpuperf does: 16 random
    bits per element (4 per 64-bit draw of torch's generator, random_ over the full int64
    range) compared with round(p * 2^16), i.e. the same keep probability as tpuperf's
    counter-based mask (trainer/kernels/dropout_mask.h), instead of bernoulli_'s one double
    draw per element."""
    if not training or p == 0:
        return x
    if O.dropout_rng == "bernoulli":
        return F.dropout(x, p, True)
    n = x.numel()
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-2 ** 63, None).view(torch.int16)[:n]
    keep = (bits >= round(p * 65536) - 32768).view(x.shape)
    return x * keep.to(x.dtype).mul_(1.0 / (1.0 - p))


class Dropout(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)


def project_aggregate(x, weight, bias, producer, consumer, w_p, w_c, dim: int):
    """bias + W [x, mean of producers' x, mean of consumers' x] with the nodes along
    dimension dim: the three H x H blocks of W applied first (three matmuls, no 3H-wide cat
    and no sliced 3H-wide product, whose backward would write a zero-filled gradient), then
    the H-wide products moved along the edges, weighted by 1 / count (see make_batch)."""
    H = x.size(-1)
    blocks = weight.view(H, 3, H).transpose(0, 1)  # W_self, W_producers, W_consumers
    shape = [-1] + [1] * (x.dim() - 1 - dim)
    out = F.linear(x, blocks[0], bias)
    out.index_add_(dim, consumer, F.linear(x, blocks[1]).index_select(dim, producer) * w_p.view(shape))
    return out.index_add_(dim, producer, F.linear(x, blocks[2]).index_select(dim, consumer) * w_c.view(shape))


def gelu_dropout_add_norm(z, x, norm, drop):
    return norm(x + drop(F.gelu(z)))


# The 4 x 3 combinations of the blocks [W_self | W_producers | W_consumers] a node of each
# kind (bit 0: has producers, bit 1: has consumers) applies to a per-graph term.
KIND_COMBINE = torch.tensor([[1., 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1]])


def per_config(node, slot, node_graph):
    """node[u] + slot term of u's graph, for every config slot: node N x H and slot G x S x H
    give N x S x H (node-major), or slot S x G x H gives S x N x H."""
    if O.node_major:
        return node.unsqueeze(1) + slot.index_select(0, node_graph)
    return node.unsqueeze(0) + slot.index_select(1, node_graph)


class SageBlock(nn.Module):
    def __init__(self, h, dropout):
        super().__init__()
        self.linear = nn.Linear(3 * h, h)
        self.norm = nn.LayerNorm(h)
        self.drop = Dropout(dropout)

    def sage_linear(self, x, b):
        """linear([x, mean of producers' x, mean of consumers' x]) on [.., N, H] states."""
        if not O.catfree:
            return self.linear(torch.cat([x, scatter_mean(x, b["producer"], b["consumer"]),
                                          scatter_mean(x, b["consumer"], b["producer"])], -1))
        # Cat-free: project first (the means are linear), then aggregate H-wide slices. One
        # matmul x W_stack^T gives the three blocks' products [.., N, 3, H]; one
        # index_select + one index_add move both edge directions.
        return GRAPH_OPS["project_aggregate"](x, self.linear.weight, self.linear.bias, b["producer"],
                                              b["consumer"], b["w_p"], b["w_c"], node_dim(x))

    def forward(self, x, b):
        return gelu_dropout_add_norm(self.sage_linear(x, b), x, self.norm, self.drop)

    def forward_split(self, node, slot, b):
        """forward(node[u] + slot[s, graph of u]) for node states N x H and per-(slot, graph)
        terms S x G x H, as tpuperf's SageBlock::forward_split: the mean of a per-graph term
        over u's producers (consumers) is the term itself, or 0 when u has none, so the
        linear takes node rows (N) and slot rows (S x G) apart instead of S x N rows."""
        if not O.split:
            return self.forward(per_config(node, slot, b["node_graph"]), b)
        H = node.size(1)
        from_node = self.sage_linear(node, b)  # N x H, bias included
        blocks = self.linear.weight.view(H, 3, H).transpose(0, 1).reshape(3, H * H)
        kind_w = torch.mm(KIND_COMBINE.to(blocks.dtype), blocks).view(4 * H, H)  # kind k's H x H block
        if O.node_major:  # slot: G x S x H; per (graph, kind) a row S x H
            G, S = slot.shape[:2]
            from_slot = torch.mm(slot.reshape(G * S, H), kind_w.t()).view(G, S, 4, H).transpose(1, 2)
            z = from_node.unsqueeze(1) + from_slot.reshape(G * 4, S, H).index_select(0, b["kind"])
        else:  # slot: S x G x H
            S, G = slot.shape[:2]
            from_slot = torch.mm(slot.reshape(S * G, H), kind_w.t()).view(S, G * 4, H)
            z = from_node + from_slot.index_select(1, b["kind"])
        return gelu_dropout_add_norm(z, per_config(node, slot, b["node_graph"]), self.norm, self.drop)

    def forward_layout_split(self, base, cfg, x, b):
        """forward(x) for the layout models' first block, whose input x is base (N x H, the
        same in every slot) plus the config term cfg (M x S x H node-major, else S x M x H)
        at the configurable nodes (b["config_node"]): the linear is linear, so it takes the
        node rows (N, bias included) and the config rows (M x S) apart instead of S x N
        rows. The config rows' products with W's three blocks go to the node itself and,
        along the edges from a configurable node, to its consumers (W_producers, weight
        1 / producers) and producers (W_consumers, weight 1 / consumers): make_batch's
        split_src / split_dst / split_w."""
        if not O.layout_split:
            return self.forward(x, b)
        H = base.size(1)
        from_node = self.sage_linear(base, b)  # N x H, bias included
        stacked = self.linear.weight.view(H, 3, H).transpose(0, 1).reshape(3 * H, H)  # [W_self; W_p; W_c]
        w = b["split_w"]
        if O.node_major:  # cfg M x S x H -> table rows (m, k): 3M x S x H
            M, S = cfg.shape[:2]
            table = torch.mm(cfg.view(M * S, H), stacked.t()).view(M, S, 3, H).transpose(1, 2).reshape(3 * M, S, H)
            moved = table.index_select(0, b["split_src"]) * w.view(-1, 1, 1)
            z = from_node.unsqueeze(1).expand(x.shape).index_add(0, b["split_dst"], moved)
        else:  # cfg S x M x H -> table S x 3M x H (already in that order)
            S, M = cfg.shape[:2]
            table = torch.mm(cfg.view(S * M, H), stacked.t()).view(S, 3 * M, H)
            moved = table.index_select(1, b["split_src"]) * w.view(1, -1, 1)
            z = from_node.unsqueeze(0).expand(x.shape).index_add(1, b["split_dst"], moved)
        return gelu_dropout_add_norm(z, x, self.norm, self.drop)


class NodeEncoder(nn.Module):
    def __init__(self, num_feat, h, opcode_dim=32):
        super().__init__()
        self.opcode = nn.Embedding(NUM_OPCODES, opcode_dim)
        self.input = nn.Linear(num_feat + opcode_dim, h)
        self.out = nn.Linear(h, h)

    def forward(self, feat, opcode):
        return self.out(F.gelu(self.input(torch.cat([feat, self.opcode(opcode)], -1))))


class ConfigAttention(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.norm = nn.LayerNorm(h)

    def forward(self, z, mask):
        G, S, H = z.shape
        d = H // self.heads
        q, k, v = self.qkv(z).view(G, S, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        logits = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        logits = logits.masked_fill(mask.logical_not().view(G, 1, 1, S), float("-inf"))
        mixed = torch.matmul(torch.softmax(logits, -1), v)
        return self.norm(z + self.proj(mixed.permute(0, 2, 1, 3).reshape(G, S, H)))


class SegmentMax(torch.autograd.Function):
    """Per graph, the max of its nodes' states (the graphs' nodes are contiguous runs), with
    scatter_reduce("amax")'s gradient: split evenly among tied maxima. Node-major: amax of
    each graph's slice (G small ops on contiguous rows); S x N x H: segment_reduce, whose
    own backward is not used (torch 1.13's gives each tied element the whole gradient when
    the reduced axis is not the last)."""

    @staticmethod
    def forward(ctx, x, lengths, node_graph, offsets):
        d = node_dim(x)
        if d == 0:
            out = torch.stack([x[offsets[g]:offsets[g + 1]].amax(0) for g in range(len(offsets) - 1)])
        else:
            out = torch.segment_reduce(x, "max", lengths=lengths, axis=d)
        ctx.save_for_backward(x, out, lengths, node_graph)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out, lengths, node_graph = ctx.saved_tensors
        d = node_dim(x)
        hit = x == out.index_select(d, node_graph)
        if d == 0:
            ties = torch.zeros_like(out).index_add_(0, node_graph, hit.to(x.dtype))
        else:
            ties = torch.segment_reduce(hit.to(x.dtype), "sum", lengths=lengths, axis=d)
        return hit * (grad / ties).index_select(d, node_graph), None, None, None


def pool_mean_max(x, G, seg, lengths, offsets):
    """Per graph the mean then the max of its rows' states (blocks.cpp pool_mean_max, or
    pool_config_nodes for the configurable nodes' rows): x with its rows along node_dim
    (N x S x H, S x N x H or N x H), seg the graph of each row, lengths the rows per graph,
    offsets their contiguous runs -> the same with G rows of 2H."""
    if not O.segment_reduce:
        return torch.cat([segment_mean(x, seg, G), segment_max(x, seg, G)], -1)
    # The graphs' rows are contiguous runs: segment_reduce over their lengths (same values,
    # and max's gradient split among ties as scatter_reduce's).
    d = node_dim(x)
    if d == 0:  # index_add_ along dimension 0 is fast; segment_reduce there is not
        mean = torch.zeros((G,) + x.shape[1:]).index_add_(0, seg, x) / column(lengths.to(x.dtype), x, 0)
    else:
        lengths = lengths.expand(x.shape[:d] + (G,))
        mean = torch.segment_reduce(x, "mean", lengths=lengths, axis=d)
    return torch.cat([mean, SegmentMax.apply(x, lengths, seg, offsets)], -1)


def pool_nodes(x, b):
    return pool_mean_max(x, b["G"], b["node_graph"], b["lengths"], b["offsets"])


def pool_config_nodes(config_states, b):
    return pool_mean_max(config_states, b["G"], b["config_graph"], b["config_lengths"], b["config_offsets"])


class Readout(nn.Module):
    def __init__(self, h, dropout, heads, pools=1):
        super().__init__()
        self.pool_proj = nn.Linear(pools * 2 * h, h)
        self.hidden = nn.Linear(h, h)
        self.score = nn.Linear(h, 1)
        self.drop = Dropout(dropout)
        self.attention = ConfigAttention(h, heads) if heads > 0 else None

    def forward(self, x, b):
        return self.forward_pooled(pool_nodes(x, b), b)

    def forward_pooled(self, pooled, b):
        """From pooled embeddings G x S x (pools * 2H) (S x G x ... unless node-major)."""
        if not O.node_major:
            pooled = pooled.transpose(0, 1)  # S x G -> G x S
        z = F.gelu(self.pool_proj(pooled))
        if self.attention is not None:
            z = self.attention(z, b["mask"])
        return self.score(self.drop(F.gelu(self.hidden(z)))).squeeze(-1)


def make_blocks(module, h, layers, dropout):
    blocks = []
    for i in range(layers):
        setattr(module, f"sage{i}", SageBlock(h, dropout))
        blocks.append(getattr(module, f"sage{i}"))
    return blocks


def zeroed_linear(n_in, n_out):
    """An nn.Linear initialized as usual (it draws from the generator like tpuperf's) and
    then zeroed: the default models' wide terms start at zero."""
    lin = nn.Linear(n_in, n_out)
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.zero_()
    return lin


class TileModel(nn.Module):
    """early_join (tile_early_join.cpp) or, with shape, early_join_shape: the config input also
    holds the tiling's shape features, and a wide term <wide(mean and max of the graph's
    config-free node states), config input> is added to each score."""

    def __init__(self, num_feat, h, layers, dropout, heads, shape=False):
        super().__init__()
        self.shape = shape
        self.encoder = NodeEncoder(num_feat, h)
        self.config_in = nn.Linear(TILE_CONFIG_DIM + (TILE_SHAPE_FEAT if shape else 0), h)
        self.config_out = nn.Linear(h, h)
        self.blocks = make_blocks(self, h, layers, dropout)
        self.readout = Readout(h, dropout, heads)
        if shape:
            self.wide = zeroed_linear(2 * h, TILE_CONFIG_DIM + TILE_SHAPE_FEAT)

    def forward(self, b):
        base = self.encoder(b["node_feat"], b["opcode"])
        cf = b["config_feat"]
        inp = torch.sign(cf) * torch.log1p(cf.abs())
        if self.shape:
            inp = torch.cat([inp, b["config_shape"]], -1)  # G x S x 37
        cfg = self.config_out(F.gelu(self.config_in(inp)))
        slot = cfg if O.node_major else cfg.transpose(0, 1)  # G x S x H or S x G x H
        if not self.blocks:
            scores = self.readout(per_config(base, slot, b["node_graph"]), b)
        else:
            x = self.blocks[0].forward_split(base, slot, b)
            for block in self.blocks[1:]:
                x = block(x, b)
            scores = self.readout(x, b)
        if not self.shape:
            return scores
        weights = self.wide(pool_nodes(base, b))  # G x 37
        return scores + torch.bmm(inp, weights.unsqueeze(2)).squeeze(2)  # sum_k in[g, s, k] w[g, k]


class LayoutModel(nn.Module):
    """sage (layout_sage.cpp) or, with shape, sage_shape_context (layout_shape_context.cpp):
    the layout term also reads the layouts' shape features, the readout pools the
    configurable nodes apart, and a wide term sums over the configurable nodes
    <wide(node's config-free state after the blocks), [shape features, one-hot values]>."""

    def __init__(self, num_feat, h, layers, dropout, heads, shape=False):
        super().__init__()
        self.shape = shape
        self.encoder = NodeEncoder(num_feat, h)
        self.config_embed = nn.EmbeddingBag(LAYOUT_ONEHOT, h, mode="sum")
        self.config_out = nn.Linear(h, h)
        self.blocks = make_blocks(self, h, layers, dropout)
        self.readout = Readout(h, dropout, heads, pools=2 if shape else 1)
        if shape:
            self.shape_in = nn.Linear(LAYOUT_SHAPE_FEAT, h)
            self.wide = zeroed_linear(h, LAYOUT_SHAPE_FEAT + LAYOUT_ONEHOT)

    def config_term(self, b, M, S):
        """(M * S) x H rows (node-major; S * M otherwise) of the layout term, and with
        --onehot-config the rows' [shape features | one-hot values] (None otherwise), which the
        wide term reuses."""
        values = b["config_values"].view(-1, LAYOUT_CONFIG_DIM)
        if not O.onehot_config:
            bag = self.config_embed(values)
            if self.shape:
                bag = bag + self.shape_in(b["config_shape"].view(-1, LAYOUT_SHAPE_FEAT))
            return self.config_out(F.gelu(bag)), None
        if not self.shape:
            # The bag's sum of 18 rows as a matmul with the 0/1 rows of the values (the
            # embedding bag's backward sorts its indices and scatters; this is a GEMM).
            onehot = torch.zeros(values.size(0), LAYOUT_ONEHOT).scatter_(1, values, 1.0)
            return self.config_out(F.gelu(torch.mm(onehot, self.config_embed.weight))), None
        # shape_in(shape) + bag(values) as one matmul: [shape | one-hot] @ [W_shape^T; table].
        feat = torch.zeros(values.size(0), LAYOUT_SHAPE_FEAT + LAYOUT_ONEHOT)
        feat[:, :LAYOUT_SHAPE_FEAT] = b["config_shape"].view(-1, LAYOUT_SHAPE_FEAT)
        feat.scatter_(1, values + LAYOUT_SHAPE_FEAT, 1.0)
        weight = torch.cat([self.shape_in.weight.t(), self.config_embed.weight])
        return self.config_out(F.gelu(torch.addmm(self.shape_in.bias, feat, weight))), feat

    def forward(self, b):
        base = self.encoder(b["node_feat"], b["opcode"])
        S, M, H = b["S"], b["config_node"].size(0), base.size(1)
        N = base.size(0)
        x = base.unsqueeze(1).expand(N, S, H) if O.node_major else base.unsqueeze(0).expand(S, N, H)
        cfg, feat = self.config_term(b, M, S)
        cfg = cfg.view(M, S, H) if O.node_major else cfg.view(S, M, H)
        x = x.index_add(node_dim(x), b["config_node"], cfg)
        if self.blocks:  # the first block split: node rows and config rows apart
            x = self.blocks[0].forward_layout_split(base, cfg, x, b)
        for block in self.blocks[1:]:
            x = block(x, b)
        if not self.shape:
            return self.readout(x, b)
        d = node_dim(x)
        pooled = torch.cat([pool_nodes(x, b), pool_config_nodes(x.index_select(d, b["config_node"]), b)], -1)
        scores = self.readout.forward_pooled(pooled, b)
        # The wide term after the readout, as tpuperf (its dropout draws come in this order).
        context = base
        for block in self.blocks:  # config-free: N x H
            context = block(context, b)
        return scores + self.wide_cost(self.wide(context.index_select(0, b["config_node"])), feat, b, M, S)

    def wide_cost(self, weights, feat, b, M, S):
        """G x S: per graph the sum over its configurable nodes of <weights[m], [shape
        features, one-hot values] of slot s>; weights M x (27 + 126)."""
        G = b["G"]
        if feat is not None:
            if O.node_major:  # rows (m, s): one batched matmul per node
                per_node = torch.bmm(feat.view(M, S, -1), weights.unsqueeze(2)).squeeze(2)  # M x S
                return torch.zeros(G, S).index_add_(0, b["config_graph"], per_node)
            per_node = (feat.view(S, M, -1) * weights.unsqueeze(0)).sum(-1)  # S x M
            return torch.zeros(S, G).index_add_(1, b["config_graph"], per_node).t()
        # tpuperf's plain definition: shape features times their weights plus the weights
        # the 18 values pick (a gather, no one-hot).
        w_shape, w_values = weights[:, :LAYOUT_SHAPE_FEAT], weights[:, LAYOUT_SHAPE_FEAT:]
        if O.node_major:
            picked = w_values.unsqueeze(1).expand(M, S, LAYOUT_ONEHOT).gather(2, b["config_values"])
            per_node = (b["config_shape"] * w_shape.unsqueeze(1)).sum(-1) + picked.sum(-1)  # M x S
            return torch.zeros(G, S).index_add_(0, b["config_graph"], per_node)
        picked = w_values.unsqueeze(0).expand(S, M, LAYOUT_ONEHOT).gather(2, b["config_values"])
        per_node = (b["config_shape"] * w_shape.unsqueeze(0)).sum(-1) + picked.sum(-1)  # S x M
        return torch.zeros(S, G).index_add_(1, b["config_graph"], per_node).t()


# ------------------------------------------------------------------ loss (losses.cpp)
def listmle_loss(scores, target, mask):
    keyed = target.masked_fill(mask.logical_not(), float("inf"))
    order = torch.sort(keyed, dim=1, stable=True).indices
    real = mask.gather(1, order)
    utility = (-scores).gather(1, order).masked_fill(real.logical_not(), -1e9)
    tail_lse = torch.logcumsumexp(utility.flip(1), 1).flip(1)
    return ((tail_lse - utility) * real).sum(1).mean()


def ordered_pairs(target, mask):
    return (target.unsqueeze(2) < target.unsqueeze(1)) & mask.unsqueeze(2) & mask.unsqueeze(1)


def hinge_loss(scores, target, mask, margin: float = 0.1):
    """pairwise_hinge.cpp: per graph the mean over ordered pairs (i faster than j) of
    relu(margin - (s_j - s_i)), averaged over the graphs with a pair."""
    valid = ordered_pairs(target, mask)
    gap = scores.unsqueeze(1) - scores.unsqueeze(2)  # s_j - s_i
    losses = torch.relu(margin - gap) * valid
    pairs = valid.sum([1, 2]).to(scores.dtype)
    has_pairs = (pairs > 0).to(scores.dtype)
    per_graph = losses.sum([1, 2]) / pairs.clamp_min(1)
    return (per_graph * has_pairs).sum() / has_pairs.sum().clamp_min(1)


def loss_graphs(loss, target, mask):
    """losses/registry.cpp: how many graphs of a batch the loss averages over; a step's batches
    weigh by their share of it (backward_joint_loss)."""
    if loss == "listmle":
        return target.size(0)
    return int(ordered_pairs(target, mask).any(2).any(1).sum())


# Functions the model and loop call through this table; --jit replaces them by their
# torch.jit.script versions.
GRAPH_OPS = {"project_aggregate": project_aggregate, "listmle": listmle_loss, "hinge": hinge_loss}


def script_graph_ops():
    for name in list(GRAPH_OPS):
        GRAPH_OPS[name] = torch.jit.script(GRAPH_OPS[name])


# -------------------------------------------------------- multiply-adds (the model's shapes)
def forward_macs(b, tile, shape, num_feat, h, layers, heads, opcode_dim=32):
    """Multiply-adds of the model's matmuls in one forward pass over batch b, counted from
    the shapes as the model computes them (the tile model's first block split, as both sides
    run it; the layout models' first block split when layout_split is on, else their first
    block on S x N rows); gathers, scatters, sums, elementwise ops and the layout value
    table's one-hot matmul (a sum of 18 rows per node and config) are not counted. Backward
    does about twice a matmul's work (gradients of input and weight), so a training step is
    about 3x this. shape: the default models (early_join_shape, sage_shape_context)."""
    N, G, S = b["node_feat"].size(0), b["G"], b["S"]
    macs = N * (num_feat + opcode_dim) * h + N * h * h  # encoder
    rows = S * G  # readout and config rows
    pools = 2 if shape and not tile else 1
    macs += rows * pools * 2 * h * h + rows * h * h + rows * h  # pool_proj, hidden, score
    if heads > 0:
        macs += rows * h * 3 * h + 2 * G * S * S * h + rows * h * h  # qkv, logits, mix, proj
    if tile:
        k = TILE_CONFIG_DIM + (TILE_SHAPE_FEAT if shape else 0)
        macs += rows * k * h + rows * h * h  # config_in, config_out
        if layers > 0:
            macs += N * 3 * h * h + rows * h * 4 * h + (layers - 1) * S * N * 3 * h * h
        if shape:
            macs += G * 2 * h * k + rows * k  # wide: its weights per graph, their product with the input
    else:
        M = b["config_node"].size(0)
        macs += S * M * h * h  # config_out (the embedding bag sums)
        if layers > 0 and O.layout_split:  # the first block split: node rows + config rows
            macs += N * 3 * h * h + S * M * 3 * h * h + (layers - 1) * S * N * 3 * h * h
        else:
            macs += layers * S * N * 3 * h * h
        if shape:
            k = LAYOUT_SHAPE_FEAT + LAYOUT_ONEHOT
            macs += S * M * LAYOUT_SHAPE_FEAT * h  # shape_in
            macs += layers * N * 3 * h * h  # the config-free pass of the blocks (the wide term's context)
            macs += M * h * k + S * M * k  # wide: per-node weights, their product with [shape, one-hot]
    return macs


# ------------------------------------------------------------ loop (fold_training.cpp)
def learning_rate(a, step, total):
    warm = int(a.warmup_fraction * total)
    if step < warm:
        return a.lr * (step + 1) / warm
    t = (step - warm) / (total - warm) if total > warm else 1.0
    return a.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def checkpoint_weights(path):
    """A tpuperf checkpoint's training weights by parameter name ("model.<name>")."""
    ckpt = dict(torch.jit.load(path).named_parameters())
    names = [k for k in ckpt if k.startswith("model.")]
    if "training_weights.count" in ckpt:
        return {name: ckpt[f"training_weights.{i}"] for i, name in enumerate(names)}
    return {name: ckpt[name] for name in names}


def compare_checkpoint(model, path):
    """Per parameter, the max |difference| between the model's and a tpuperf checkpoint's
    training weights (checkpoint_weights): with weight averaging (train.ema_decay > 0) its model.* tensors hold the average
    and the training weights are stored beside them (training_weights.i, by position in the
    model's parameter order, which is that of its model.* tensors)."""
    ckpt = checkpoint_weights(path)
    diffs = {}
    for name, p in model.named_parameters():
        theirs = ckpt["model." + name]
        if theirs.shape != p.shape:
            raise SystemExit(f"{name}: shape {tuple(theirs.shape)} in {path}, {tuple(p.shape)} here")
        diffs[name] = (theirs.double() - p.detach().double()).abs().max().item()
    extra = sorted(k for k in ckpt if k[6:] not in diffs)
    if extra:
        raise SystemExit(f"{path} has parameters the reference lacks: {extra[:5]}")
    return diffs


class Step:
    """What one optimizer step needs besides the model: the data, how a step's graphs are
    batched, the loss."""

    def __init__(self, tile, shape, graphs, overhead, loss, margin):
        self.tile, self.shape, self.graphs, self.overhead = tile, shape, graphs, overhead
        self.loss, self.margin = loss, margin

    def batches(self, draw):
        """tpuperf's train_step builds all of a step's batches before its forward passes."""
        return [make_batch(self.tile, [self.graphs[g] for g, _ in part], [c for _, c in part], self.shape)
                for part in step_batches(self.graphs, draw, self.overhead)]

    def loss_of(self, scores, b):
        if self.loss == "hinge":
            return GRAPH_OPS["hinge"](scores, b["target"], b["mask"], self.margin)
        return GRAPH_OPS["listmle"](scores, b["target"], b["mask"])

    def backward(self, model, batches):
        """backward_joint_loss (losses/registry.cpp): each batch's loss weighted by its share of
        the graphs the loss counts (on one rank: the mean over the step's graphs), backward
        batch by batch; returns the joint loss."""
        counted = [loss_graphs(self.loss, b["target"], b["mask"]) for b in batches]
        joint, total = 0.0, sum(counted)
        for b, c in zip(batches, counted):
            if c == 0:
                continue  # e.g. hinge on slates without a pair: no loss, no gradient
            loss = self.loss_of(model(b), b)
            (loss * (c / total)).backward()
            joint += loss.item() * (c / total)
        return joint


def profile_steps(model, opt, step, draws, grad_clip, top=14):
    """Share of self CPU time per LibTorch op over some extra steps (not timed, not part
    of the training): where the time of a step goes. tpuperf calls the same ops."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for d in draws:
            opt.zero_grad()
            step.backward(model, step.batches(d))
            opt.clip_and_step(grad_clip)
    ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ops)
    return [{"op": e.key, "share": e.self_cpu_time_total / total, "calls": e.count} for e in ops[:top]]


class FlatParameters:
    """Every parameter a view of one flat buffer and its gradient a view of another, so that
    clipping is one norm and one scale of one tensor, and AdamW updates one tensor (all
    parameters share lr and weight decay, as in tpuperf's FusedAdamW). Backward accumulates
    into the gradient views in place (they are never set to None)."""

    def __init__(self, params):
        with torch.no_grad():
            self.param = nn.Parameter(torch.cat([p.detach().reshape(-1) for p in params]))
        self.param.grad = torch.zeros_like(self.param)
        at = 0
        for p in params:
            n = p.numel()
            p.data = self.param.data[at:at + n].view_as(p)
            p.grad = self.param.grad[at:at + n].view_as(p)
            at += n
        self.params = params

    def check(self):
        base = self.param.grad.data_ptr()
        end = base + self.param.grad.numel() * self.param.grad.element_size()
        assert all(base <= p.grad.data_ptr() < end for p in self.params), "a gradient left the flat buffer"

    def zero_grad(self):
        self.param.grad.zero_()

    def clip(self, max_norm):
        """clip_grad_norm_'s arithmetic on the one buffer."""
        total = torch.linalg.vector_norm(self.param.grad)
        coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        self.param.grad.mul_(coef)


class Optimizer:
    """AdamW and gradient clipping in one of three forms (--optimizer): plain (AdamW and
    clip_grad_norm_ over the parameter list, torch's defaults), foreach (AdamW(foreach=True),
    and one flat norm of the gradients scaled with _foreach_mul_), flat (FlatParameters)."""

    def __init__(self, params, lr, weight_decay, kind):
        self.kind, self.params = kind, params
        if kind == "flat":
            self.flat = FlatParameters(params)
            self.opt = torch.optim.AdamW([self.flat.param], lr=lr, weight_decay=weight_decay)
        else:
            self.opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=(kind == "foreach"))
        self.param_groups = self.opt.param_groups

    def zero_grad(self):
        if self.kind == "flat":
            self.flat.zero_grad()
        else:
            self.opt.zero_grad()

    def clip_and_step(self, max_norm):
        if max_norm > 0:
            if self.kind == "flat":
                self.flat.clip(max_norm)
            elif self.kind == "foreach":
                grads = [p.grad for p in self.params if p.grad is not None]
                total = torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads]))
                torch._foreach_mul_(grads, torch.clamp(max_norm / (total + 1e-6), max=1.0).item())
            else:
                torch.nn.utils.clip_grad_norm_(self.params, max_norm)
        self.opt.step()


# glibc.malloc.hugetlb=1: malloc advises transparent huge pages for its memory, as
# tpuperf-train's tensor pool does (trainer/models/allocator.cpp); measured 10-20% faster
# for the tile default model on this machine (E35).
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024), "MALLOC_TRIM_THRESHOLD_": str(1 << 62),
              "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processed", required=True, help="data.processed_dir")
    ap.add_argument("--collection", required=True)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--steps-per-epoch", type=int, default=0)
    ap.add_argument("--graphs-per-step", type=int, default=8)
    ap.add_argument("--slate", type=int, default=None, help="default: 32 tile, 16 layout")
    ap.add_argument("--arch", help="model.<kind>.arch: early_join or early_join_shape (tile), sage or "
                    "sage_shape_context (layout); default the schema's: " + ", ".join(DEFAULT_ARCH.values()))
    ap.add_argument("--loss", choices=["listmle", "hinge"], help="default the schema's: hinge tile, listmle layout")
    ap.add_argument("--hinge-margin", type=float, default=0.1, help="train.hinge_margin")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--heads", type=int, default=None, help="attention heads (default: 0 tile, 4 layout)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--warmup-fraction", type=float, default=0.05)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compare-checkpoint", help="a tpuperf last.pt of the same fold and settings")
    ap.add_argument("--profile-steps", type=int, default=0,
                    help="after training, profile this many extra steps (not timed)")
    ap.add_argument("--json", help="write the figures here")
    sp = ap.add_argument_group("speed-ups (all on by default; each can be turned off to measure it)")
    sp.add_argument("--no-split", action="store_true",
                    help="tile: run the first SAGE block on the full S x N x H states instead of "
                         "tpuperf's split (node rows N + per-(slot, graph) rows S x G)")
    sp.add_argument("--no-layout-split", action="store_true",
                    help="layout: run the first SAGE block on the full S x N x H states instead of "
                         "tpuperf's split (node rows N + config rows S x M, moved along the edges "
                         "from configurable nodes)")
    sp.add_argument("--no-node-major", action="store_true",
                    help="per-config states S x N x H (tpuperf's layout) instead of N x S x H, whose "
                         "gathers and scatters over nodes move contiguous rows")
    sp.add_argument("--no-catfree", action="store_true",
                    help="aggregate, cat the three H-wide parts and project (3H-wide cat) instead of "
                         "projecting first and aggregating H-wide slices")
    sp.add_argument("--no-segment-reduce", action="store_true",
                    help="readout pooling with index_add (mean) and scatter_reduce amax (max) over the "
                         "node-to-graph index instead of using that each graph's nodes are a contiguous "
                         "run (node-major: index_add_ mean and per-graph amax; S x N x H: segment_reduce)")
    sp.add_argument("--no-onehot-config", action="store_true",
                    help="layout: the config values' embedding with nn.EmbeddingBag instead of a matmul "
                         "of their one-hot rows with the bag's weight")
    sp.add_argument("--optimizer", choices=["plain", "foreach", "flat"], default="flat",
                    help="plain: AdamW + clip_grad_norm_ per tensor; foreach: AdamW(foreach=True) + one "
                         "flat norm; flat (default): parameters and gradients views of one buffer each")
    sp.add_argument("--dropout-rng", choices=["bernoulli", "bits16"], default="bits16",
                    help="bernoulli: nn.Dropout (bernoulli_); bits16 (default): 16 random bits per "
                         "element from 64-bit draws, tpuperf's keep probability")
    sp.add_argument("--jit", action="store_true", help="torch.jit.script the loss and the graph ops")
    sp.add_argument("--no-malloc-env", action="store_true",
                    help="do not re-execute under tpuperf-train's allocator settings (glibc's "
                         "MALLOC_MMAP_THRESHOLD_=32 MiB, MALLOC_TRIM_THRESHOLD_ never: what "
                         "keep_freed_memory_for_reuse sets with mallopt; and glibc.malloc.hugetlb=1, "
                         "transparent huge pages, as its tensor pool uses)")
    a = ap.parse_args()
    if not a.no_malloc_env and any(os.environ.get(k) != v for k, v in MALLOC_ENV.items()):
        # glibc reads these at start-up: re-execute with them set.
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **MALLOC_ENV})
    O.segment_reduce, O.onehot_config = not a.no_segment_reduce, not a.no_onehot_config
    O.node_major, O.layout_split = not a.no_node_major, not a.no_layout_split
    O.split, O.catfree, O.optimizer, O.dropout_rng, O.jit = (not a.no_split, not a.no_catfree, a.optimizer,
                                                              a.dropout_rng, a.jit)
    if O.jit:
        script_graph_ops()
    torch.set_num_threads(a.threads)
    warnings.filterwarnings("ignore", message="scatter_reduce")  # "in beta" notice of torch 1.13
    tile = a.collection.startswith("tile:")
    slate = a.slate or (32 if tile else 16)
    heads = a.heads if a.heads is not None else (0 if tile else 4)
    kind = "tile" if tile else "layout"
    arch = a.arch or DEFAULT_ARCH[kind]
    if arch not in ARCHS[kind]:
        ap.error(f"--arch {arch}: the reference implements the {kind} models {', '.join(ARCHS[kind])}")
    shape = arch == DEFAULT_ARCH[kind]  # the default models read the shape features
    loss_name = a.loss or ("hinge" if tile else "listmle")

    manifest = json.load(open(os.path.join(a.processed, "manifest.yaml")))
    folds = int(next(l.split(":")[1] for l in manifest["settings"].splitlines() if l.strip().startswith("folds:")))
    t0 = time.perf_counter()
    graphs = load_graphs(a.processed, a.collection, a.fold, folds)
    load_s = time.perf_counter() - t0
    print(f"loaded {len(graphs)} train graphs of {a.collection} fold {a.fold} in {load_s:.1f} s", flush=True)

    label = f"{a.collection} fold {a.fold}"
    torch.manual_seed(mix_seed(a.seed, label))
    Model = TileModel if tile else LayoutModel
    num_feat = graphs[0].node_feat.shape[1]
    model = Model(num_feat, a.hidden, a.layers, a.dropout, heads, shape)
    model.train()
    params = list(model.parameters())
    opt = Optimizer(params, a.lr, a.weight_decay, a.optimizer)
    sampler = SlateSampler([g.num_configs for g in graphs], a.seed, a.fold, a.graphs_per_step, slate)
    step = Step(tile, shape, graphs, batch_overhead_in_node_slots(a.hidden, a.layers), loss_name, a.hinge_margin)
    dims = dict(tile=tile, shape=shape, num_feat=num_feat, h=a.hidden, layers=a.layers, heads=heads)
    spe = a.steps_per_epoch or sampler.steps_per_pass()
    total, step_no, epochs = a.epochs * spe, 0, []
    for epoch in range(a.epochs):
        torch.manual_seed(mix_seed(a.seed, f"{label}/epoch{epoch}/rank0"))
        draws = [sampler.draw(epoch, s) for s in range(spe)]  # before the clock: favours the reference
        loss_sum = graphs_n = configs = batch_s = macs = 0.0
        start, cpu_start = time.perf_counter(), time.process_time()
        for d in draws:
            for group in opt.param_groups:
                group["lr"] = learning_rate(a, step_no, total)
            opt.zero_grad()
            t_batch = time.perf_counter()
            batches = step.batches(d)
            batch_s += time.perf_counter() - t_batch
            macs += sum(forward_macs(b, **dims) for b in batches)
            loss_sum += step.backward(model, batches) * len(d)  # the joint loss is a mean over d
            opt.clip_and_step(a.grad_clip)
            graphs_n += len(d)
            configs += sum(len(c) for _, c in d)
            step_no += 1
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        epochs.append({"epoch": epoch + 1, "loss": loss_sum / graphs_n, "configs": configs, "seconds": seconds,
                       "batch_seconds": batch_s, "forward_macs": macs,
                       "cpu_seconds": cpu_seconds})
        print(f"{label} epoch {epoch + 1}/{a.epochs}: loss {loss_sum / graphs_n:.4f}, "
              f"{configs / seconds:.0f} configs/s, {seconds:.1f} s ({100 * batch_s / seconds:.0f}% building batches)",
              flush=True)
    out = {"collection": a.collection, "fold": a.fold, "graphs": len(graphs), "steps_per_epoch": spe,
           "slate": slate, "arch": arch, "loss": loss_name, "hidden": a.hidden, "layers": a.layers, "heads": heads, "threads": a.threads,
           "torch": torch.__version__, "load_seconds": load_s, "epochs": epochs,
           "speedups": {"split": O.split, "layout_split": O.layout_split, "node_major": O.node_major, "catfree": O.catfree, "segment_reduce": O.segment_reduce,
                        "onehot_config": O.onehot_config, "optimizer": O.optimizer,
                        "dropout_rng": O.dropout_rng, "jit": O.jit, "malloc_env": not a.no_malloc_env},
           "configs_per_s": sum(e["configs"] for e in epochs) / sum(e["seconds"] for e in epochs),
           "configs_per_cpu_s": sum(e["configs"] for e in epochs) / sum(e["cpu_seconds"] for e in epochs)}
    if a.compare_checkpoint:
        out["param_diffs"] = compare_checkpoint(model, a.compare_checkpoint)
        out["max_abs_param_diff"], out["params_compared"] = max(out["param_diffs"].values()), len(out["param_diffs"])
        print(f"max |parameter - {a.compare_checkpoint}| = {out['max_abs_param_diff']:.3g} over "
              f"{out['params_compared']} tensors")
    if a.profile_steps > 0:
        extra = [sampler.draw(a.epochs, s) for s in range(a.profile_steps)]
        out["profile"] = profile_steps(model, opt, step, extra, a.grad_clip)
        print("self CPU time by op: " + ", ".join(f"{p['op']} {100 * p['share']:.0f}%" for p in out["profile"]))
    fl = 6 * sum(e["forward_macs"] for e in epochs)  # 2 flops per multiply-add, training ~ 3x forward
    out["train_flops_per_config"] = fl / sum(e["configs"] for e in epochs)
    out["gflops"] = fl / sum(e["seconds"] for e in epochs) / 1e9
    if a.optimizer == "flat":
        opt.flat.check()
    print(f"{label}: {out['configs_per_s']:.1f} configs/s over {a.epochs} epochs "
          f"({out['configs_per_cpu_s']:.1f} per CPU second); matmuls "
          f"{out['train_flops_per_config'] / 1e6:.2f} MFLOP per config, {out['gflops']:.2f} GFLOP/s")
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
