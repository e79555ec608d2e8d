"""Latency of the ranker from Python (the package tpuperf), one call at a time, for
tests/bench/bench_rank.sh beside rank_latency.cpp's C++ figures:
  rank_latency.py RUN_DIR COLLECTION FILE.npz REPEATS THREADS
prints one tab-separated line:
  file configs folds load_ms rank_ms_median rank_ms_min release_ms_median file_ms copy_ms
load_ms: tpuperf.Ranker(...); rank_ms: Ranker.rank on a dict of the file's arrays in the
C++ API's dtypes (what rank_latency.cpp's Ranker::rank gets; median and minimum of REPEATS
after one warm-up call), so the difference to C++ is the package's checks, the copy into
RankGraph's vectors and the call; release_ms: the same on np.load's arrays as the file
holds them (layout node_config_feat float32, converted to int8 on every call); file_ms:
Ranker.rank(path), reading included; copy_ms: one numpy copy of the arrays rank passes to
C++ (minimum of REPEATS), the size of the copy the C++ API's vectors take.
"""

import sys
import time

import numpy as np

import tpuperf


def ms(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def main():
    run, collection, path, repeats, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    t0 = time.perf_counter()
    ranker = tpuperf.Ranker(run, collection, threads=threads)
    load_ms = (time.perf_counter() - t0) * 1000
    release = dict(np.load(path))
    api = dict(release)
    if "node_config_feat" in api:
        api["node_config_feat"] = api["node_config_feat"].astype(np.int8)
    first = ranker.rank(api)  # warm-up
    times = sorted(ms(lambda: ranker.rank(api)) for _ in range(repeats))
    release_times = sorted(ms(lambda: ranker.rank(release)) for _ in range(repeats))
    file_ms = ms(lambda: ranker.rank(path))
    keys = [k for k in ("node_feat", "node_opcode", "edge_index", "node_splits", "config_feat", "node_config_ids",
                        "node_config_feat") if k in api]
    copy_ms = min(ms(lambda: [api[k].copy() for k in keys]) for _ in range(repeats))
    print("\t".join([path, str(len(first["order"])), str(first["folds"]), f"{load_ms:.1f}", f"{times[len(times) // 2]:.2f}",
                     f"{times[0]:.2f}", f"{release_times[len(release_times) // 2]:.2f}", f"{file_ms:.1f}", f"{copy_ms:.2f}"]))


if __name__ == "__main__":
    main()
