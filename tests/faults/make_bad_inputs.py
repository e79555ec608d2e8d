#!/usr/bin/python3
"""The bad-input corpus of the faults suite (issue #6), generated from good files of a
TpuGraphs-format tree (tpuperf-synth output), never checked in.

Every case derives one broken file from a good file of the same (collection, split), so
that the file is wrong in exactly one way. Each case declares the key the rejection must
name ("" for a file-level fault, where no member is at fault) and a regular expression
for the reason.

usage:
  make_bad_inputs.py stage RAW_DIR STAGE_DIR CASES_TSV
      writes every case's file to STAGE_DIR/<its path relative to RAW_DIR> (a directory
      for the *.npz directory case), to be copied into RAW_DIR one at a time, and
      CASES_TSV: case, relative path, expected key, reason regex, description
  make_bad_inputs.py flat RAW_DIR OUT_DIR
      writes every case's bytes as OUT_DIR/<case>.npz (fuzzer seeds; no directory case)
"""
import io
import os
import struct
import sys
import warnings
import zipfile
import zlib

import numpy as np

TILE = ("tile", "xla")
LXR = ("layout", "xla", "random")
LXD = ("layout", "xla", "default")
LNR = ("layout", "nlp", "random")
LND = ("layout", "nlp", "default")


# ---- building blocks -------------------------------------------------------------------

def npy(a):
    """The .npy bytes numpy itself writes for array a."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def npy_raw(descr, shape, data, fortran=False, version=1, header_len=None):
    """Hand-made .npy bytes: any descr/shape/order, the data as given (may disagree)."""
    d = "{'descr': %r, 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", repr(tuple(shape)))
    pre = 10 if version == 1 else 12
    d += " " * ((64 - (pre + len(d) + 1) % 64) % 64) + "\n"
    n = len(d) if header_len is None else header_len
    size = struct.pack("<H", n) if version == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([version, 0]) + size + d.encode("latin1") + data


def zip_of(members, deflate=False):
    """members: [(key, npy bytes)] -> .npz bytes (stored or deflated)."""
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for key, data in members:
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, data)
    return buf.getvalue()


def raw_zip(members):
    """A deflated archive written by hand, so that a member can declare an uncompressed
    size its data does not have. members: [(key, npy bytes, declared size)]; a declared
    size of 4 GiB or more goes to a zip64 extra field (the reader takes sizes from the
    central directory; the local header's copy is only a placeholder)."""
    out, central = b"", b""
    for key, data, declared in members:
        name = (key + ".npy").encode()
        comp = zlib.compressobj(6, zlib.DEFLATED, -15)
        payload = comp.compress(data) + comp.flush()
        crc = zlib.crc32(data)
        big = declared >= 0xFFFFFFFF
        size32 = 0xFFFFFFFF if big else declared
        extra = struct.pack("<HHQ", 1, 8, declared) if big else b""
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 8, 0, 0x21, crc, len(payload),
                           size32, len(name), len(extra)) + name + extra + payload
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 8, 0, 0x21, crc,
                               len(payload), size32, len(name), len(extra), 0, 0, 0, 0,
                               offset) + name + extra
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                      len(out), 0)
    return out + central + end


def npz_of(arrays, deflate=False, replace=None, drop=()):
    """An archive of the arrays in their order; replace maps key -> raw member bytes."""
    replace = replace or {}
    return zip_of([(k, replace[k] if k in replace else npy(v))
                   for k, v in arrays.items() if k not in drop], deflate)


def end_record(data):
    """Offset of the end-of-central-directory record."""
    pos = data.rfind(b"PK\x05\x06")
    assert pos >= 0
    return pos


def central_entries(data):
    """{member name: offset of its central directory entry}."""
    e = end_record(data)
    count, cd_off = struct.unpack_from("<H", data, e + 10)[0], struct.unpack_from("<I", data, e + 16)[0]
    out, p = {}, cd_off
    for _ in range(count):
        assert data[p:p + 4] == b"PK\x01\x02"
        n, x, c = struct.unpack_from("<HHH", data, p + 28)
        out[data[p + 46:p + 46 + n].decode()] = p
        p += 46 + n + x + c
    return out


