#!/usr/bin/python3
"""Independent reference featurizer: XLA tuning records -> TpuGraphs .npz files.

Written from /work/notes/featurizer_spec.md (which cites the upstream facts:
google-research-datasets/tpu_graphs, tpu_graphs/process_data/xla/{featurizers.h,
hlo_encoder.cc, hlo_opcode.h, tuning_data_iterator.cc}, tpu_graphs/proto/tuning.proto,
and XLA's hlo.proto / xla_data.proto).  It is a test-fixture generator: tests compare
the C++ featurizer against this script array by array, so it must never call a
tpuperf binary and it depends on numpy only.  The protobuf wire format is decoded
here by hand (no protobuf library): that decoder is the correctness reference.

--decoder protobuf parses the records with the protobuf library instead (Debian's
python3-protobuf), with tpuperf's schema (pipeline/featurize/tuning_records.proto)
compiled by protoc into a temporary directory at start-up (or read from --pb2-dir): how a
Python user would write this featurizer, and the peer the featurizing benchmark measures
tpuperf against.  The featurization after decoding is the same code for both.

Usage:
  reference_featurize.py --out DIR [--split train] [--source xla] [--search random]
                         [--kind auto|tile|layout] [--prefix NAME] [--facts]
                         [--lenient] [--decoder wire|protobuf [--pb2-dir DIR]] FILE.pb...

Output tree (as in the public release):
  DIR/npz/tile/xla/<split>/<prefix>_<fingerprint-hex>.npz     one per kept kernel
  DIR/npz/layout/<source>/<search>/<split>/<file-stem>.npz    one per module
"""

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

# ---------------------------------------------------------------------------
# 1. Protobuf wire format
# ---------------------------------------------------------------------------

WT_VARINT, WT_FIXED64, WT_LEN, WT_FIXED32 = 0, 1, 2, 5
MASK64 = (1 << 64) - 1


class DecodeError(ValueError):
    pass


def read_varint(buf, pos):
    """Reads a base-128 varint at buf[pos]; returns (unsigned 64-bit value, new pos)."""
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & MASK64, pos
    raise DecodeError("varint longer than 10 bytes")


