"""Voice adapters the writer drafts with: a LoRA adapter on SmolLM2 trained toward one profile.

A built-in profile's adapter ships in the package (``data/voice_adapters/<name>/``, built by
``scripts/build_profile_adapters.py``); a stored profile's adapter (``resonance profiles from-corpus
DIR --adapter``) lives in the data home, ``<home>/adapters/<tenant>/<name>/``. A folder holds an
``LMPolicy`` checkpoint (``weights/adapter.safetensors`` + ``config.json``) and ``voice.json`` (the
target it was trained toward, the base model, how it was trained; ``evolution.voice_adapters``).

:func:`find_adapter` says whether a profile has one; :func:`load_voice_backend` is the one place an
adapter folder becomes a writer backend (a ``PolicyBackend`` over a private copy of the local model
with the adapter applied, or with ``steerable`` a ``LocalBackend`` over the adapter merged into a
private copy, both sampled as HR-GRPO trained it); :func:`load_voice_model` merges it into a private
copy for the generation engine, where steering applies. Every failure to read one is a
:class:`VoiceAdapterError` naming the folder and the fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from resonance_os.core.errors import ValidationError
from resonance_os.core.home import classify_location, default_store, resonance_home

__all__ = [
    "BUILTIN_ADAPTERS",
    "VOICE_FILE",
    "VoiceAdapterError",
    "adapter_dir",
    "builtin_adapter_dir",
    "find_adapter",
    "load_voice_backend",
    "load_voice_model",
    "profile_key_of",
    "voice_stamp",
]

BUILTIN_ADAPTERS = Path(__file__).parent / "data" / "voice_adapters"
VOICE_FILE = "voice.json"
ADAPTERS_FOLDER = "adapters"
SAMPLING = {"temperature": 0.8, "top_p": 0.95}
"""How the adapters are sampled: HR-GRPO's training values (``evolution.hr_grpo.HR_GRPO_DEFAULTS``)."""
WITHOUT_IT = '(--no-adapter; in the API, "adapter": false)'
"""How to write without an adapter, named in every error."""


class VoiceAdapterError(ValidationError):
    """A voice adapter folder is missing, unreadable or does not fit the local model."""


def builtin_adapter_dir(name: str) -> Path:
    """Where the built-in profile ``name``'s shipped adapter lives (it may not exist)."""
    return BUILTIN_ADAPTERS / name


def adapter_dir(profile_key: str, store: str | os.PathLike[str] | None = None) -> Path:
    """The adapter folder of profile ``tenant/name``: the package's for ``builtin/...``, else
    ``<data home>/adapters/<tenant>/<name>`` of ``store`` (a data-home folder, or a SQLite file or
    ``sqlite:///`` URL beside which the folder lives, as the service passes its database; another
    database URL: ``$RESONANCE_HOME``; None: the profile commands' default store,
    ``core.home.default_store``)."""
    tenant, _, name = profile_key.rpartition("/")
    if not tenant or not name:
        raise ValidationError(f"profile {profile_key!r} is not 'tenant/name'; e.g. 'acme/newsletter'")
    if tenant == "builtin":
        return builtin_adapter_dir(name)
    home = resonance_home()
    location = classify_location(str(default_store() if store is None else store))
    if location.home is not None:
        home = location.home
    elif location.file is not None:
        home = location.file.parent
    elif location.url is not None and (file := _sqlite_file(location.url)) is not None:
        home = file.parent
    return home / ADAPTERS_FOLDER / tenant / name


