"""HRFModel: predicted human resonance of a text, the writing reward under the spec's name.

A transparent stand-in for the learned reward model (same small interface: ``predict`` and
``per_dimension``). ``predict`` is ``quality.reward.WritingReward``'s reward: resonance with the
target (1 - mean |target - measured| over the 8 HRV dimensions) times the writing-quality factor
(fluency, coherence and no repetition; see ``quality.reward``). ``per_dimension`` shows the parts:
the alignment of each HRV dimension and each quality term.
"""

from __future__ import annotations

from collections.abc import Sequence

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import default_target, validate_hrv
from resonance_os.quality.reward import WritingReward, make_reward

QUALITY_SIGNALS = ("fluency", "coherence", "repetition")


class HRFModel:
    """Human Resonance Function: predicted resonance in [0, 1] of a text against a target HRV.

    Args:
        extractor: ``HRVExtractor`` used to measure texts (created if omitted).
        reward: the writing reward, chosen as everywhere (``quality.reward.make_reward``): ``"fast"``
            (default) or ``"lm"``, or a ``WritingReward`` used as it is.
    """

    def __init__(self, extractor=None, reward: str | WritingReward | None = None) -> None:
        self.reward = make_reward(reward, extractor=extractor)

    @staticmethod
    def _target(target_hrv: Sequence[float] | None) -> list[float]:
        if target_hrv is None:
            return default_target()
        return validate_hrv(target_hrv, what="target HRV")

    def per_dimension(self, text: str, target_hrv: Sequence[float] | None = None) -> dict[str, float]:
        """Alignment per HRV dimension (1 - |target - measured|) plus the quality terms.

        ``target_hrv`` defaults to the default profile's vector. Keys: the 8 ``HRV_DIMENSIONS``, then
        ``fluency``, ``coherence`` and ``repetition`` (a penalty: 0 = clean); every value in [0, 1].
        """
        target = self._target(target_hrv)
        scored = self.reward.score(text, target)
        scores = {name: 1.0 - abs(t - m) for name, t, m in zip(HRV_DIMENSIONS, target, scored.hrv)}
        scores.update({name: getattr(scored, name) for name in QUALITY_SIGNALS})
        return scores

    def predict(self, text: str, target_hrv: Sequence[float] | None = None) -> float:
        """Predicted resonance in [0, 1]: the writing reward of ``text`` toward the target."""
        return self.reward.predict(text, self._target(target_hrv))
