#!/usr/bin/python3
"""Reference trainer for the training benchmark: the model and loop of tpuperf-train
(trainer/models.cpp, losses.cpp, graph_ops.cpp, batch.cpp, sampler.cpp and train_fold /
train_step in fold_training.cpp) written in plain PyTorch (index_add_ / scatter_reduce, no
PyG), fed from the same HDF5 shards (common/shards/shard.h) with the manifest's feature transform.

It reproduces tpuperf's run of one fold on one rank: the same train graphs in manifest
order, the same slates (the splitmix64 sampler re-implemented), the same initial weights
(torch.manual_seed with tpuperf's mix_seed, modules built in the same order), the same
batches (a step's graphs split by slate width: sampler.cpp batches_by_width) and batch
layout, ListMLE, AdamW, warm-up + cosine learning rate and gradient clipping.
Dropout masks differ from tpuperf's (a splitmix64 hash of seed and element,
trainer/kernels/fused_ops.h; the reference draws from torch's generator). So with --dropout 0
(and tpuperf's model dropout 0) its
per-epoch losses should equal the ones tpuperf logs, and its final weights the fold's
last.pt (--compare-checkpoint), up to float rounding: that is the check that both sides
train the same thing before their speeds are compared (bench_train.sh runs it apart from
the timed runs, which use the configured dropout on both sides).

Timing: only the optimizer steps of an epoch (batch building, forward, loss, backward,
clipping, AdamW), as tpuperf's "configs/s" does. Unlike tpuperf, which reads layout config
rows from the shard at every step and samples inside the step, the reference holds every
row in memory and draws an epoch's slates before its clock starts: both differences favour
the reference.

It is written as a PyTorch user who wants it fast would write it, with the same math: the
tile model's first block split as tpuperf's forward_split, per-config states node-major (N x
S x H, so that gathers and scatters over nodes move contiguous rows), aggregation without the
3H-wide cat, pooling over the graphs' contiguous node runs, the layout config embedding as a
one-hot matmul, dropout masks from 16-bit draws, parameters and gradients in flat buffers
(one clipping norm, one AdamW tensor), and tpuperf-train's allocator settings (glibc
environment). Each speed-up has a flag that turns it off (--no-split, --no-node-major,
--no-catfree, --no-segment-reduce, --no-onehot-config, --dropout-rng bernoulli, --optimizer
plain|foreach, --no-malloc-env; --jit scripts the loss and the aggregation), so that
bench_train.sh can measure each one's effect.

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
    split = catfree = segment_reduce = onehot_config = node_major = True
    optimizer = "flat"
    dropout_rng = "bits16"
    jit = False


O = Options()

M64 = (1 << 64) - 1
NUM_OPCODES = 121
TILE_CONFIG_DIM = 24
LAYOUT_CONFIG_DIM = 18
LAYOUT_LEVELS = 7

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
        x = rows("node_offsets", "node_feat")[:, kept].astype(np.float64)
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
        else:
            g.config_ids = rows("config_node_offsets", "node_config_ids").astype(np.int64)
            nc = len(g.config_ids)
            g.packed = rows("packed_offsets", "node_config_packed").reshape(len(g.runtime), nc)
            g.target = g.runtime
        g.num_configs = len(g.runtime)
        graphs.append(g)
    for f in shards.values():
        f.close()
    return graphs


POW7 = 7 ** np.arange(LAYOUT_CONFIG_DIM, dtype=np.uint64)
ROW0 = LAYOUT_LEVELS * np.arange(LAYOUT_CONFIG_DIM, dtype=np.int64)


def layout_values(packed):
    """Base-7 digits (position j holds v + 1, processed_graph.h) -> embedding rows j*7 + v+1."""
    return ((packed[..., None] // POW7) % 7).astype(np.int64) + ROW0


def make_batch(tile, graphs, slates):
    """trainer/batch.cpp make_batch: graphs concatenated, slots padded with the first config."""
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
    if O.catfree or (tile and O.split):
        # Per-batch tables of the cat-free aggregation and the split first block, built in
        # numpy with the batch (no tensor ops per block): producers/consumers per node, and
        # for each edge direction the row of the projected states it reads and its weight.
        n = int(offsets[-1])
        consumer, producer = b["consumer"].numpy(), b["producer"].numpy()
        has_p = np.bincount(consumer, minlength=n)  # u is a consumer: it has producers
        has_c = np.bincount(producer, minlength=n)
        # Per edge, the weight of its term in its consumer's mean over producers and in its
        # producer's mean over consumers (project_aggregate).
        b["w_p"] = torch.from_numpy((1.0 / has_p[consumer]).astype(np.float32))
        b["w_c"] = torch.from_numpy((1.0 / has_c[producer]).astype(np.float32))
        node_graph = np.repeat(np.arange(G), [g.num_nodes for g in graphs])
        b["kind"] = torch.from_numpy(node_graph * 4 + (has_p > 0) + 2 * (has_c > 0))
    if tile:
        b["config_feat"] = torch.from_numpy(np.stack([g.config_feat[ix] for g, ix in zip(graphs, index)]))
    else:
        b["config_node"] = torch.from_numpy(np.concatenate([g.config_ids + o for g, o in zip(graphs, offsets)]))
        # S x M x 18 (node-major: M x S x 18): slot s of every configurable node of graph g
        # uses config index[g, s].
        packed = np.concatenate([g.packed[ix] for g, ix in zip(graphs, index)], axis=1)
        b["config_values"] = torch.from_numpy(np.ascontiguousarray(layout_values(packed.T if O.node_major else packed)))
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


class Readout(nn.Module):
    def __init__(self, h, dropout, heads):
        super().__init__()
        self.pool_proj = nn.Linear(2 * h, h)
        self.hidden = nn.Linear(h, h)
        self.score = nn.Linear(h, 1)
        self.drop = Dropout(dropout)
        self.attention = ConfigAttention(h, heads) if heads > 0 else None

    def forward(self, x, b):
        if O.segment_reduce:
            # The graphs' nodes are contiguous runs: segment_reduce over their lengths (same
            # values, and max's gradient split among ties as scatter_reduce's).
            d = node_dim(x)
            if d == 0:  # index_add_ along dimension 0 is fast; segment_reduce there is not
                lengths = b["lengths"]
                mean = torch.zeros((b["G"],) + x.shape[1:]).index_add_(0, b["node_graph"], x) / \
                    column(lengths.to(x.dtype), x, 0)
            else:
                lengths = b["lengths"].expand(x.shape[:d] + (b["G"],))
                mean = torch.segment_reduce(x, "mean", lengths=lengths, axis=d)
            pooled = torch.cat([mean, SegmentMax.apply(x, lengths, b["node_graph"], b["offsets"])], -1)
        else:
            pooled = torch.cat([segment_mean(x, b["node_graph"], b["G"]),
                                segment_max(x, b["node_graph"], b["G"])], -1)
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


class TileModel(nn.Module):
    def __init__(self, num_feat, h, layers, dropout, heads):
        super().__init__()
        self.encoder = NodeEncoder(num_feat, h)
        self.config_in = nn.Linear(TILE_CONFIG_DIM, h)
        self.config_out = nn.Linear(h, h)
        self.blocks = make_blocks(self, h, layers, dropout)
        self.readout = Readout(h, dropout, heads)

    def forward(self, b):
        base = self.encoder(b["node_feat"], b["opcode"])
        cf = b["config_feat"]
        cfg = self.config_out(F.gelu(self.config_in(torch.sign(cf) * torch.log1p(cf.abs()))))
        slot = cfg if O.node_major else cfg.transpose(0, 1)  # G x S x H or S x G x H
        if not self.blocks:
            return self.readout(per_config(base, slot, b["node_graph"]), b)
        x = self.blocks[0].forward_split(base, slot, b)
        for block in self.blocks[1:]:
            x = block(x, b)
        return self.readout(x, b)


class LayoutModel(nn.Module):
    def __init__(self, num_feat, h, layers, dropout, heads):
        super().__init__()
        self.encoder = NodeEncoder(num_feat, h)
        self.config_embed = nn.EmbeddingBag(LAYOUT_CONFIG_DIM * LAYOUT_LEVELS, h, mode="sum")
        self.config_out = nn.Linear(h, h)
        self.blocks = make_blocks(self, h, layers, dropout)
        self.readout = Readout(h, dropout, heads)

    def forward(self, b):
        base = self.encoder(b["node_feat"], b["opcode"])
        S, M, H = b["S"], b["config_node"].size(0), base.size(1)
        N = base.size(0)
        x = base.unsqueeze(1).expand(N, S, H) if O.node_major else base.unsqueeze(0).expand(S, N, H)
        if M > 0:
            values = b["config_values"].view(S * M, LAYOUT_CONFIG_DIM)  # rows (m, s) or (s, m)
            if O.onehot_config:
                # The bag's sum of 18 rows as a matmul with the 0/1 rows of the values (the
                # embedding bag's backward sorts its indices and scatters; this is a GEMM).
                onehot = torch.zeros(S * M, LAYOUT_CONFIG_DIM * LAYOUT_LEVELS).scatter_(1, values, 1.0)
                bag = torch.mm(onehot, self.config_embed.weight)
            else:
                bag = self.config_embed(values)
            cfg = self.config_out(F.gelu(bag))
            if O.node_major:
                x = x.index_add(0, b["config_node"], cfg.view(M, S, H))
            else:
                x = x.index_add(1, b["config_node"], cfg.view(S, M, H))
        else:
            x = x.contiguous()
        for block in self.blocks:
            x = block(x, b)
        return self.readout(x, b)


# ------------------------------------------------------------------ loss (losses.cpp)
def listmle_loss(scores, target, mask):
    keyed = target.masked_fill(mask.logical_not(), float("inf"))
    order = torch.sort(keyed, dim=1, stable=True).indices
    real = mask.gather(1, order)
    utility = (-scores).gather(1, order).masked_fill(real.logical_not(), -1e9)
    tail_lse = torch.logcumsumexp(utility.flip(1), 1).flip(1)
    return ((tail_lse - utility) * real).sum(1).mean()


# Functions the model and loop call through this table; --jit replaces them by their
# torch.jit.script versions.
GRAPH_OPS = {"project_aggregate": project_aggregate, "listmle": listmle_loss}


def script_graph_ops():
    for name in list(GRAPH_OPS):
        GRAPH_OPS[name] = torch.jit.script(GRAPH_OPS[name])


# -------------------------------------------------------- multiply-adds (the model's shapes)
def forward_macs(b, tile, num_feat, h, layers, heads, opcode_dim=32):
    """Multiply-adds of the model's matmuls in one forward pass over batch b, counted from
    the shapes as the model computes them (the tile model's first block split, as both sides
    run it); gathers, scatters, sums and elementwise ops are not counted. Backward does
    about twice a matmul's work (gradients of input and weight), so a training step is about
    3x this."""
    N, G, S = b["node_feat"].size(0), b["G"], b["S"]
    macs = N * (num_feat + opcode_dim) * h + N * h * h  # encoder
    rows = S * G  # readout and config rows
    macs += rows * 2 * h * h + rows * h * h + rows * h  # pool_proj, hidden, score
    if heads > 0:
        macs += rows * h * 3 * h + 2 * G * S * S * h + rows * h * h  # qkv, logits, mix, proj
    if tile:
        macs += rows * TILE_CONFIG_DIM * h + rows * h * h  # config_in, config_out
        if layers > 0:
            macs += N * 3 * h * h + rows * h * 4 * h + (layers - 1) * S * N * 3 * h * h
    else:
        macs += S * b["config_node"].size(0) * h * h  # config_out (the embedding bag sums)
        macs += layers * S * N * 3 * h * h
    return macs


# ------------------------------------------------------------ loop (fold_training.cpp)
def learning_rate(a, step, total):
    warm = int(a.warmup_fraction * total)
    if step < warm:
        return a.lr * (step + 1) / warm
    t = (step - warm) / (total - warm) if total > warm else 1.0
    return a.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def compare_checkpoint(model, path):
    """Max |difference| between the model's parameters and a tpuperf checkpoint's."""
    ckpt = dict(torch.jit.load(path).named_parameters())
    worst, names = 0.0, 0
    for name, p in model.named_parameters():
        theirs = ckpt["model." + name]
        if theirs.shape != p.shape:
            raise SystemExit(f"{name}: shape {tuple(theirs.shape)} in {path}, {tuple(p.shape)} here")
        worst = max(worst, (theirs.double() - p.detach().double()).abs().max().item())
        names += 1
    extra = sorted(k for k in ckpt if k.startswith("model.") and k[6:] not in dict(model.named_parameters()))
    if extra:
        raise SystemExit(f"{path} has parameters the reference lacks: {extra[:5]}")
    return worst, names


def profile_steps(model, opt, params, tile, graphs, draws, grad_clip, overhead, top=14):
    """Share of self CPU time per LibTorch op over some extra steps (not timed, not part
    of the training): where the time of a step goes. tpuperf calls the same ops."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for d in draws:
            opt.zero_grad()
            for part in step_batches(graphs, d, overhead):
                b = make_batch(tile, [graphs[g] for g, _ in part], [c for _, c in part])
                (GRAPH_OPS["listmle"](model(b), b["target"], b["mask"]) * (len(part) / len(d))).backward()
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


MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024), "MALLOC_TRIM_THRESHOLD_": str(1 << 62)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processed", required=True, help="data.processed_dir")
    ap.add_argument("--collection", required=True)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--steps-per-epoch", type=int, default=0)
    ap.add_argument("--graphs-per-step", type=int, default=8)
    ap.add_argument("--slate", type=int, default=None, help="default: 32 tile, 16 layout")
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
                         "keep_freed_memory_for_reuse sets with mallopt)")
    a = ap.parse_args()
    if not a.no_malloc_env and any(os.environ.get(k) != v for k, v in MALLOC_ENV.items()):
        # glibc reads these at start-up: re-execute with them set.
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **MALLOC_ENV})
    O.segment_reduce, O.onehot_config = not a.no_segment_reduce, not a.no_onehot_config
    O.node_major = not a.no_node_major
    O.split, O.catfree, O.optimizer, O.dropout_rng, O.jit = (not a.no_split, not a.no_catfree, a.optimizer,
                                                              a.dropout_rng, a.jit)
    if O.jit:
        script_graph_ops()
    torch.set_num_threads(a.threads)
    warnings.filterwarnings("ignore", message="scatter_reduce")  # "in beta" notice of torch 1.13
    tile = a.collection.startswith("tile:")
    slate = a.slate or (32 if tile else 16)
    heads = a.heads if a.heads is not None else (0 if tile else 4)

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
    model = Model(num_feat, a.hidden, a.layers, a.dropout, heads)
    model.train()
    params = list(model.parameters())
    opt = Optimizer(params, a.lr, a.weight_decay, a.optimizer)
    sampler = SlateSampler([g.num_configs for g in graphs], a.seed, a.fold, a.graphs_per_step, slate)
    overhead = batch_overhead_in_node_slots(a.hidden, a.layers)
    spe = a.steps_per_epoch or sampler.steps_per_pass()
    total, step_no, epochs = a.epochs * spe, 0, []
    for epoch in range(a.epochs):
        torch.manual_seed(mix_seed(a.seed, f"{label}/epoch{epoch}/rank0"))
        draws = [sampler.draw(epoch, s) for s in range(spe)]  # before the clock: favours the reference
        loss_sum = graphs_n = configs = batch_s = macs = 0.0
        start, cpu_start = time.perf_counter(), time.process_time()
        for step in range(spe):
            for group in opt.param_groups:
                group["lr"] = learning_rate(a, step_no, total)
            opt.zero_grad()
            d = draws[step]
            for part in step_batches(graphs, d, overhead):
                t_batch = time.perf_counter()
                b = make_batch(tile, [graphs[g] for g, _ in part], [c for _, c in part])
                batch_s += time.perf_counter() - t_batch
                macs += forward_macs(b, tile, num_feat, a.hidden, a.layers, heads)
                loss = GRAPH_OPS["listmle"](model(b), b["target"], b["mask"])
                (loss * (len(part) / len(d))).backward()  # weight n * P / G on one rank
                loss_sum += loss.item() * len(part)
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
           "slate": slate, "hidden": a.hidden, "layers": a.layers, "heads": heads, "threads": a.threads,
           "torch": torch.__version__, "load_seconds": load_s, "epochs": epochs,
           "speedups": {"split": O.split, "node_major": O.node_major, "catfree": O.catfree, "segment_reduce": O.segment_reduce,
                        "onehot_config": O.onehot_config, "optimizer": O.optimizer,
                        "dropout_rng": O.dropout_rng, "jit": O.jit, "malloc_env": not a.no_malloc_env},
           "configs_per_s": sum(e["configs"] for e in epochs) / sum(e["seconds"] for e in epochs),
           "configs_per_cpu_s": sum(e["configs"] for e in epochs) / sum(e["cpu_seconds"] for e in epochs)}
    if a.compare_checkpoint:
        out["max_abs_param_diff"], out["params_compared"] = compare_checkpoint(model, a.compare_checkpoint)
        print(f"max |parameter - {a.compare_checkpoint}| = {out['max_abs_param_diff']:.3g} over "
              f"{out['params_compared']} tensors")
    if a.profile_steps > 0:
        extra = [sampler.draw(a.epochs, s) for s in range(a.profile_steps)]
        out["profile"] = profile_steps(model, opt, params, tile, graphs, extra, a.grad_clip, overhead)
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
