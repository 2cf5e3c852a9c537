"""A Tinker-compatible training service: the official ``tinker`` SDK (0.38) trains LoRA adapters here.

``routes`` (the ``/api/v1`` endpoints), ``futures`` (requests stored as rows, long polls), ``worker``
(the thread that executes them in order, batching forward/backward passes across clients),
``backend`` (base models with LoRA slots, losses, AdamW, sampling), ``checkpoints`` (files and
``tinker://`` paths), ``wire`` (the SDK's protobuf messages), ``store`` (tables). docs/tinker.md has the
user's view.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import TYPE_CHECKING

from resonance_os.api.tinker import store  # noqa: F401  (its tables join the service's metadata)

if TYPE_CHECKING:
    from fastapi import FastAPI


def install(app: FastAPI) -> bool:
    """Serve the Tinker API on ``app`` when the ``tinker`` package (its protobuf schema) is installed;
    False (and a log line naming the fix) when it is not."""
    if importlib.util.find_spec("tinker") is None:
        logging.getLogger("resonance_os.api.tinker").info(
            "the Tinker API is off: `pip install tinker==0.38.0` to serve it (docs/tinker.md)"
        )
        return False
    from resonance_os.api.tinker import routes

    routes.install(app)
    return True
