"""Parsing of the ``--hrv 0.4,0.6,...`` option shared by the commands that take a target HRV."""

from __future__ import annotations

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS


def parse_hrv_option(text: str) -> list[float]:
    """``"0.4,0.6,..."`` -> floats (count and range are checked by ``validate_hrv`` where they are used)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise ValidationError(
            f"--hrv {text!r} is not {len(HRV_DIMENSIONS)} comma-separated numbers; "
            "e.g. --hrv 0.4,0.6,0.35,0.65,0.1,0.05,0.3,0.9 (order: " + ", ".join(HRV_DIMENSIONS) + ")"
        ) from None