def iter_fields(buf):
    """Yields (field_number, wire_type, value) for each field of a message.

    value is an int for varints, a memoryview for the other wire types."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise DecodeError("field number 0")
        if wire_type == WT_VARINT:
            value, pos = read_varint(buf, pos)
        elif wire_type in (WT_FIXED64, WT_FIXED32):
            size = 8 if wire_type == WT_FIXED64 else 4
            value, pos = buf[pos:pos + size], pos + size
        elif wire_type == WT_LEN:
            size, pos = read_varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        else:  # 3/4 are deprecated groups; none of our messages use them.
            raise DecodeError("unsupported wire type %d" % wire_type)
        if pos > end:
            raise DecodeError("field %d runs past the end" % number)
        yield number, wire_type, value


def to_int64(u):
    return u - (1 << 64) if u >= (1 << 63) else u


def to_int32(u):
    u &= 0xFFFFFFFF  # an int32 is sign-extended to 64 bits on the wire
    return u - (1 << 32) if u >= (1 << 31) else u


SCALAR_CONVERT = {
    "int64": to_int64,
    "int32": to_int32,
    "uint64": lambda u: u,
    "enum": to_int32,
    "bool": lambda u: u != 0,
}
SCALAR_DEFAULT = {"int64": 0, "int32": 0, "uint64": 0, "enum": 0, "bool": False,
                  "string": "", "bytes": b""}

# ---------------------------------------------------------------------------
# 2. Schemas: only the fields we read.  {number: (name, type, repeated)}.
#    A type that is a key of SCHEMAS is a nested message.
# ---------------------------------------------------------------------------

R, S = True, False  # repeated / singular
SCHEMAS = {
    # tpu_graphs/proto/tuning.proto
    "TuningData": {1: ("modules", "ModuleTuningData", R)},
    "ModuleTuningData": {1: ("module", "HloModuleProto", S),
                         2: ("fingerprint", "uint64", S),
                         3: ("runs", "ConfigProfile", R),
                         4: ("config_index_to_node", "uint64", R)},
    "ConfigProfile": {1: ("op_config", "HloOpConfig", S),        # oneof config
                      2: ("module_config", "HloModuleConfig", S),  # oneof config
                      3: ("error", "bool", S),
                      4: ("profile", "ExecutionProfile", S),
                      5: ("is_default", "bool", S)},
    "HloOpConfig": {1: ("tile_size_config", "TileSizeConfig", S)},
    "TileSizeConfig": {1: ("kernel_bounds", "int64", R),
                       2: ("output_bounds", "int64", R),
                       3: ("input_bounds", "int64", R),
                       4: ("iteration_bounds", "int64", R)},
    "HloModuleConfig": {1: ("layout_config", "LayoutConfig", S)},
    "LayoutConfig": {1: ("nodes", "NodeLayoutConfig", R)},
    "NodeLayoutConfig": {1: ("tensors", "TensorLayoutConfig", R)},
    "TensorLayoutConfig": {1: ("dims", "int32", R)},
    # xla_data.proto
    "ExecutionProfile": {2: ("compile_time_ms", "int64", S),
                         3: ("compute_cycle_count", "int64", S),
                         4: ("compute_time_ns", "int64", S),
                         5: ("compute_and_transfer_time_ns", "int64", S)},
    "ShapeProto": {2: ("element_type", "enum", S),
                   3: ("dimensions", "int64", R),
                   4: ("tuple_shapes", "ShapeProto", R),
                   5: ("layout", "LayoutProto", S)},
    "LayoutProto": {1: ("minor_to_major", "int64", R)},
    "Window": {1: ("dimensions", "WindowDimension", R)},
    "WindowDimension": {1: ("size", "int64", S), 2: ("stride", "int64", S),
                        3: ("padding_low", "int64", S), 4: ("padding_high", "int64", S),
                        5: ("window_dilation", "int64", S),
                        6: ("base_dilation", "int64", S),
                        7: ("window_reversal", "bool", S)},
    "ConvolutionDimensionNumbers": {
        7: ("input_batch_dimension", "int64", S),
        8: ("input_feature_dimension", "int64", S),
        11: ("input_spatial_dimensions", "int64", R),
        3: ("kernel_input_feature_dimension", "int64", S),
        4: ("kernel_output_feature_dimension", "int64", S),
        6: ("kernel_spatial_dimensions", "int64", R),
        9: ("output_batch_dimension", "int64", S),
        10: ("output_feature_dimension", "int64", S)},
    "PaddingConfig": {1: ("dimensions", "PaddingConfigDimension", R)},
    "PaddingConfigDimension": {1: ("edge_padding_low", "int64", S),
                               2: ("edge_padding_high", "int64", S)},
    # hlo.proto
    "HloModuleProto": {1: ("name", "string", S),
                       3: ("computations", "HloComputationProto", R)},
    "HloComputationProto": {1: ("name", "string", S),
                            2: ("instructions", "HloInstructionProto", R),
                            5: ("id", "int64", S),
                            6: ("root_id", "int64", S)},
    "HloInstructionProto": {1: ("name", "string", S),
                            2: ("opcode", "string", S),
                            3: ("shape", "ShapeProto", S),
                            9: ("parameter_number", "int64", S),
                            14: ("dimensions", "int64", R),
                            15: ("window", "Window", S),
                            16: ("convolution_dimension_numbers",
                                 "ConvolutionDimensionNumbers", S),
                            17: ("slice_dimensions", "SliceDimensions", R),
                            20: ("dynamic_slice_sizes", "int64", R),
                            21: ("padding_config", "PaddingConfig", S),
                            35: ("id", "int64", S),
                            36: ("operand_ids", "int64", R),
                            38: ("called_computation_ids", "int64", R),
                            50: ("feature_group_count", "int64", S),
                            58: ("batch_group_count", "int64", S),
                            60: ("is_stable", "bool", S)},
    "SliceDimensions": {1: ("start", "int64", S), 2: ("limit", "int64", S),
                        3: ("stride", "int64", S)},
}


class Msg(dict):
    """A decoded message: field name -> value, absent fields hold their defaults.

    .present is the set of fields seen on the wire (presence of sub-messages);
    .last_seen maps a field name to the index of its last occurrence (oneofs)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)

    def has(self, name):
        return name in self.present


def _empty_message(schema_name):
    msg = Msg()
    msg.present, msg.last_seen = set(), {}
    for name, ftype, repeated in SCHEMAS[schema_name].values():
        if repeated:
            msg[name] = []
        elif ftype in SCHEMAS:
            msg[name] = None  # filled in by decode()
        else:
            msg[name] = SCALAR_DEFAULT[ftype]
    return msg