def _sqlite_file(url: str) -> Path | None:
    """The file of a ``sqlite:///`` database URL (None for another database or an in-memory one)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


def find_adapter(profile_key: str | None, store: str | os.PathLike[str] | None = None) -> Path | None:
    """The adapter folder of ``profile_key`` when it has one (its ``voice.json`` exists), else None."""
    if not profile_key:
        return None
    folder = adapter_dir(profile_key, store)
    return folder if (folder / VOICE_FILE).is_file() else None


def voice_stamp(folder: str | os.PathLike[str]) -> int | None:
    """When the adapter in ``folder`` was saved (its ``voice.json``, written last; None if missing):
    a writer that loaded it reloads it once this changes."""
    try:
        return (Path(folder) / VOICE_FILE).stat().st_mtime_ns
    except OSError:
        return None


def profile_key_of(target_source: str | None) -> str | None:
    """The profile key in a target source from ``profiles.targets.resolve_target`` (``"profile
    acme/newsletter"``, ``"default profile builtin/professional"``); None for an explicit HRV."""
    if not target_source:
        return None
    for prefix in ("default profile ", "profile "):
        if target_source.startswith(prefix):
            key = target_source[len(prefix) :].strip()
            return key if "/" in key else None
    return None


def read_voice(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """``voice.json`` of an adapter folder, checked (target, base model)."""
    root = Path(folder)
    file = root / VOICE_FILE
    if not root.is_dir() or not file.is_file():
        raise VoiceAdapterError(
            f"no voice adapter in {root} ({VOICE_FILE} missing); train one with "
            f"`resonance profiles from-corpus DIR --adapter`, or write without it {WITHOUT_IT}"
        )
    try:
        info = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VoiceAdapterError(
            f"the voice adapter's {file} cannot be read ({exc}); train the adapter again, or write "
            f"without it {WITHOUT_IT}"
        ) from None
    if not isinstance(info, dict) or not isinstance(info.get("target_hrv"), list):
        raise VoiceAdapterError(
            f"{file} lacks the target it was trained toward (target_hrv); train the adapter again, or "
            f"write without it {WITHOUT_IT}"
        )
    return info


def _load_voice_policy(folder: str | os.PathLike[str], base: tuple[Any, Any] | None) -> Any:
    """The ``LMPolicy`` of the adapter in ``folder`` on a private copy of ``base`` (default the local
    SmolLM2), in eval mode; every failure is a :class:`VoiceAdapterError` or ``BackendError``."""
    import copy

    from resonance_os.generation.backends.base import BackendError
    from resonance_os.llm.errors import RLError  # the engine's user-error base (checkpoints, LLMError)
    from resonance_os.llm.policy import LMPolicy
    from resonance_os.quality.reference_lm import ReferenceModelError, default_cache_dir, load_model

    read_voice(folder)
    if base is None:
        try:
            base = load_model(str(default_cache_dir()))
        except ReferenceModelError as error:
            raise BackendError(f"the voice adapter needs the local model: {error}") from error
    tokenizer, model = base
    try:
        policy = LMPolicy.load(folder, copy.deepcopy(tokenizer), copy.deepcopy(model))
    except (RLError, OSError, ValueError, RuntimeError, KeyError) as exc:
        raise VoiceAdapterError(
            f"the voice adapter in {folder} cannot be loaded ({exc}); train it again, or write without "
            f"it {WITHOUT_IT}"
        ) from None
    return policy.eval()


def load_voice_backend(
    folder: str | os.PathLike[str], label: str, base: tuple[Any, Any] | None = None, steerable: bool = False
) -> Any:
    """A writer backend drafting with the adapter in ``folder`` on a private copy of ``base``
    (``(tokenizer, model)``, default the local SmolLM2; the original keeps serving the quality terms
    unadapted); its ``name`` is ``local+voice (<label>)``. Sampled as HR-GRPO trained it (``SAMPLING``,
    no penalties): by default a ``PolicyBackend`` over the adapter; ``steerable``: a
    ``LocalBackend`` over the adapter merged into the weights (:func:`load_voice_model`), on the
    generation engine, where steering directions apply. Raises :class:`VoiceAdapterError` for a
    missing or corrupt adapter, or one trained on another model."""
    name = f"local+voice ({label})"
    if steerable:
        from resonance_os.generation.backends.local import LocalBackend

        backend = LocalBackend(
            model=load_voice_model(folder, base),
            repetition_penalty=1.0,
            presence_penalty=0.0,
            no_repeat_ngram_size=0,
            **SAMPLING,
        )
        backend.name = name
        return backend
    from resonance_os.generation.backends.policy import PolicyBackend

    return PolicyBackend(_load_voice_policy(folder, base), name=name, **SAMPLING)


def load_voice_model(folder: str | os.PathLike[str], base: tuple[Any, Any] | None = None) -> tuple[Any, Any]:
    """``(tokenizer, model)``: a private copy of ``base`` (default the local SmolLM2) with the adapter in
    ``folder`` merged into its weights, a plain transformers model. ``LocalBackend(model=...)`` over
    it drafts with the voice on the generation engine, where steering directions apply (the next
    round of a voice adapter's candidates is drafted so: ``scripts/build_profile_adapters.py
    --draft-adapters``). Errors as :func:`load_voice_backend`."""
    policy = _load_voice_policy(folder, base)
    return policy.tokenizer, policy.merge()