def patch(data, offset, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def member_data_range(data, name):
    """[start, end) of a member's (compressed) data in the archive."""
    ce = central_entries(data)[name]
    csize = struct.unpack_from("<I", data, ce + 20)[0]
    local = struct.unpack_from("<I", data, ce + 42)[0]
    n, x = struct.unpack_from("<HH", data, local + 26)
    start = local + 30 + n + x
    return start, start + csize


def with_value(arrays, key, index, value, dtype=None):
    out = dict(arrays)
    a = out[key].astype(dtype) if dtype else out[key].copy()
    a[index] = value
    out[key] = a
    return out


# ---- the cases ---------------------------------------------------------------------------
# Each: name -> (collection dir parts, split, expected key, reason regex, description, make)
# make(arrays) returns the file's bytes; arrays are the base file's members in order.

def _truncated(a):
    full = npz_of(a, deflate=True)
    return full[: len(full) * 6 // 10]


def _corrupt_deflate(a):
    data = npz_of(a, deflate=True)
    start, end = member_data_range(data, "node_feat.npy")
    mid = (start + end) // 2
    b = bytearray(data)
    for i in range(mid, mid + 16):
        b[i] ^= 0xFF
    return bytes(b)


def _wrong_crc(a):
    data = npz_of(a)
    ce = central_entries(data)["config_runtime.npy"]
    crc = struct.unpack_from("<I", data, ce + 16)[0]
    return patch(data, ce + 16, "<I", crc ^ 0x5A5A5A5A)


def _shape_lie(a):
    nf = a["node_feat"]
    return npz_of(a, replace={"node_feat": npy_raw("<f4", (nf.shape[0] + 5, 140), nf.tobytes())})


def _terabyte_header(a):
    # (2^33, 140) float32 = 4.8 TB declared; the member holds the real few kilobytes.
    nf = a["node_feat"]
    return npz_of(a, replace={"node_feat": npy_raw("<f4", (2 ** 33, 140), nf.tobytes())})


def _terabyte_zip(a):
    # The npy header and the zip directory (a zip64 size) agree on 4.8 TB: only the
    # deflate ratio limit can tell, and it must do so before anything is allocated.
    nf = a["node_feat"]
    header = npy_raw("<f4", (2 ** 33, 140), b"")
    members = [(k, npy(v)) for k, v in a.items() if k != "node_feat"]
    return raw_zip([("node_feat", header + nf.tobytes(), len(header) + 2 ** 33 * 140 * 4)] +
                   [(k, d, len(d)) for k, d in members])


def _cd_past_eof(a):
    data = npz_of(a)
    e = end_record(data)
    return patch(data, e + 16, "<I", len(data) + 4096)


def _zero_byte_member(a):
    return npz_of(a, replace={"config_runtime": b""})


def _fortran_nan(a):
    # numpy saves a Fortran-ordered array as such; the reader puts it in C order first, so
    # the NaN is still reported at node 3, feature 7.
    nf = a["node_feat"].copy()
    nf[3, 7] = np.nan
    return npz_of(dict(a, node_feat=np.asfortranarray(nf)))


def _big_endian_edge(a):
    # Read without swapping, the endpoint would be a huge number, not the node count.
    bad = with_value(a, "edge_index", (0, 1), len(a["node_opcode"]))
    return npz_of(dict(bad, edge_index=bad["edge_index"].astype(">i8")))


def _wrong_dtype(a):
    return npz_of(dict(a, node_feat=a["node_feat"].astype(np.int32)))


def _float_edges(a):
    return npz_of(dict(a, edge_index=a["edge_index"].astype(np.float32)), deflate=True)


def _zero_configs_tile(a):
    return npz_of(dict(a, config_feat=a["config_feat"][:0], config_runtime=a["config_runtime"][:0],
                       config_runtime_normalizers=a["config_runtime_normalizers"][:0]))


def _zero_configs_layout(a):
    return npz_of(dict(a, node_config_feat=a["node_config_feat"][:0],
                       config_runtime=a["config_runtime"][:0]), deflate=True)


def _local_header_offset(a):
    data = npz_of(a)
    ce = central_entries(data)["edge_index.npy"]
    local = struct.unpack_from("<I", data, ce + 42)[0]
    return patch(data, ce + 42, "<I", local + 7)


def _method(a, method):
    data = bytearray(npz_of(a))
    ce = central_entries(bytes(data))["node_opcode.npy"]
    local = struct.unpack_from("<I", data, ce + 42)[0]
    struct.pack_into("<H", data, ce + 10, method)
    struct.pack_into("<H", data, local + 8, method)
    return bytes(data)


def _encrypted(a):
    data = bytearray(npz_of(a))
    ce = central_entries(bytes(data))["node_opcode.npy"]
    local = struct.unpack_from("<I", data, ce + 42)[0]
    struct.pack_into("<H", data, ce + 8, 1)
    struct.pack_into("<H", data, local + 6, 1)
    return bytes(data)


def _duplicate_member(a):
    return zip_of([(k, npy(v)) for k, v in a.items()] + [("node_opcode", npy(a["node_opcode"]))])


def _huge_header_len(a):
    return npz_of(a, replace={"config_runtime": npy_raw("<i8", a["config_runtime"].shape,
                                                        a["config_runtime"].tobytes(), version=2,
                                                        header_len=0x7FFFFFF0)})


def _object_dtype(a):
    return npz_of(a, replace={"node_opcode": npy_raw("|O", a["node_opcode"].shape,
                                                     a["node_opcode"].tobytes())})


def _bad_magic(a):
    return npz_of(a, replace={"edge_index": b"this is not an npy array" * 8})


def _garbage(_a):
    rng = np.random.default_rng(6)
    return rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()


def _opcode_count(a):
    return npz_of(dict(a, node_opcode=a["node_opcode"][:-1]))


def _config_count(a):
    return npz_of(dict(a, config_runtime_normalizers=a["config_runtime_normalizers"][:-1]))


def _dup_config_ids(a):
    ids = a["node_config_ids"].copy()
    ids[1] = ids[0]
    return npz_of(dict(a, node_config_ids=ids))


def _splits_decreasing(a):
    s = a["node_splits"].copy()
    s.reshape(-1)[-1] = -1
    return npz_of(dict(a, node_splits=s))


CASES = {
    # zip container
    "truncated": (TILE, "train", "", r"not a zip archive.*truncated",
                  "an archive cut to 60% of its length", _truncated),
    "corrupt_deflate": (LXR, "train", "node_feat", r"deflate|CRC mismatch",
                        "16 flipped bytes inside a deflated member", _corrupt_deflate),
    "wrong_crc": (TILE, "valid", "config_runtime", r"CRC mismatch",
                  "a CRC-32 in the central directory that does not match the data", _wrong_crc),
    "missing_member": (LND, "train", "config_runtime", r"no such member",
                       "an archive without its config_runtime member",
                       lambda a: npz_of(a, drop=("config_runtime",))),
    "cd_past_eof": (TILE, "test", "", r"central directory .*points past the end of the file",
                    "an end record whose central directory offset lies past the end of the file",
                    _cd_past_eof),
    "local_header_offset": (LNR, "valid", "edge_index", r"no local header",
                            "a directory entry pointing into the middle of a member",
                            _local_header_offset),
    "unsupported_method": (TILE, "train", "node_opcode", r"unsupported compression method 12",
                           "a member marked bzip2-compressed", lambda a: _method(a, 12)),
    "encrypted": (LXD, "train", "node_opcode", r"encrypted",
                  "a member flagged as encrypted", _encrypted),
    "duplicate_member": (LXD, "valid", "node_opcode", r"duplicate member",
                         "node_opcode stored twice", _duplicate_member),
    "garbage": (TILE, "train", "", r"not a zip archive", "4 KiB of random bytes", _garbage),
    "empty_file": (LXR, "valid", "", r"empty file", "a 0-byte file", lambda a: b""),
    "directory": (TILE, "train", "", r"is a directory", "a directory named *.npz", None),
    "zero_byte_member": (LNR, "train", "config_runtime", r"member is empty",
                         "a 0-byte config_runtime member", _zero_byte_member),
    "terabyte_header": (TILE, "train", "node_feat", r"header says shape \(8589934592, 140\)",
                        "an npy header declaring a (2^33, 140) float32 array (4.8 TB)",
                        _terabyte_header),
    "terabyte_zip": (LXR, "train", "node_feat", r"declared size of \d{13} bytes is impossible",
                     "a 4.8 TB npy header and a zip64 entry declaring the same 4.8 TB",
                     _terabyte_zip),
    # npy members
    "bad_magic": (LND, "valid", "edge_index", r"bad magic", "a member that is not an npy array",
                  _bad_magic),
    "wrong_dtype": (TILE, "valid", "node_feat", r"dtype <i4 is not accepted",
                    "node_feat stored as int32", _wrong_dtype),
    "float_edges": (LXD, "train", "edge_index", r"dtype <f4 is not accepted",
                    "edge_index stored as float32", _float_edges),
    "header_len_tiny": (LXD, "valid", "node_feat", r"malformed header",
                        "a deflated member whose npy 1.0 header length field is 0",
                        lambda a: npz_of(a, deflate=True, replace={
                            "node_feat": npy_raw("<f4", a["node_feat"].shape, a["node_feat"].tobytes(),
                                                 header_len=0)})),
    "object_dtype": (LNR, "train", "node_opcode", r"unsupported dtype '\|O'",
                     "an object-dtype (pickled) member", _object_dtype),
    "fortran_nan_feat": (LXR, "train", "node_feat", r"node 3 feature 7 is nan",
                         "a NaN in a Fortran-order node_feat (numpy order, read in C order)", _fortran_nan),
    "big_endian_edge": (TILE, "train", "edge_index", r"edge 0 endpoint (\d+) is outside \[0, \1\)",
                        "a big-endian edge_index with an endpoint equal to the node count", _big_endian_edge),
    "shape_lie": (LND, "train", "node_feat", r"header says shape .* but the member holds",
                  "a header declaring 5 more rows than the data holds", _shape_lie),
    "huge_header_len": (TILE, "valid", "config_runtime", r"header length \d+ exceeds",
                        "an npy 2.0 header length of 2 GiB", _huge_header_len),
    # values and shapes
    "nan_feat": (LXD, "train", "node_feat", r"node 3 feature 7 is nan", "a NaN node feature",
                 lambda a: npz_of(with_value(a, "node_feat", (3, 7), np.nan))),
    "inf_feat": (TILE, "train", "node_feat", r"node 2 feature 20 is inf", "an infinite node feature",
                 lambda a: npz_of(with_value(a, "node_feat", (2, 20), np.inf))),
    "edge_out_of_range": (TILE, "train", "edge_index", r"edge 0 endpoint \d+ is outside \[0, \d+\)",
                          "an edge endpoint equal to the node count",
                          lambda a: npz_of(with_value(a, "edge_index", (0, 1), len(a["node_opcode"])))),
    "edge_negative": (LNR, "train", "edge_index", r"endpoint -1 is outside",
                      "a negative edge endpoint",
                      lambda a: npz_of(with_value(a, "edge_index", (1, 0), -1))),
    "config_id_negative": (LXR, "train", "node_config_ids", r"names node -3, outside",
                           "a negative node_config_ids entry",
                           lambda a: npz_of(with_value(a, "node_config_ids", 0, -3))),
    "config_id_huge": (LND, "train", "node_config_ids", r"names node 1099511627776, outside",
                       "a node_config_ids entry of 2^40",
                       lambda a: npz_of(with_value(a, "node_config_ids", 2, 2 ** 40), deflate=True)),
    "config_id_duplicate": (LXD, "train", "node_config_ids", r"appears twice",
                            "a configurable node listed twice", _dup_config_ids),
    "config_value_9": (LXR, "train", "node_config_feat", r"value 9 .* not an integer in -1\.\.5",
                       "a layout config value of 9",
                       lambda a: npz_of(with_value(a, "node_config_feat", (0, 0, 3), 9))),
    "config_value_fraction": (LNR, "valid", "node_config_feat", r"value 2\.5 .* not an integer",
                              "a layout config value of 2.5",
                              lambda a: npz_of(with_value(a, "node_config_feat", (1, 0, 0), 2.5))),
    "config_value_nan": (LXD, "valid", "node_config_feat", r"value nan .* not an integer",
                         "a NaN layout config value",
                         lambda a: npz_of(with_value(a, "node_config_feat", (0, 1, 5), np.nan))),
    "zero_configs_tile": (TILE, "train", "config_runtime", r"no configurations",
                          "a tile graph with zero configs", _zero_configs_tile),
    "zero_configs_layout": (LXR, "train", "config_runtime", r"no configurations",
                            "a layout graph with zero configs", _zero_configs_layout),
    "config_width_tile": (TILE, "train", "config_feat", r"shape \(\d+, 23\) does not match",
                          "tile config rows 23 wide instead of 24",
                          lambda a: npz_of(dict(a, config_feat=a["config_feat"][:, :23]))),
    "config_width_layout": (LND, "train", "node_config_feat", r"shape \(\d+, \d+, 17\) does not match",
                            "layout config rows 17 wide instead of 18",
                            lambda a: npz_of(dict(a, node_config_feat=a["node_config_feat"][:, :, :17]))),
    "negative_runtime_tile": (TILE, "valid", "config_runtime", r"config 1 has config_runtime -5",
                              "a negative tile runtime",
                              lambda a: npz_of(with_value(a, "config_runtime", 1, -5))),
    "negative_runtime_layout": (LNR, "train", "config_runtime", r"config 1 has config_runtime -5",
                                "a negative layout runtime",
                                lambda a: npz_of(with_value(a, "config_runtime", 1, -5))),
    "zero_normalizer": (TILE, "train", "config_runtime_normalizers", r"expected >= 1",
                        "a zero runtime normalizer",
                        lambda a: npz_of(with_value(a, "config_runtime_normalizers", 0, 0))),
    "opcode_out_of_range": (LXD, "train", "node_opcode", r"opcode 200, outside 0\.\.120",
                            "an opcode of 200",
                            lambda a: npz_of(with_value(a, "node_opcode", 0, 200))),
    "opcode_count": (TILE, "train", "node_opcode", r"does not match \(\d+,\) \(one per node\)",
                     "one opcode fewer than nodes", _opcode_count),
    "normalizer_count": (TILE, "valid", "config_runtime_normalizers", r"one per config",
                         "one normalizer fewer than configs", _config_count),
    "splits_decreasing": (LNR, "train", "node_splits", r"non-decreasing",
                          "node_splits ending in -1", _splits_decreasing),
}


def rel_path(name):
    parts, split = CASES[name][0], CASES[name][1]
    return os.path.join(*parts, split, "zzbad_" + name + ".npz")


def base_arrays(raw, name):
    parts, split = CASES[name][0], CASES[name][1]
    d = os.path.join(raw, *parts, split)
    good = sorted(f for f in os.listdir(d) if f.endswith(".npz") and not f.startswith("zzbad_"))
    with np.load(os.path.join(d, good[0])) as z:
        return {k: z[k] for k in z.files}


def case_bytes(raw, name):
    make = CASES[name][5]
    return make(base_arrays(raw, name))


def write_case(raw, name, root):
    path = os.path.join(root, rel_path(name))
    if CASES[name][5] is None:
        os.makedirs(path, exist_ok=True)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(case_bytes(raw, name))


def main(argv):
    warnings.simplefilter("ignore")  # zipfile warns about the duplicate member we want
    if len(argv) < 3 or argv[0] not in ("stage", "flat"):
        print(__doc__)
        return 2
    cmd, raw, out = argv[0], argv[1], argv[2]
    if cmd == "stage":
        with open(argv[3], "w") as f:
            for name, c in CASES.items():
                write_case(raw, name, out)
                f.write("\t".join([name, rel_path(name), c[2], c[3], c[4]]) + "\n")
    else:
        os.makedirs(out, exist_ok=True)
        for name, c in CASES.items():
            if c[5] is not None:
                with open(os.path.join(out, name + ".npz"), "wb") as f:
                    f.write(case_bytes(raw, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