def _decode_scalar_field(msg, name, ftype, repeated, wire_type, value):
    """Stores one scalar occurrence; returns False when the wire type does not fit
    (protobuf then keeps the field as an unknown field, i.e. ignores it)."""
    if ftype in ("string", "bytes"):
        if wire_type != WT_LEN:
            return False
        data = bytes(value)
        msg[name] = data.decode("utf-8", "replace") if ftype == "string" else data
        return True
    convert = SCALAR_CONVERT[ftype]
    if wire_type == WT_VARINT:
        values = [convert(value)]
    elif wire_type == WT_LEN and repeated:  # packed repeated scalars
        values, pos = [], 0
        while pos < len(value):
            raw, pos = read_varint(value, pos)
            values.append(convert(raw))
    else:
        return False
    if repeated:
        msg[name].extend(values)
    else:
        msg[name] = values[-1]  # last occurrence wins
    return True


def decode(buf, schema_name):
    """Decodes buf as message schema_name (unknown fields are skipped)."""
    schema = SCHEMAS[schema_name]
    msg = _empty_message(schema_name)
    singular_chunks = {}  # singular sub-messages: occurrences are merged
    for index, (number, wire_type, value) in enumerate(iter_fields(memoryview(buf))):
        if number not in schema:
            continue
        name, ftype, repeated = schema[number]
        if ftype in SCHEMAS:
            if wire_type != WT_LEN:
                continue
            if repeated:
                msg[name].append(decode(value, ftype))
            else:
                singular_chunks.setdefault(name, []).append(bytes(value))
        elif not _decode_scalar_field(msg, name, ftype, repeated, wire_type, value):
            continue
        msg.present.add(name)
        msg.last_seen[name] = index
    for name, ftype, repeated in schema.values():
        if ftype in SCHEMAS and not repeated:
            # Parsing the concatenation of all occurrences == protobuf merge semantics.
            msg[name] = decode(b"".join(singular_chunks.get(name, [])), ftype)
    return msg


def has(msg, name):
    """Whether a singular field was set: the wire decoder's Msg or a protobuf message."""
    if hasattr(msg, "HasField"):
        return msg.HasField(name)
    return msg.has(name)


def config_case(run):
    """The set member of ConfigProfile's oneof: 'op_config', 'module_config' or None.
    When both appear on the wire the later one wins (setting a oneof clears the other)."""
    if hasattr(run, "WhichOneof"):
        return run.WhichOneof("config")
    seen = [(run.last_seen[n], n) for n in ("op_config", "module_config") if run.has(n)]
    return max(seen)[1] if seen else None


# ---------------------------------------------------------------------------
# 3. Record kind detection (TuningData = tile, ModuleTuningData = layout)
# ---------------------------------------------------------------------------

def detect_kind(buf):
    """'tile' for a TuningData, 'layout' for a ModuleTuningData.

    TuningData has only field 1 (repeated ModuleTuningData).  ModuleTuningData has
    field 1 (one HloModuleProto) plus fields 2/3/4.  With a single field 1 and nothing
    else, look inside it (field numbers 1..4 exist in both inner messages):
    an HloModuleProto has entry_computation_name 2 as a string or fields >= 5 (id,
    entry_computation_id, ...); a ModuleTuningData has fingerprint 2 as a varint and
    nothing above 4."""
    top = [(n, wt) for n, wt, _ in iter_fields(memoryview(buf))]
    if not top:
        raise DecodeError("empty record: cannot tell TuningData from ModuleTuningData")
    if any(n != 1 for n, _ in top):
        return "layout"
    if len(top) > 1:
        return "tile"
    inner = [(n, wt) for n, wt, _ in iter_fields(next(iter_fields(memoryview(buf)))[2])]
    if (2, WT_LEN) in inner or any(n >= 5 for n, _ in inner):
        return "layout"
    if (2, WT_VARINT) in inner:
        return "tile"
    raise DecodeError("ambiguous record kind: pass --kind tile|layout")


# ---------------------------------------------------------------------------
# 4. Tables
# ---------------------------------------------------------------------------

