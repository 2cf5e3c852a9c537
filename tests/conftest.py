"""Shared test set-up: one thread per process so the suite is fast and deterministic on 2 cores."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # torch is a dependency; this only guards odd partial installs
    pass
