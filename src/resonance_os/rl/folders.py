"""A folder swapped into place in one rename: what makes a checkpoint, a run's checkpoint, an exported
model, a saved reward model, an installed voice adapter and a Tinker checkpoint never half-written (no
torch here, so light callers can use it)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from resonance_os.rl.errors import CheckpointError


def replace_folder(new: Path, target: Path) -> None:
    """Move the complete folder ``new`` to ``target``, replacing an existing folder only now.

    The old folder is renamed aside first and removed after the swap. Raises ``CheckpointError`` when
    ``target`` exists and is not a folder.
    """
    if target.exists():
        if not target.is_dir():
            raise CheckpointError(f"{target} exists and is not a folder; choose another path")
        old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(target, old)
        os.replace(new, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, target)