# hlo_opcode.h, LEARNED_HLO_OPCODE_LIST (ids 1..120) + TOMBSTONE list (97, 101).
OPCODE_NAMES = (
    "abs add add-dependency after-all all-reduce all-to-all atan2 batch-norm-grad "
    "batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call "
    "ceil cholesky clamp collective-permute count-leading-zeros compare complex "
    "concatenate conditional constant convert convolution copy copy-done copy-start "
    "cosine custom-call divide domain dot dynamic-slice dynamic-update-slice "
    "exponential exponential-minus-one fft floor fusion gather get-dimension-size "
    "set-dimension-size get-tuple-element imag infeed iota is-finite log log-plus-one "
    "and not or xor map maximum minimum multiply negate outfeed pad parameter "
    "partition-id popcnt power real recv recv-done reduce reduce-precision "
    "reduce-window remainder replica-id reshape reverse rng rng-get-and-update-state "
    "rng-bit-generator round-nearest-afz rsqrt scatter select select-and-scatter send "
    "send-done shift-left shift-right-arithmetic shift-right-logical sign sine slice "
    "sort sqrt subtract tanh trace transpose triangular-solve tuple tuple-select while "
    "cbrt all-gather collective-permute-start collective-permute-done logistic "
    "dynamic-reshape all-reduce-start all-reduce-done reduce-scatter all-gather-start "
    "all-gather-done opt-barrier async-start async-update async-done "
    "round-nearest-even stochastic-convert tan").split()
OPCODE_IDS = {name: i + 1 for i, name in enumerate(OPCODE_NAMES)}  # unknown -> 0
assert len(OPCODE_IDS) == 120 and OPCODE_IDS["trace"] == 97
assert OPCODE_IDS["tuple-select"] == 101 and OPCODE_IDS["tan"] == 120

# featurizers.h kPrimitiveTypeFeatures: one-hot column 2+k <-> PrimitiveType number.
# INVALID PRED S8 S16 S32 S64 U8 U16 U32 U64 F16 F32 F64 BF16 C64 C128 TUPLE OPAQUE TOKEN
ONE_HOT_ELEMENT_TYPES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 15, 18, 13, 14, 17)

NODE_FEATURES = 140
TILE_CONFIG_FEATURES = 24
LAYOUT_CONFIG_FEATURES = 18

# ---------------------------------------------------------------------------
# 5. Sequence helpers (upstream computes in int64, then casts each value to float)
# ---------------------------------------------------------------------------


def wrap_int64(x):
    return ((x + (1 << 63)) & MASK64) - (1 << 63)


def leading(values, width, pad=0):
    """First `width` values, padded with `pad` (FixedNumericSequenceFeaturesNoAggregate)."""
    values = list(values[:width])
    return values + [pad] * (width - len(values))


def leading_sum_product(values, width, zero_product_on_empty=False):
    """First `width` values (0-padded), then the sum and the product of ALL values
    (FixedNumericSequenceFeatures).  Empty list: product 1, or 0 when asked."""
    total, product = 0, 1
    for v in values:
        total = wrap_int64(total + v)
        product = wrap_int64(product * v)
    if not values and zero_product_on_empty:
        product = 0
    return leading(values, width) + [total, product]


def leading_bools_counts(flags, width):
    """First `width` flags as 0/1 (0-padded), then #true, #false over ALL flags."""
    bits = [1 if f else 0 for f in flags]
    return leading(bits, width) + [sum(bits), len(bits) - sum(bits)]


# ---------------------------------------------------------------------------
# 6. Node features (featurizers.h FeaturizeHloInstruction, 140 columns)
# ---------------------------------------------------------------------------


def shape_features(shape):
    """Columns 2..29: element type one-hot, dims[:6] + sum + product, #tuple members."""
    one_hot = [1 if shape.element_type == t else 0 for t in ONE_HOT_ELEMENT_TYPES]
    return one_hot + leading_sum_product(shape.dimensions, 6) + [len(shape.tuple_shapes)]


def window_features(window):
    """Columns 37..92: size, stride, padding_low, padding_high, window_dilation,
    base_dilation (6 + sum + product each), window_reversal (6 + #true + #false)."""
    dims = window.dimensions
    row = []
    for field in ("size", "stride", "padding_low", "padding_high",
                  "window_dilation", "base_dilation"):
        row += leading_sum_product([getattr(d, field) for d in dims], 6)
    return row + leading_bools_counts([d.window_reversal for d in dims], 6)


