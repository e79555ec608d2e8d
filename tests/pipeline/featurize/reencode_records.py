#!/usr/bin/python3
"""Re-encodes a tuning record at the wire level in ways protobuf must read as the same
message, to test that the featurizer follows protobuf's rules and not one writer's habits
(numpy-free; uses the reference's wire decoder and schemas, which know every field the
features read).

usage: reencode_records.py MODE IN.pb OUT.pb
  unpacked  every packed repeated scalar written one element per field
  split     every singular sub-message written as two occurrences (protobuf merges them)
  unknown   unknown fields (numbers the schemas do not know; varint, 64-bit, length-
            delimited and 32-bit) added to every message, plus a known sub-message field
            with the wrong wire type (skipped); not at a TuningData's top level, where a
            field other than 1 is what marks a ModuleTuningData
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_featurize as ref  # noqa: E402


def varint(v):
    v &= ref.MASK64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(number, wire_type):
    return varint(number << 3 | wire_type)


def encode_field(number, wire_type, value):
    if wire_type == ref.WT_VARINT:
        return key(number, wire_type) + varint(value)
    if wire_type == ref.WT_LEN:
        return key(number, wire_type) + varint(len(value)) + bytes(value)
    return key(number, wire_type) + bytes(value)


def unknown_fields():
    return (encode_field(100001, ref.WT_VARINT, 7) + encode_field(100002, ref.WT_FIXED64, b"\1" * 8)
            + encode_field(100003, ref.WT_LEN, b"\x08\x01junk") + encode_field(100004, ref.WT_FIXED32, b"\2" * 4))


def split_halves(payload):
    """The payload's fields in two contiguous parts (parsing both == parsing the whole)."""
    fields = []
    for number, wire_type, value in ref.iter_fields(memoryview(payload)):
        fields.append(encode_field(number, wire_type, value))
    half = len(fields) // 2
    return b"".join(fields[:half]), b"".join(fields[half:])


def reencode(buf, schema_name, mode, top=False):
    schema = ref.SCHEMAS[schema_name]
    out = bytearray()
    for number, wire_type, value in ref.iter_fields(memoryview(buf)):
        if number not in schema:
            out += encode_field(number, wire_type, value)
            continue
        _, ftype, repeated = schema[number]
        if ftype in ref.SCHEMAS and wire_type == ref.WT_LEN:
            inner = reencode(bytes(value), ftype, mode)
            if mode == "split" and not repeated:
                first, second = split_halves(inner)
                out += encode_field(number, ref.WT_LEN, first) + encode_field(number, ref.WT_LEN, second)
            else:
                out += encode_field(number, ref.WT_LEN, inner)
            if mode == "unknown":  # the same field number with a wire type it cannot have
                out += encode_field(number, ref.WT_FIXED32, b"\0\0\0\0")
        elif mode == "unpacked" and repeated and wire_type == ref.WT_LEN and ftype not in ("string", "bytes"):
            pos = 0
            while pos < len(value):
                raw, pos = ref.read_varint(value, pos)
                out += encode_field(number, ref.WT_VARINT, raw)
        else:
            out += encode_field(number, wire_type, value)
    if mode == "unknown" and not (top and schema_name == "TuningData"):
        out += unknown_fields()
    return bytes(out)


def main(argv):
    if len(argv) != 3 or argv[0] not in ("unpacked", "split", "unknown"):
        print(__doc__)
        return 2
    mode, src, dst = argv
    buf = open(src, "rb").read()
    schema = "TuningData" if ref.detect_kind(buf) == "tile" else "ModuleTuningData"
    out = reencode(buf, schema, mode, top=True)
    with open(dst, "wb") as f:
        f.write(out)
    print("%s: %s, %d -> %d bytes" % (dst, mode, len(buf), len(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
