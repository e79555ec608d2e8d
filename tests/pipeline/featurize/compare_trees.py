#!/usr/bin/python3
"""Compares two npz trees array by array (numpy only): the same files, in each the same
keys, and every array with the same dtype, shape and values, exactly (integers and
float32 alike: both featurizers cast the same int64 values to float32).

usage: compare_trees.py A B [--only-keys-of B]
  --only-keys-of B: A's files may hold more keys than B's (e.g. node_feat_extra); the
  keys B has must still match.
Exit 0 when equal, 1 with the differences listed otherwise.
"""
import os
import sys

import numpy as np


def files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, names in os.walk(root) for f in names if f.endswith(".npz"))


def compare(a, b, subset):
    problems = []
    fa, fb = files_under(a), files_under(b)
    problems += ["only in %s: %s" % (a, f) for f in sorted(set(fa) - set(fb))]
    problems += ["only in %s: %s" % (b, f) for f in sorted(set(fb) - set(fa))]
    arrays = 0
    for f in sorted(set(fa) & set(fb)):
        x, y = np.load(os.path.join(a, f)), np.load(os.path.join(b, f))
        extra = set(x.files) - set(y.files)
        if set(y.files) - set(x.files) or (extra and not subset):
            problems.append("%s: keys %s vs %s" % (f, sorted(x.files), sorted(y.files)))
        for k in sorted(set(x.files) & set(y.files)):
            u, v = x[k], y[k]
            arrays += 1
            if u.dtype != v.dtype or u.shape != v.shape:
                problems.append("%s: %s: %s %s vs %s %s" % (f, k, u.dtype, u.shape, v.dtype, v.shape))
            elif not np.array_equal(u, v):
                at = np.argwhere(u != v)
                problems.append("%s: %s: %d values differ, first at %s: %r vs %r" % (
                    f, k, len(at), tuple(at[0]), u[tuple(at[0])], v[tuple(at[0])]))
    return problems, len(fa), arrays


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    problems, files, arrays = compare(argv[0], argv[1], "--only-keys-of" in argv)
    for p in problems[:30]:
        print(p)
    if problems:
        print("FAIL: %d differences between %s and %s" % (len(problems), argv[0], argv[1]))
        return 1
    print("identical: %d files, %d arrays" % (files, arrays))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
