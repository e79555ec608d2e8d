#!/usr/bin/python3
"""Independent reference of tpuperf-featurize --extra-features: node_feat_extra (n x 56)
computed in numpy from the reference decoder (reference_featurize.py, whose schemas are
extended here by the fields the extra columns read) and the column list of
pipeline/featurize/extra_features.h. Writes, for every output the release featurizer
keeps, DIR/npz/.../<name>.npz holding only node_feat_extra, so that
compare_trees.py CPP_DIR DIR --only-keys-of compares it with tpuperf's files.

usage: reference_extra_features.py --out DIR [--split S] [--source X] [--search Y]
                                   [--prefix NAME] FILE.pb...
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_featurize as ref  # noqa: E402

R, S = True, False
EXTRA_SCHEMA_FIELDS = {  # xla hlo.proto / xla_data.proto numbers
    "HloInstructionProto": {11: ("fusion_kind", "string", S), 13: ("tuple_index", "int64", S),
                            28: ("custom_call_target", "string", S),
                            30: ("dot_dimension_numbers", "DotDimensionNumbers", S),
                            37: ("control_predecessor_ids", "int64", R),
                            49: ("replica_groups", "ReplicaGroup", R),
                            51: ("precision_config", "PrecisionConfig", S),
                            63: ("comparison_direction", "string", S)},
    "HloComputationProto": {7: ("is_fusion_computation", "bool", S)},
    "HloModuleProto": {6: ("entry_computation_id", "int64", S)},
    "ShapeProto": {6: ("is_dynamic_dimension", "bool", R)},
    "LayoutProto": {6: ("tiles", "TileProto", R), 8: ("memory_space", "int64", S)},
    "ConvolutionDimensionNumbers": {12: ("output_spatial_dimensions", "int64", R)},
    "PaddingConfigDimension": {3: ("interior_padding", "int64", S)},
}
NEW_SCHEMAS = {
    "TileProto": {1: ("dimensions", "int64", R)},
    "DotDimensionNumbers": {1: ("lhs_contracting_dimensions", "int64", R),
                            2: ("rhs_contracting_dimensions", "int64", R),
                            3: ("lhs_batch_dimensions", "int64", R),
                            4: ("rhs_batch_dimensions", "int64", R)},
    "PrecisionConfig": {1: ("operand_precision", "enum", R)},
    "ReplicaGroup": {1: ("replica_ids", "int64", R)},
}
ref.SCHEMAS.update(NEW_SCHEMAS)
for message, extra in EXTRA_SCHEMA_FIELDS.items():
    ref.SCHEMAS[message].update(extra)

WIDTH = 56
TUPLE = 13
FUSION_KINDS = ("kLoop", "kInput", "kOutput", "kCustom")
DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
# xla.PrimitiveType -> bits per element (tuple, opaque, token, unknown: 0)
BITS = {1: 8, 2: 8, 3: 16, 4: 32, 5: 64, 6: 8, 7: 16, 8: 32, 9: 64, 10: 16, 11: 32, 12: 64,
        15: 64, 16: 16, 18: 128, 19: 8, 20: 8, 21: 4, 22: 4, 23: 8, 24: 8, 25: 8, 26: 2, 27: 2,
        28: 8, 29: 8, 30: 1, 31: 1, 32: 4, 33: 8}


def product(values):
    p = 1
    for v in values:
        p = ref.wrap_int64(p * v)
    return p


def is_tuple(shape):
    return shape.element_type == TUPLE or len(shape.tuple_shapes) > 0


def leaves(shape):
    for member in shape.tuple_shapes:
        if is_tuple(member):
            yield from leaves(member)
        else:
            yield member


def array_bytes(shape):
    return (product(shape.dimensions) * BITS.get(shape.element_type, 0) + 7) // 8


def shape_columns(shape):
    if is_tuple(shape):
        ls = list(leaves(shape))
        size, count, rank = sum(array_bytes(l) for l in ls), len(ls), max((len(l.dimensions) for l in ls), default=-1)
    else:
        size, count, rank = array_bytes(shape), 0, -1
    tiles = shape.layout.tiles
    dims = tiles[0].dimensions if tiles else []
    return [len(shape.dimensions), size, count, rank, sum(1 for d in shape.is_dynamic_dimension if d),
            len(tiles), dims[-2] if len(dims) >= 2 else 0, dims[-1] if dims else 0, shape.layout.memory_space]


def operand_columns(ops):
    row = []
    for op in ops:
        row += ref.leading(op.shape.layout.minor_to_major, 6, pad=-1) if op else [-1] * 6
    row += [product(op.shape.dimensions) if op else -1 for op in ops]
    row += [op.shape.element_type if op else -1 for op in ops]
    return row


def operation_columns(inst):
    dot = inst.dot_dimension_numbers
    return (ref.leading(inst.convolution_dimension_numbers.output_spatial_dimensions, 4)
            + [dot.lhs_contracting_dimensions[0] if dot.lhs_contracting_dimensions else -1,
               dot.rhs_contracting_dimensions[0] if dot.rhs_contracting_dimensions else -1,
               len(dot.lhs_batch_dimensions),
               sum(d.interior_padding for d in inst.padding_config.dimensions)]
            + [1 if inst.comparison_direction == d else 0 for d in DIRECTIONS]
            + [max(inst.precision_config.operand_precision, default=0), len(inst.control_predecessor_ids),
               1 if inst.opcode == "custom-call" and inst.custom_call_target else 0, len(inst.replica_groups)])


def extra_features(module):
    comps = {c.id: c for c in module.computations}
    insts = [(c, i) for c in module.computations for i in c.instructions]
    by_id = {i.id: i for _, i in insts}
    users = {}
    for _, inst in insts:
        for o in set(inst.operand_ids):
            users[o] = users.get(o, 0) + 1

    def reachable(inst):
        seen, stack = set(), list(inst.called_computation_ids)
        while stack:
            cid = stack.pop()
            if cid in seen:
                continue
            seen.add(cid)
            stack += [c for i in comps[cid].instructions for c in i.called_computation_ids]
        return sum(len(comps[c].instructions) for c in seen)

    rows = []
    for comp, inst in insts:
        ops = [by_id[inst.operand_ids[k]] if k < len(inst.operand_ids) else None for k in (0, 1)]
        row = [1 if inst.fusion_kind == k else 0 for k in FUSION_KINDS]
        row += [inst.tuple_index if inst.opcode == "get-tuple-element" else -1, len(inst.operand_ids),
                len(set(inst.operand_ids)), users.get(inst.id, 0), len(inst.called_computation_ids),
                sum(len(comps[c].instructions) for c in inst.called_computation_ids), reachable(inst),
                1 if comp.id == module.entry_computation_id else 0, 1 if comp.is_fusion_computation else 0]
        row += shape_columns(inst.shape) + operand_columns(ops) + operation_columns(inst)
        assert len(row) == WIDTH, len(row)
        rows.append(row)
    return ref.int_rows_to_float32(rows, WIDTH)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--split", default="train")
    p.add_argument("--source", default="xla")
    p.add_argument("--search", default="random")
    p.add_argument("--prefix")
    args = p.parse_args(argv)
    for path in args.files:
        buf = open(path, "rb").read()
        stem = os.path.splitext(os.path.basename(path))[0]
        prefix = args.prefix or stem
        if ref.detect_kind(buf) == "tile":
            td = ref.decode(buf, "TuningData")
            _, facts = ref.featurize_tuning_data(td, prefix, lenient=False)
            outputs = [(f["output"], td.modules[f["index"]].module) for f in facts if f.get("output")]
            directory = os.path.join(args.out, "npz", "tile", "xla", args.split)
        else:
            mtd = ref.decode(buf, "ModuleTuningData")
            outputs = [(prefix, mtd.module)]
            directory = os.path.join(args.out, "npz", "layout", args.source, args.search, args.split)
        os.makedirs(directory, exist_ok=True)
        for name, module in outputs:
            np.savez_compressed(os.path.join(directory, name + ".npz"), node_feat_extra=extra_features(module))
            print("%s: node_feat_extra of %s" % (path, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
