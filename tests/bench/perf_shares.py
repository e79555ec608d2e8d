#!/usr/bin/python3
"""Reads `perf report --stdio --no-children --sort dso,sym` (one process's samples) on stdin
and prints one JSON line: the share of samples per kind of work (the categories below, by
library and symbol) and the top symbols. Used by bench_train.sh's anchor part."""
import argparse
import json
import re
import sys

# (category, test on (dso, symbol)), first match wins. The order matters: tpuperf's own
# kernels are in the tpuperf-train binary, LibTorch's kernels in libtorch_cpu.
CATEGORIES = [
    ("BLAS sgemm (OpenBLAS: kernels and packing)", lambda d, s: "openblas" in d or "libblas" in d),
    ("tpuperf width-32 matmul kernels", lambda d, s: d.startswith("tpuperf") and "small_" in s),
    ("tpuperf fused kernels (aggregation, GELU/dropout/LayerNorm epilogue, pooling, adds)",
     lambda d, s: d.startswith("tpuperf") and re.search(r"kernels::|SageLinear|GeluDropout|AddGathered|"
                                                         r"SegmentMeanMax|CounterDropout", s) is not None),
    ("tpuperf AdamW and clipping", lambda d, s: d.startswith("tpuperf") and re.search(r"AdamW|clip", s) is not None),
    ("LibTorch (ops, dispatch, autograd; its kernels' symbols are not exported)",
     lambda d, s: "libtorch" in d or "libc10" in d or "libgomp" in d),
    ("Python interpreter", lambda d, s: d.startswith("python") or "libpython" in d),
    ("malloc, free, memset, memcpy (libc) and page faults",
     lambda d, s: d.startswith("libc.so") or d.startswith("libc-") or re.search(
         r"clear_page|page_fault|do_anonymous|zap_|free_pages|rmqueue|memcg|lru", s) is not None),
    ("HDF5 and zlib (loading at start; tpuperf's layout steps also read config rows)",
     lambda d, s: "hdf5" in d or "libz" in d or "libsz" in d),
    ("OS kernel (other)", lambda d, s: d.startswith("[kernel")),
    ("tpuperf other (batching, sampling, loop)", lambda d, s: d.startswith("tpuperf")),
    ("other", lambda d, s: True),
]


# With --children (perf report --children of a call-graph profile of tpuperf-train): the
# share of samples under each of these (a function and everything it calls), the max over
# the symbols matching (an autograd node appears as apply and as its CppNode).
CHILDREN = [
    ("training steps", r"^tpuperf::\(anonymous namespace\)::train_step$"),
    ("backward (autograd engine)", r"^torch::autograd::Engine::execute$"),
    ("SAGE linear: gathers + width-32 matmuls, forward", r"torch::autograd::Function<.*SageLinear>::apply"),
    ("SAGE linear, backward", r"CppNode<.*SageLinear>::apply"),
    ("GELU/dropout/residual/LayerNorm epilogue, forward", r"GeluDropoutAddLayerNorm::forward"),
    ("GELU/dropout/residual/LayerNorm epilogue, backward", r"CppNode<.*GeluDropoutAddLayerNorm>::apply"),
    ("EmbeddingBag backward (LibTorch; layout config values)", r"EmbeddingBagBackward0::apply"),
    ("config rows read from the HDF5 shard (inflate included)", r"tpuperf::ShardReader::read_configs"),
    ("AdamW and clipping", r"FusedAdamW::clip_and_step"),
    ("evaluation (scoring held-out and valid graphs)", r"^tpuperf::score_set"),
]


def children(lines):
    shares = {}
    for line in lines:
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+\[([.k])\]\s+(.*)$", line)
        if not m:
            continue
        for name, pattern in CHILDREN:
            if re.search(pattern, m[4].strip()):
                shares[name] = max(shares.get(name, 0.0), float(m[1]) / 100)
    return shares


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--children", action="store_true",
                    help="input is perf report --children --sort sym -g none of a call-graph profile")
    a = ap.parse_args()
    if a.children:
        print(json.dumps(dict(collection=a.collection, tool=a.tool, children=children(sys.stdin))))
        return
    rows = []
    for line in sys.stdin:
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[([.k])\]\s+(.*)$", line)
        if m:
            rows.append((float(m[1]), m[2], m[4].strip()))
    total = sum(r[0] for r in rows) or 1.0
    shares = {name: 0.0 for name, _ in CATEGORIES}
    for pct, dso, sym in rows:
        name = next(n for n, test in CATEGORIES if test(dso, sym))
        shares[name] += pct / total
    top = [{"share": pct / total, "dso": dso, "symbol": sym[:90]} for pct, dso, sym in rows[:a.top]]
    print(json.dumps(dict(collection=a.collection, tool=a.tool, samples_pct=total,
                          categories={k: v for k, v in shares.items() if v > 0}, top=top)))


if __name__ == "__main__":
    main()