def convolution_features(dn):
    """Columns 93..106 (output spatial dimensions are not encoded)."""
    return ([dn.input_batch_dimension, dn.input_feature_dimension]
            + leading(dn.input_spatial_dimensions, 4)
            + [dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension]
            + leading(dn.kernel_spatial_dimensions, 4)
            + [dn.output_batch_dimension, dn.output_feature_dimension])


def slice_features(slices):
    """Columns 109..120: start, stride, limit (in this order), 2 + sum + product each."""
    row = []
    for field in ("start", "stride", "limit"):
        row += leading_sum_product([getattr(s, field) for s in slices], 2)
    return row


def padding_features(padding):
    """Columns 125..132: edge_padding_low, edge_padding_high, 2 + sum + product each."""
    dims = padding.dimensions
    return (leading_sum_product([d.edge_padding_low for d in dims], 2)
            + leading_sum_product([d.edge_padding_high for d in dims], 2))


def node_feature_row(inst, comp):
    """The 140 integer-valued features of one instruction (cast to float32 later)."""
    row = [1 if inst.id == comp.root_id else 0,    # 0 is_root
           0]                                      # 1 element_size_in_bits (always 0)
    row += shape_features(inst.shape)              # 2..29
    row.append(inst.parameter_number)              # 30
    row += leading(inst.dimensions, 6)             # 31..36
    row += window_features(inst.window)            # 37..92
    row += convolution_features(inst.convolution_dimension_numbers)  # 93..106
    row += [inst.feature_group_count, inst.batch_group_count]        # 107, 108
    row += slice_features(inst.slice_dimensions)                     # 109..120
    row += leading_sum_product(inst.dynamic_slice_sizes, 2)          # 121..124
    row += padding_features(inst.padding_config)                     # 125..132
    row.append(1 if inst.is_stable else 0)                           # 133
    row += leading(inst.shape.layout.minor_to_major, 6)              # 134..139
    assert len(row) == NODE_FEATURES, len(row)
    return row


def int_rows_to_float32(rows, width):
    """int64 -> float32 exactly like static_cast<float>(int64_t)."""
    if not rows:
        return np.zeros((0, width), dtype=np.float32)
    return np.array(rows, dtype=np.int64).astype(np.float32)


# ---------------------------------------------------------------------------
# 7. Graph (hlo_encoder.cc EncodeHloModule with directed=true, whole module)
# ---------------------------------------------------------------------------

SPLIT_MARKERS = ("cluster", "while", "cond")


def node_splits(module):
    """[0, end of every computation whose name contains a marker, ..., n]."""
    splits, count = [0], 0
    for comp in module.computations:
        count += len(comp.instructions)
        if any(marker in comp.name for marker in SPLIT_MARKERS):
            splits.append(count)
    if splits[-1] < count:
        splits.append(count)
    return splits


def graph_edges(module):
    """Sorted [consumer, producer] node-position pairs.

    Per instruction: one edge per distinct operand id, then one edge per entry of
    called_computation_ids to that computation's ROOT.  Ids map to positions
    (later duplicates win, as in upstream's hash map)."""
    position, root_of = {}, {}
    pos = 0
    for comp in module.computations:
        root_of[comp.id] = comp.root_id
        for inst in comp.instructions:
            position[inst.id] = pos
            pos += 1
    edges, u = [], 0
    for comp in module.computations:
        for inst in comp.instructions:
            targets = [position[i] for i in sorted(set(inst.operand_ids))]
            targets += [position[root_of[c]] for c in inst.called_computation_ids]
            for v in targets:
                if v == u:
                    raise DecodeError("self edge at node %d" % u)
                edges.append((u, v))
            u += 1
    edges.sort()
    if any(a == b for a, b in zip(edges, edges[1:])):
        raise DecodeError("duplicate edge (upstream CHECK-fails on this module)")
    return edges


def encode_graph(module):
    """node_feat, node_opcode, edge_index, node_splits of one HloModuleProto."""
    rows, opcodes = [], []
    for comp in module.computations:
        for inst in comp.instructions:
            opcodes.append(OPCODE_IDS.get(inst.opcode, 0))
            rows.append(node_feature_row(inst, comp))
    edges = graph_edges(module)
    return {
        "node_feat": int_rows_to_float32(rows, NODE_FEATURES),
        "node_opcode": np.array(opcodes, dtype=np.uint8),
        "edge_index": np.array(edges, dtype=np.int64).reshape(-1, 2),
        "node_splits": np.array([node_splits(module)], dtype=np.int64),  # (1, k)
    }


