"""tpuperf from Python: rank XLA/TPU compiler configs with a trained run's fold models and
read what tpuperf writes. See docs/python.md.

    import numpy as np, tpuperf
    ranker = tpuperf.Ranker("runs/demo", "tile:xla")
    r = ranker.rank(np.load("kernel.npz"))   # or ranker.rank("kernel.npz")
    r["order"][:5]                           # the 5 configs to run first

The C++ side logs to stderr (an adaptation logs a line); tpuperf.set_log_level("warn")
quiets it. Errors are tpuperf.Error (a ValueError) with the message, reason, file and key of the C++
side's tpuperf::Error.
"""

from ._core import Error, set_log_level
from .ranking import Ranker, trained_collections
from .readers import METRICS_COLUMNS, cv_summary, read_metrics, read_shard, read_submission

__all__ = ["Error", "set_log_level", "Ranker", "trained_collections", "METRICS_COLUMNS", "read_metrics", "cv_summary",
           "read_submission", "read_shard"]
