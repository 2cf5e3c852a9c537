"""Shared test set-up: one thread per process and no real language model, so the suite is fast and
deterministic on 2 cores."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The fast suite never loads the real language model: callers that do not name a backend get the
# template composer (tests of the default selection clear this).
os.environ.setdefault("RESONANCE_BACKEND", "builtin")
# Services write and measure in the server process (tests/api/text/test_text_workers.py starts real text
# worker processes, the served default).
os.environ.setdefault("RESONANCE_TEXT_WORKERS", "0")
# The generation engine's default precision depends on the CPU (bf16 where it has AMX, float32 elsewhere:
# llm.precision.fast_dtype); the tests compare its numbers with float32 forward passes, so they pin
# float32 on every machine (the detection's own test clears this).
os.environ.setdefault("RESONANCE_ENGINE_DTYPE", "float32")

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # torch is a dependency; this only guards odd partial installs
    pass