# ---------------------------------------------------------------------------
# 8. Tile collection (OpTuningDataIterator + FeaturizeTileSizeConfig)
# ---------------------------------------------------------------------------


def tile_config_row(tsc):
    """24 columns: kernel, output, input bounds; 6 + sum + product (0 if empty)."""
    return (leading_sum_product(tsc.kernel_bounds, 6, zero_product_on_empty=True)
            + leading_sum_product(tsc.output_bounds, 6, zero_product_on_empty=True)
            + leading_sum_product(tsc.input_bounds, 6, zero_product_on_empty=True))


def has_tile_config(run):
    return config_case(run) == "op_config" and has(run.op_config, "tile_size_config")


def tile_kernel_status(kernel):
    """Why a ModuleTuningData of a TuningData is skipped, or None if it is kept."""
    if len(kernel.runs) <= 1:
        return "at most one run"
    if not has(kernel, "module"):
        return "no module"
    if not all(has_tile_config(run) for run in kernel.runs):
        return "a run without a tile_size_config"
    return None


def signed_hex(fingerprint):
    """uint64 fingerprint seen as int64, in hex without 0x ('-1bae27a41d70f4dc')."""
    return format(to_int64(fingerprint), "x")


def featurize_tuning_data(td, prefix, lenient):
    """One output per kept kernel: (name, arrays, facts); plus per-kernel facts."""
    kept, kernel_facts, normalizer_by_name = [], [], {}
    for index, kernel in enumerate(td.modules):
        name = kernel.module.name
        facts = {"index": index, "module_name": name, "runs": len(kernel.runs),
                 "error_runs": sum(1 for r in kernel.runs if r.error),
                 "default_runs": sum(1 for r in kernel.runs if r.is_default),
                 "fingerprint": "%016x" % kernel.fingerprint}
        kernel_facts.append(facts)
        facts["skipped"] = tile_kernel_status(kernel)
        if facts["skipped"]:
            continue
        runs = [r for r in kernel.runs
                if not r.error and r.profile.compute_time_ns > 1]
        default = next((r for r in runs if r.is_default), None)
        if default is None:
            if not lenient:
                raise DecodeError("kernel %d (%s): no kept default run; upstream rejects "
                                  "the whole TuningData (use --lenient to skip)" % (index, name))
            facts["skipped"] = "no kept default run"
            continue
        # Upstream keys the normalizer by module name: a later kernel with the same
        # name overrides the value for all kernels of that name.
        normalizer_by_name[name] = default.profile.compute_time_ns
        facts["kept_configs"] = len(runs)
        kept.append((kernel, runs, facts))
    outputs, names = [], set()
    for kernel, runs, facts in kept:
        out_name = "%s_%s" % (prefix, signed_hex(kernel.fingerprint))
        if out_name in names:
            raise DecodeError("two kernels share the output name " + out_name)
        names.add(out_name)
        facts["output"] = out_name
        arrays = encode_graph(kernel.module)
        del arrays["node_splits"]  # tile files have no node_splits
        runtimes = [r.profile.compute_time_ns for r in runs]
        arrays["config_feat"] = int_rows_to_float32(
            [tile_config_row(r.op_config.tile_size_config) for r in runs],
            TILE_CONFIG_FEATURES)
        arrays["config_runtime"] = np.array(runtimes, dtype=np.int64)
        arrays["config_runtime_normalizers"] = np.full(
            len(runs), normalizer_by_name[kernel.module.name], dtype=np.int64)
        outputs.append((out_name, arrays))
    return outputs, kernel_facts


# ---------------------------------------------------------------------------
# 9. Layout collection (ModuleTuningDataIterator + FeaturizeLayoutConfig)
# ---------------------------------------------------------------------------


def layout_config_rows(run, node_count):
    """(node_count, 18): per configurable node, tensors 0..2 dims[:6], -1 padded."""
    if not has(run.module_config, "layout_config"):
        raise DecodeError("kept run without layout_config (upstream CHECK)")
    nodes = run.module_config.layout_config.nodes
    if len(nodes) != node_count:
        raise DecodeError("layout config has %d nodes, config_index_to_node %d"
                          % (len(nodes), node_count))
    rows = []
    for node in nodes:
        if len(node.tensors) > 3:
            raise DecodeError("more than 3 tensors in a node layout (upstream CHECK)")
        row = []
        for t in range(3):
            dims = node.tensors[t].dims if t < len(node.tensors) else []
            row += leading(dims, 6, pad=-1)
        rows.append(row)
    return rows


