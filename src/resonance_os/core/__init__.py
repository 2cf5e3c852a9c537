"""The HRV space: dimension names, thresholds, vector and profile types, and the error family."""

from resonance_os.core.errors import (
    InvalidHRVError,
    ProfileNotFoundError,
    ResonanceError,
    ValidationError,
)
from resonance_os.core.hrv_constants import (
    DEFAULT_DRIFT_THRESHOLD,
    DEFAULT_RESONANCE_THRESHOLD,
    HRV_DIMENSIONS,
)
from resonance_os.core.hrv_types import HRVProfile, HRVVector, validate_hrv

__all__ = [
    "DEFAULT_DRIFT_THRESHOLD",
    "DEFAULT_RESONANCE_THRESHOLD",
    "HRV_DIMENSIONS",
    "HRVProfile",
    "HRVVector",
    "InvalidHRVError",
    "ProfileNotFoundError",
    "ResonanceError",
    "ValidationError",
    "validate_hrv",
]
