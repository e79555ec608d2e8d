#!/usr/bin/python3
"""The bad tuning records of the faults suite, derived from the two real records in
tests/data/real by editing them at the protobuf wire level (never checked in).

Each case is one broken copy of a real file, wrong in exactly one way, and declares what
tpuperf-featurize must say and keep:
  expect   the rejections, each (record regex, reason regex); nothing else is rejected
  lost     the outputs (file stems) the case may not write, ["*"] for all of its file's;
           every other output of the real file must still be written, equal to the good
           run's
  shrunk   {output stem: config index}: that output must equal the good run's without
           that config (a rejected run)

usage:
  make_bad_records.py stage REAL_DIR STAGE_DIR CASES_JSON
      writes STAGE_DIR/<case>/<name of the real file it derives from> (a directory for the
      directory case) and the case list
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline", "featurize"))
import reference_featurize as ref  # noqa: E402
from reencode_records import encode_field, varint  # noqa: E402

TILE, LAYOUT = "op_tuning_data.pb", "module_tuning_data_layout.pb"
TILE_STEM, LAYOUT_STEM = "op_tuning_data", "module_tuning_data_layout"

# ---- wire-level editing ---------------------------------------------------------------


def fields(buf):
    return [(n, wt, bytes(v) if wt != ref.WT_VARINT else v) for n, wt, v in ref.iter_fields(memoryview(buf))]


def encode(fs):
    return b"".join(encode_field(n, wt, v) for n, wt, v in fs)


def edit(buf, path, fn):
    """Applies fn to the sub-message at path, a list of (field number, occurrence); fn
    returns its new bytes, or None to drop the field."""
    if not path:
        return fn(buf)
    (number, occurrence), rest = path[0], path[1:]
    out, seen = [], 0
    for n, wt, v in fields(buf):
        if n == number and wt == ref.WT_LEN:
            if seen == occurrence:
                v = edit(v, rest, fn)
            seen += 1
            if v is None:
                continue
        out.append((n, wt, v))
    assert seen > occurrence, "no occurrence %d of field %d" % (occurrence, number)
    return encode(out)


def drop(number):
    return lambda m: encode([f for f in fields(m) if f[0] != number])


def set_varint(number, value):
    return lambda m: encode([f for f in fields(m) if f[0] != number] + [(number, ref.WT_VARINT, value)])


def set_packed(number, values):
    packed = b"".join(varint(v) for v in values)
    return lambda m: encode([f for f in fields(m) if f[0] != number] + [(number, ref.WT_LEN, packed)])


def packed_values(buf, number):
    for n, wt, v in fields(buf):
        if n == number and wt == ref.WT_LEN:
            pos, out = 0, []
            while pos < len(v):
                raw, pos = ref.read_varint(v, pos)
                out.append(raw)
            return out
    return []


# ---- paths into the real records ------------------------------------------------------


def kernel(k):
    return [(1, k)]


def tile_run(k, r):
    return [(1, k), (3, r)]


def layout_run(r):
    return [(3, r)]


def instruction(prefix, computation, index):
    return prefix + [(1, 0), (3, computation), (2, index)]


# ---- the cases ----------------------------------------------------------------------------

def _garbled_kernel(data):
    # Kernel 5's first byte becomes tag 0x07 (field 0, wire type 7): the top level still
    # frames every kernel, protobuf cannot parse this one.
    return edit(data, kernel(5), lambda m: b"\x07" + m[1:])


def _garbage(_data):
    state, out = 12345, bytearray()
    for _ in range(4096):  # a fixed linear congruential sequence: the same bytes every run
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(state >> 16 & 0xFF)
    return bytes(out)


def _operand_nowhere(prefix):
    def make(data):
        def first_operand(inst):
            ops = packed_values(inst, 36)
            return set_packed(36, [999999] + ops[1:])(inst)
        return edit(data, instruction(prefix, 0, 2), first_operand)
    return make


def _config_node_outside(data):
    ids = packed_values(data, 4)
    return set_packed(4, ids[:10] + [5000] + ids[11:])(data)


def _layout_nodes_short(data):
    # Run 7's layout config loses its last node: 61 nodes for 62 configurable ones.
    def drop_last_node(layout_config):
        fs = fields(layout_config)
        last = max(i for i, f in enumerate(fs) if f[0] == 1)
        return encode(fs[:last] + fs[last + 1:])
    return edit(data, layout_run(7) + [(2, 0), (1, 0)], drop_last_node)


CASES = {
    # case: (source, description, make, expect, lost, shrunk)
    "truncated_tile": (TILE, "the tile record cut to 60% of its length",
                       lambda d: d[: len(d) * 6 // 10],
                       [(r"^kernel 3 and any after it$",
                         r"truncated or garbled record: field 1 at byte \d+: declares \d+ bytes, the file ends")],
                       ["op_tuning_data_%s" % h for h in (
                           "6506960125603509", "11d55dfd21d1a19c", "-3545610a073feea6", "715d6c5d784f9262",
                           "4d1e36cc29e3e6d8", "-d35a43855de59c9", "4f37352569503a80", "-3006cd0d02fa72c4", "-426e30b3297100f1", "24aa8731e7561309",
                           "-741297d2a8031207", "-69259acddcd0d88")], {}),
    "truncated_layout": (LAYOUT, "the layout record cut to 90% of its length (inside its runs)",
                         lambda d: d[: len(d) * 9 // 10],
                         [(r"^module main__\.10904$", r"truncated or garbled record: field 3 at byte \d+")],
                         [LAYOUT_STEM], {}),
    "garbled_kernel": (TILE, "kernel 5 garbled inside (an invalid tag), the file's framing intact",
                       _garbled_kernel,
                       [(r"^kernel 5$", r"not a valid ModuleTuningData: protobuf cannot parse its \d+ bytes")],
                       ["op_tuning_data_-3545610a073feea6"], {}),
    "garbage": (TILE, "4 KiB of pseudo-random bytes", _garbage,
                [(r"^-$", r"truncated or garbled record|cannot tell")], ["*"], {}),
    "empty_file": (TILE, "a 0-byte file", lambda d: b"", [(r"^-$", r"empty file")], ["*"], {}),
    "directory": (TILE, "a directory named like a record", None, [(r"^-$", r"is a directory")], ["*"], {}),
    "ambiguous": (TILE, "a record of one field holding only a module name (either message)",
                  lambda d: encode_field(1, ref.WT_LEN, encode_field(1, ref.WT_LEN, b"fusion.1")),
                  [(r"^-$", r"cannot tell a TuningData .*pass --kind")], ["*"], {}),
    "tile_run_no_profile": (TILE, "kernel 0's run 3 without its profile",
                            lambda d: edit(d, tile_run(0, 3), drop(4)),
                            [(r"^kernel 0 \(fusion\.232\) run 3$", r"^no profile")], [],
                            {"op_tuning_data_579e7b2c540f0929": 3}),
    "tile_run_no_config": (TILE, "kernel 6's run 2 without its tile config",
                           lambda d: edit(d, tile_run(6, 2), drop(1)),
                           [(r"^kernel 6 \(copy\.24\)$", r"run 2 has no tile_size_config")],
                           ["op_tuning_data_715d6c5d784f9262"], {}),
    "layout_run_no_profile": (LAYOUT, "run 5 without its profile",
                              lambda d: edit(d, layout_run(5), drop(4)),
                              [(r"^module main__\.10904 run 5$", r"^no profile")], [], {LAYOUT_STEM: 5}),
    "layout_run_no_config": (LAYOUT, "run 5 without its layout config",
                             lambda d: edit(d, layout_run(5), drop(2)),
                             [(r"^module main__\.10904 run 5$", r"no layout config")], [], {LAYOUT_STEM: 5}),
    "layout_config_short": (LAYOUT, "run 7's layout config for 61 of the 62 configurable nodes",
                            _layout_nodes_short,
                            [(r"^module main__\.10904 run 7$", r"layout config for 61 nodes, but "
                              r"config_index_to_node names 62")], [], {LAYOUT_STEM: 6}),  # run 6 errored
    "config_node_outside": (LAYOUT, "config_index_to_node naming node 5000 of 3163",
                            _config_node_outside,
                            [(r"^module main__\.10904$", r"config_index_to_node\[10\] = 5000 names no node: "
                              r"the module has 3163")], [LAYOUT_STEM], {}),
    "tile_operand_nowhere": (TILE, "an operand id of kernel 3 that names no instruction",
                             _operand_nowhere(kernel(3)),
                             [(r"^kernel 3 \(fusion\.209\)$", r"instruction 'add\.92' \(id 32\) in computation "
                               r"'region_0\.89': operand id 999999 is no instruction of the module")],
                             ["op_tuning_data_6506960125603509"], {}),
    "layout_operand_nowhere": (LAYOUT, "an operand id of the layout module that names no instruction",
                               _operand_nowhere([]),
                               [(r"^module main__\.10904$", r"instruction 'add\.1522' .* operand id 999999 is no "
                                 r"instruction")], [LAYOUT_STEM], {}),
    "tile_no_default": (TILE, "kernel 2 without a run marked default",
                        lambda d: edit(d, tile_run(2, 0), drop(5)),
                        [(r"^kernel 2 \(fusion\.261\)$", r"no run is marked is_default")],
                        ["op_tuning_data_-8a7557b856e7b3b"], {}),
    "tile_default_error": (TILE, "kernel 4's default run marked as an error",
                           lambda d: edit(d, tile_run(4, 0), set_varint(3, 1)),
                           [(r"^kernel 4 \(fusion\.205\)$", r"no default run among the kept runs \(run 0 is the "
                             r"default, but it has an error\)")], ["op_tuning_data_11d55dfd21d1a19c"], {}),
    "layout_no_default": (LAYOUT, "the layout module without a run marked default",
                          lambda d: edit(d, layout_run(0), drop(5)),
                          [(r"^module main__\.10904$", r"no run is marked is_default")], [LAYOUT_STEM], {}),
}


def stage(real_dir, stage_dir, cases_json):
    listing = []
    for case, (source, description, make, expect, lost, shrunk) in CASES.items():
        directory = os.path.join(stage_dir, case)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, source)
        if make is None:
            os.makedirs(path, exist_ok=True)
        else:
            with open(os.path.join(real_dir, source), "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(make(data))
        listing.append({"case": case, "file": os.path.relpath(path, stage_dir), "source": source,
                        "description": description, "expect": expect, "lost": lost, "shrunk": shrunk})
    with open(cases_json, "w") as f:
        json.dump(listing, f, indent=1)
    print("%d bad records in %s" % (len(listing), stage_dir))


def main(argv):
    if len(argv) != 4 or argv[0] != "stage":
        print(__doc__)
        return 2
    stage(*argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