def layout_kept_runs(mtd):
    """Runs with a module_config, no error and a profile; none without a default."""
    runs = [r for r in mtd.runs
            if config_case(r) == "module_config" and not r.error and has(r, "profile")]
    for r in runs:
        if r.profile.compute_time_ns <= 0:
            raise DecodeError("kept run with compute_time_ns <= 0 (upstream CHECK)")
    if not any(r.is_default for r in runs):
        return []
    return runs


def featurize_module_tuning_data(mtd, name):
    """One output per ModuleTuningData (None when no run is kept) and its facts."""
    ids = [to_int64(i) for i in mtd.config_index_to_node]
    facts = {"module_name": mtd.module.name, "fingerprint": "%016x" % mtd.fingerprint,
             "computations": len(mtd.module.computations), "runs": len(mtd.runs),
             "error_runs": sum(1 for r in mtd.runs if r.error),
             "default_runs": sum(1 for r in mtd.runs if r.is_default)}
    if not ids:
        raise DecodeError("empty config_index_to_node (upstream CHECK)")
    runs = layout_kept_runs(mtd)
    facts["kept_configs"] = len(runs)
    if not runs:
        facts["skipped"] = "no kept run (no default among the kept runs)"
        return None, facts
    arrays = encode_graph(mtd.module)
    n = arrays["node_feat"].shape[0]
    if min(ids) < 0 or max(ids) >= n:
        raise DecodeError("config_index_to_node outside 0..n-1")
    feat = [layout_config_rows(r, len(ids)) for r in runs]
    arrays["node_config_ids"] = np.array(ids, dtype=np.int64)
    arrays["node_config_feat"] = np.array(feat, dtype=np.int64).astype(
        np.float32).reshape(len(runs), len(ids), LAYOUT_CONFIG_FEATURES)
    arrays["config_runtime"] = np.array([r.profile.compute_time_ns for r in runs],
                                        dtype=np.int64)
    facts["output"] = name
    return (name, arrays), facts


# ---------------------------------------------------------------------------
# 10. Checks against the release's conventions, facts, output
# ---------------------------------------------------------------------------


def release_checks(arrays):
    """Cheap structural checks; returns {check: bool}."""
    feat, ops, edges = arrays["node_feat"], arrays["node_opcode"], arrays["edge_index"]
    n = feat.shape[0]
    checks = {
        "node_feat_shape": feat.shape == (n, NODE_FEATURES),
        "opcodes_in_1_120": bool(((ops >= 1) & (ops <= 120)).all()),
        "edges_in_range": bool(((edges >= 0) & (edges < n)).all()),
        "edges_u_gt_v": bool((edges[:, 0] > edges[:, 1]).all()),
        "edges_sorted_unique": bool(
            len(edges) < 2 or (np.diff(edges[:, 0] * n + edges[:, 1]) > 0).all()),
        "col1_zero": bool((feat[:, 1] == 0).all()),
        "element_type_one_hot_le_1": bool((feat[:, 2:21].sum(axis=1) <= 1).all()),
        "is_root_binary": bool(np.isin(feat[:, 0], (0, 1)).all()),
    }
    if "node_splits" in arrays:
        s = arrays["node_splits"][0]
        checks["node_splits_0_to_n"] = bool(s[0] == 0 and s[-1] == n
                                            and (np.diff(s) >= 0).all())
    if "node_config_feat" in arrays:
        f = arrays["node_config_feat"]
        checks["node_config_feat_in_-1_5"] = bool(((f >= -1) & (f <= 5)).all())
    return checks


def output_facts(name, arrays):
    facts = {"name": name, "nodes": int(arrays["node_feat"].shape[0]),
             "edges": int(arrays["edge_index"].shape[0]),
             "configs": int(arrays["config_runtime"].shape[0]),
             "checks": release_checks(arrays)}
    if "node_config_ids" in arrays:
        facts["configurable_nodes"] = int(arrays["node_config_ids"].shape[0])
        facts["node_splits"] = int(arrays["node_splits"].shape[1])
    return facts


def write_npz(directory, name, arrays):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name + ".npz")
    np.savez_compressed(path, **arrays)
    return path


