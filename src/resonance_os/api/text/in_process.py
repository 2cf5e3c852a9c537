"""The original ResonanceOS's in-process call: ``hr_generate(SimpleRequest(prompt=...))``, no server.

>>> from resonance_os.api.hr_server import SimpleRequest, hr_generate
>>> response = hr_generate(SimpleRequest(prompt="Benefits of machine learning"))  # doctest: +SKIP
>>> response.article, response.hrv_feedback                                        # doctest: +SKIP

The target is resolved once by :func:`resonance_os.profiles.targets.resolve_target` from the profile
store (``$RESONANCE_STORE`` or the original's ``$HRV_TENANT_DIR``, else ``~/.resonance_os``):
``profile_name`` is looked up in ``tenant`` (default ``"default``", the folder the original's profiles
lived in), then among the built-in templates; without ``profile_name`` the default profile is used.
One :class:`HumanResonantWriter` per process and writing reward (``reward``: ``"fast"``, the default, or
``"lm"``, as everywhere: :func:`resonance_os.quality.reward.make_reward`) writes every article (backend:
``$RESONANCE_BACKEND``).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation.human_resonant_writer import Article, HumanResonantWriter
from resonance_os.profiles.targets import resolve_target
from resonance_os.quality.reward import DEFAULT_REWARD, REWARDS, reward_kind

DEFAULT_TENANT = "default"
"""Tenant searched for ``profile_name`` when the request names none (the original's ``default/`` folder)."""

_writing = threading.Lock()


@dataclass
class SimpleRequest:
    """What to write: ``prompt``, and optionally the ``tenant`` and ``profile_name`` to write toward and
    the writing ``reward`` that judges the drafts (``"fast"`` or ``"lm"``)."""

    prompt: str
    tenant: str | None = None
    profile_name: str | None = None
    reward: str = DEFAULT_REWARD


@dataclass
class SimpleResponse:
    """The article (an :class:`Article`, which is also its text as a str) and its measured HRV.

    ``hrv_feedback`` is 8 floats in ``HRV_DIMENSIONS`` order, as the original returned; ``hrv`` is the
    same by name; ``target_source`` says which profile the article was written toward.
    """

    article: Article
    hrv_feedback: list[float]
    hrv: dict[str, float]
    target_source: str


@lru_cache(maxsize=len(REWARDS))
def _writer(reward: str) -> HumanResonantWriter:
    return HumanResonantWriter(reward=reward)


def hr_generate(req: SimpleRequest, store: str | os.PathLike[str] | None = None) -> SimpleResponse:
    """Write an article for ``req`` and measure it (``store``: where profiles are read, see module doc).

    Raises ``ValidationError`` for an empty prompt, a bad name or an unknown ``reward`` and
    ``ProfileNotFoundError`` (also a ``FileNotFoundError``) when ``profile_name`` is neither the tenant's
    profile nor a built-in one.
    """
    reward = reward_kind(req.reward)
    if req.profile_name is None:
        target, source = resolve_target()
    else:
        tenant = req.tenant if req.tenant is not None else DEFAULT_TENANT
        target, source = resolve_target(profile=req.profile_name, tenant=tenant, store=store)
    with _writing:
        article = _writer(reward).generate(req.prompt, target, target_source=source)
    measured = [float(v) for v in article.measured_hrv["article"]]
    return SimpleResponse(article, measured, dict(zip(HRV_DIMENSIONS, measured)), source)
