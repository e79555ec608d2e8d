#!/usr/bin/python3
"""One core's single-precision matmul rate, the physical anchor of the training benchmark:
a large sgemm (2048 x 2048 x 2048 float32, 1 thread) through numpy and torch (both reach the
libblas.so.3 alternative, OpenBLAS here), and the same BLAS at the shapes of the models'
matmuls with hidden 32 and 64 (rows x 32 by 32 x 96 and so on: thin matrices, whose packing and
memory traffic weigh more than their multiply-adds).

Prints and writes (--json) GFLOP/s = 2 m n k / seconds, best of --repeat runs.
Run with OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1 (bench_train.sh does)."""
import argparse
import json
import time

import numpy as np
import torch


def best_seconds(f, repeat):
    f()  # warm-up: first-touch pages, BLAS buffers
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--rows", type=int, default=24576, help="rows of the model-shape matmuls (S x N)")
    ap.add_argument("--hidden", type=int, nargs="+", default=[32, 64],
                    help="widths of the models' shapes (the bench models' 32, the defaults' 64)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    n, out = a.size, {"threads": torch.get_num_threads()}
    x = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    y = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    out["numpy_sgemm"] = 2 * n ** 3 / best_seconds(lambda: x @ y, a.repeat) / 1e9
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    out["torch_sgemm"] = 2 * n ** 3 / best_seconds(lambda: torch.mm(tx, ty), a.repeat) / 1e9
    out["size"] = n
    r, shapes = a.rows, {}
    for h in a.hidden:  # name: (m, k, n)
        shapes.update({
            f"{r}x{h} @ {h}x{3 * h} (project first: the SAGE block's forward)": (r, h, 3 * h),
            f"{r}x{3 * h} @ {3 * h}x{h} (its input gradient; the cat path's forward)": (r, 3 * h, h),
            f"{3 * h}x{r} @ {r}x{h} (its weight gradient)": (3 * h, r, h),
            f"{r}x{h} @ {h}x{h} (H x H layers)": (r, h, h),
        })
    out["shapes"] = {}
    for name, (m, k, nn_) in shapes.items():
        p, q = torch.randn(m, k), torch.randn(k, nn_)
        out["shapes"][name] = 2 * m * k * nn_ / best_seconds(lambda: torch.mm(p, q), 3 * a.repeat) / 1e9
    print(f"sgemm {n}^3, 1 thread: numpy {out['numpy_sgemm']:.1f} GFLOP/s, torch.mm {out['torch_sgemm']:.1f} GFLOP/s")
    for name, v in out["shapes"].items():
        print(f"  torch.mm {name}: {v:.1f} GFLOP/s")
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