SCHEMA_PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                            "pipeline", "featurize", "tuning_records.proto")


def compile_pb2(out_dir):
    """Compiles the schema with protoc into out_dir (tuning_records_pb2.py). The names are
    declared `string`, as in upstream's hlo.proto that a Python user compiles (tpuperf's
    copy declares them `bytes` so that its C++ parser keeps a record with a stray byte; the
    wire format is the same)."""
    with open(SCHEMA_PROTO) as f:
        schema = re.sub(r"^(\s*)bytes(\s+\w+\s*=)", r"\1string\2", f.read(), flags=re.M)
    with open(os.path.join(out_dir, "tuning_records.proto"), "w") as f:
        f.write(schema)
    subprocess.run(["protoc", "-I", out_dir, "--python_out", out_dir,
                    os.path.join(out_dir, "tuning_records.proto")], check=True)


def load_pb2(pb2_dir):
    """The schema's generated module, from pb2_dir (see compile_pb2) or compiled now into a
    temporary directory."""
    if not pb2_dir:
        pb2_dir = tempfile.mkdtemp(prefix="tpuperf-pb2-")
        compile_pb2(pb2_dir)
    sys.path.insert(0, pb2_dir)
    return importlib.import_module("tuning_records_pb2")


def protobuf_decoder(pb2):
    """decode(buf, schema_name) with the protobuf library's parser."""
    def decode_pb(buf, schema_name):
        msg = getattr(pb2, schema_name)()
        msg.ParseFromString(buf)
        return msg
    return decode_pb


def process_file(path, args):
    with open(path, "rb") as f:
        buf = f.read()
    parse = getattr(args, "decode", decode)  # the wire decoder unless main chose protobuf
    kind = detect_kind(buf) if args.kind == "auto" else args.kind
    stem = os.path.splitext(os.path.basename(path))[0]
    facts = {"file": path, "kind": kind, "outputs": []}
    if kind == "tile":
        td = parse(buf, "TuningData")
        outputs, facts["kernels"] = featurize_tuning_data(
            td, args.prefix or stem, args.lenient)
        facts["kernel_count"] = len(td.modules)
        facts["runs"] = sum(len(k.runs) for k in td.modules)
        directory = os.path.join(args.out or "", "npz", "tile", "xla", args.split)
    else:
        output, facts["module"] = featurize_module_tuning_data(
            parse(buf, "ModuleTuningData"), args.prefix or stem)
        outputs = [output] if output else []
        directory = os.path.join(args.out or "", "npz", "layout", args.source,
                                 args.search, args.split)
    for name, arrays in outputs:
        entry = output_facts(name, arrays)
        if args.out:
            entry["path"] = write_npz(directory, name, arrays)
        facts["outputs"].append(entry)
    return facts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", metavar="FILE.pb")
    p.add_argument("--out", help="output root (DIR/npz/...)")
    p.add_argument("--split", default="train")
    p.add_argument("--source", default="xla", help="layout source: xla or nlp")
    p.add_argument("--search", default="random", help="layout search: random or default")
    p.add_argument("--kind", default="auto", choices=("auto", "tile", "layout"))
    p.add_argument("--prefix", help="output name prefix (default: the input file stem)")
    p.add_argument("--lenient", action="store_true",
                   help="skip a tile kernel without a kept default run instead of failing")
    p.add_argument("--facts", action="store_true", help="print per-file facts as JSON")
    p.add_argument("--decoder", default="wire", choices=("wire", "protobuf"),
                   help="wire: this script's own decoder (the reference); protobuf: the "
                        "protobuf library with the schema compiled by protoc")
    p.add_argument("--pb2-dir", help="with --decoder protobuf: a directory where compile_pb2 put "
                                     "tuning_records_pb2.py (default: compile it now)")
    args = p.parse_args(argv)
    args.decode = protobuf_decoder(load_pb2(args.pb2_dir)) if args.decoder == "protobuf" else decode
    if not args.out and not args.facts:
        p.error("give --out DIR and/or --facts")
    all_facts = [process_file(path, args) for path in args.files]
    if args.facts:
        json.dump(all_facts, sys.stdout, indent=1)
        sys.stdout.write("\n")
    failed = [o["name"] for f in all_facts for o in f["outputs"]
              if not all(o["checks"].values())]
    if failed:
        sys.stderr.write("release-convention checks failed for: %s\n" % ", ".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
