"""The trainers API jobs run, by name: a plain registry the server checks and the job worker looks up.

A job row names its trainer (``jobs.trainer``): a key of :data:`TRAINERS`, each
``trainer(params: dict, report: JobReport) -> TrainingResult`` (``api.jobs.report``). A server can run a
trainer from outside the package by naming it ``module:function`` in ``RESONANCE_TRAINERS`` (the job
machinery's tests do); jobs queued by an older build name the built-in trainers that way too, and
are mapped to their names here (:data:`LEGACY_SPECS`).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

from resonance_os.api.jobs import hr_ppo, voice_adapters
from resonance_os.api.jobs.hr_ppo import TrainingUnavailableError
from resonance_os.api.jobs.report import JobReport, TrainingResult
from resonance_os.api.persistence import feedback

Trainer = Callable[[dict, JobReport], TrainingResult]

TRAINERS: dict[str, Trainer] = {
    hr_ppo.PROFILE_POLICY_TRAINER: hr_ppo.train_profile_policy,
    feedback.REWARD_MODEL_TRAINER: feedback.fit_reward_model,
    voice_adapters.VOICE_ADAPTER_TRAINER: voice_adapters.train_voice_adapter_job,
}
LEGACY_SPECS = {
    "resonance_os.api.training:train_profile_policy": hr_ppo.PROFILE_POLICY_TRAINER,
    "resonance_os.api.feedback:fit_reward_model": feedback.REWARD_MODEL_TRAINER,
}
"""How jobs queued before the registry named the built-in trainers."""


def lookup(name: str) -> Trainer:
    """The trainer called ``name`` (or a ``module:function`` outside the package); a
    ``TrainingUnavailableError`` naming the trainers there are when there is none."""
    name = LEGACY_SPECS.get(name, name)
    if name in TRAINERS:
        return TRAINERS[name]
    if ":" in name:
        return _outside_trainer(name)
    raise TrainingUnavailableError(
        f"no trainer named {name!r}; this server has {', '.join(sorted(TRAINERS))}"
    )


def whole_updates(name: str, timesteps: int) -> int:
    """``timesteps`` rounded up to whole updates of trainer ``name`` (its ``update_steps``), which is
    what it trains; unchanged for a trainer that does not declare one."""
    step = getattr(lookup(name), "update_steps", None)
    return timesteps if not step else -(-timesteps // step) * step


def check_available(name: str) -> None:
    """Raise ``TrainingUnavailableError`` unless trainer ``name`` exists and the modules it
    ``requires`` are installed.

    The modules it requires are looked up (``importlib.util.find_spec``), not imported: the training
    stack (torch, the environment) takes seconds to import, and importing it in a server process held
    the GIL so long that other tenants' requests paused for up to 0.6 s on the first ``/v1/train``
    (``benchmarks/abuse.py``, fuzz). The job worker imports it, at the lowest CPU priority."""
    for required in getattr(lookup(name), "requires", ()):
        try:
            found = importlib.util.find_spec(required) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            raise TrainingUnavailableError(
                f"training is not available in this installation: {required} is not installed"
            )


def _outside_trainer(spec: str) -> Trainer:
    module_name, _, function_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise TrainingUnavailableError(f"trainer {spec!r} cannot be imported ({exc})") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise TrainingUnavailableError(f"trainer {spec!r} does not exist")
    return function
