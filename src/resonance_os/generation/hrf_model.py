"""HRFModel: predicted human resonance of a text, from alignment to a target HRV and quality signals.

A transparent stand-in for the learned reward model (same small interface: ``predict`` and
``per_dimension``). Resonance = alignment x (0.5 + 0.5 x quality), where

* alignment = 1 - mean |target - measured| over the 8 HRV dimensions (1 = exactly on target);
* quality = mean of three signals in [0, 1]:
  - ``length``: mean sentence length within 8-25 words scores 1, falling linearly to 0 at 2 and 45;
  - ``repetition``: distinct-2 (distinct word bigrams / bigrams) of 0.6 or more scores 1, scaled below,
    and every repeated sentence costs 0.25;
  - ``readability``: LIX (words per sentence + 100 x share of words longer than 6 letters; Bjornsson
    1968) of 45 or less scores 1, falling linearly to 0 at 75.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import validate_hrv

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
QUALITY_SIGNALS = ("length", "repetition", "readability")


def _ramp(value: float, zero_low: float, one_low: float, one_high: float, zero_high: float) -> float:
    """1 inside [one_low, one_high], linear to 0 at zero_low and zero_high."""
    if value < one_low:
        return max(0.0, (value - zero_low) / (one_low - zero_low))
    if value > one_high:
        return max(0.0, (zero_high - value) / (zero_high - one_high))
    return 1.0


def quality_signals(text: str) -> dict[str, float]:
    """``{"length", "repetition", "readability"}`` scores in [0, 1] for ``text`` (see module docstring)."""
    sentences = [s.strip() for s in _SENTENCE.findall(text) if _WORD.search(s)]
    words = [w.lower() for w in _WORD.findall(text)]
    if not words or not sentences:
        return dict.fromkeys(QUALITY_SIGNALS, 0.0)
    mean_length = len(words) / len(sentences)
    bigrams = list(zip(words, words[1:]))
    distinct2 = len(set(bigrams)) / len(bigrams) if bigrams else 1.0
    repeated = len(sentences) - len({s.lower() for s in sentences})
    long_share = sum(len(w) > 6 for w in words) / len(words)
    lix = mean_length + 100.0 * long_share
    return {
        "length": _ramp(mean_length, 2.0, 8.0, 25.0, 45.0),
        "repetition": max(0.0, min(1.0, distinct2 / 0.6) - 0.25 * repeated),
        "readability": _ramp(lix, -1.0, 0.0, 45.0, 75.0),
    }


class HRFModel:
    """Human Resonance Function: predicted resonance in [0, 1] of a text against a target HRV.

    Args:
        extractor: ``HRVExtractor`` used to measure texts (created if omitted).
    """

    def __init__(self, extractor=None) -> None:
        if extractor is None:
            from resonance_os.profiling.hrv_extractor import HRVExtractor

            extractor = HRVExtractor()
        self.extractor = extractor

    @staticmethod
    def _target(target_hrv: Sequence[float] | None) -> list[float]:
        if target_hrv is None:
            from resonance_os.generation.defaults import default_target

            return default_target()
        return validate_hrv(target_hrv, what="target HRV")

    def per_dimension(self, text: str, target_hrv: Sequence[float] | None = None) -> dict[str, float]:
        """Alignment per HRV dimension (1 - |target - measured|) plus the three quality signals.

        ``target_hrv`` defaults to the default profile's vector. Keys: the 8 ``HRV_DIMENSIONS``, then
        ``length``, ``repetition``, ``readability``; every value in [0, 1].
        """
        target = self._target(target_hrv)
        measured = self.extractor.extract(text)
        scores = {name: 1.0 - abs(t - m) for name, t, m in zip(HRV_DIMENSIONS, target, measured)}
        scores.update(quality_signals(text))
        return scores

    def predict(self, text: str, target_hrv: Sequence[float] | None = None) -> float:
        """Predicted resonance in [0, 1]: alignment x (0.5 + 0.5 x mean quality)."""
        scores = self.per_dimension(text, target_hrv)
        alignment = sum(scores[name] for name in HRV_DIMENSIONS) / len(HRV_DIMENSIONS)
        quality = sum(scores[name] for name in QUALITY_SIGNALS) / len(QUALITY_SIGNALS)
        return max(0.0, min(1.0, alignment * (0.5 + 0.5 * quality)))
