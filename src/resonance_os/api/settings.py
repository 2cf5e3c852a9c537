"""Service configuration: explicit arguments, then ``RESONANCE_*`` environment variables, then defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from resonance_os.api.jobs.serving_gate import MAX_SHARE
from resonance_os.core.errors import ValidationError
from resonance_os.core.limits import MAX_TEXT_CHARS as MAX_TEXT_CHARS  # stated once, for the CLI too

MAX_BODY_BYTES = 1_048_576
MAX_PROMPT_CHARS = 4_000
MAX_TRAINING_YIELD_SHARE = 0.95
"""Training may wait for requests at most this share of its time: it is slowed, never stopped."""

INT_SETTINGS = (
    "max_running_jobs",
    "max_running_jobs_per_tenant",
    "max_queued_jobs_per_tenant",
    "max_queued_jobs",
    "checkpoint_every",
    "quota_rows",
    "quota_bytes",
)
"""Whole-number settings, each read from ``RESONANCE_<NAME>`` (upper case)."""

DEFAULT_TRAINERS = {"ppo": "hr_ppo"}
"""The trainer (a name in ``api.jobs.trainers``) each job kind runs."""
"""Job kind -> ``module:function`` run by the worker process; chosen by the server, never by a client."""


def env_float(name: str, default: float, *, allow_zero: bool = False) -> float:
    """``$name`` as a positive number (or zero with ``allow_zero``), ``default`` when unset;
    ``ValidationError`` naming the variable otherwise."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValidationError(f"${name}={raw!r} is not a number") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise ValidationError(f"${name}={raw!r} must be {'zero or ' if allow_zero else ''}positive")
    return value


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """``$name`` as a whole number of at least ``minimum``, ``default`` when unset; ``ValidationError``
    naming the variable otherwise."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"${name}={raw!r} is not a whole number") from None
    if value < minimum:
        raise ValidationError(
            f"${name}={raw!r} must be a {'positive ' if minimum == 1 else ''}whole number"
            + (f" of at least {minimum}" if minimum != 1 else "")
        )
    return value


def _parse_trainers(raw: str) -> dict[str, str]:
    """``"ppo=hr_ppo,other=package.module:function"`` -> ``{"ppo": "hr_ppo", ...}``: each job kind's
    trainer, a name in ``api.jobs.trainers.TRAINERS`` or a function outside the package."""
    trainers = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        kind, _, spec = part.partition("=")
        if not kind.strip() or not spec.strip():
            raise ValidationError(
                f"$RESONANCE_TRAINERS entry {part!r} must look like kind=trainer (a trainer's name, or "
                "module:function for one outside the package)"
            )
        trainers[kind.strip()] = spec.strip()
    return trainers


@dataclass
class Settings:
    """What ``create_app`` needs to know.

    rate_limit_per_s: sustained requests per second per API key (token bucket);
    rate_limit_burst: bucket size; auth_cache_s: how long a verified key is trusted without asking the
    database (a revoked key is refused within that time; 0 = ask every time); rate_limit_file: buckets
    shared through this file by every process that names it (``resonance serve --workers N`` sets one
    for its workers), else per process; trainers: job kind -> ``module:function`` the worker runs.
    Env: ``RESONANCE_DB``, ``RESONANCE_RATE_LIMIT``, ``RESONANCE_RATE_BURST``, ``RESONANCE_AUTH_CACHE_S``,
    ``RESONANCE_RATE_LIMIT_FILE``, ``RESONANCE_TRAINERS`` (``ppo=hr_ppo`` or ``ppo=module:function``), ``RESONANCE_SKIP_MIGRATE=1``.

    Training jobs (see :mod:`resonance_os.api.jobs.queue`): at most ``max_running_jobs`` run at once
    (``RESONANCE_MAX_RUNNING_JOBS``), at most ``max_running_jobs_per_tenant`` of one tenant's
    (``RESONANCE_MAX_RUNNING_JOBS_PER_TENANT``); the rest wait, at most ``max_queued_jobs_per_tenant`` per
    tenant (``RESONANCE_MAX_QUEUED_JOBS_PER_TENANT``) and ``max_queued_jobs`` in all
    (``RESONANCE_MAX_QUEUED_JOBS``), beyond which ``/v1/train`` answers 429; a running job saves a
    checkpoint every ``checkpoint_every`` PPO updates (``RESONANCE_CHECKPOINT_EVERY``).
    Storage (see :mod:`resonance_os.api.persistence.quotas`): each tenant keeps at most ``quota_rows`` stored rows
    (items, feedback, profile versions; ``RESONANCE_QUOTA_ROWS``) holding at most ``quota_bytes`` bytes of
    text (``RESONANCE_QUOTA_BYTES``); past either, writes answer 507.
    Generation (see :mod:`resonance_os.api.text.turns`): each request has ``generate_budget_s`` seconds from
    its arrival (``RESONANCE_GENERATE_BUDGET_S``; then 503); a tenant may have ``generate_per_tenant``
    generations in progress (``RESONANCE_GENERATE_PER_TENANT``; more: 429), each text worker
    ``generate_total`` (``RESONANCE_GENERATE_TOTAL``; more: 503). Writing, refining, scoring and
    measuring long texts run in text worker processes (``RESONANCE_TEXT_WORKERS``; 0: in
    the server process), see :mod:`resonance_os.api.text.workers`.
    Failed authentication (see :mod:`resonance_os.api.limits.per_address`): each client address may fail
    ``failed_auth_per_s`` times a second (``RESONANCE_FAILED_AUTH_RATE``) after a burst of
    ``failed_auth_burst`` (``RESONANCE_FAILED_AUTH_BURST``); then 429 before any key is hashed or looked up.
    A 429 of either limit is answered only after the wait it names, at most ``throttle_max_s`` seconds
    (``RESONANCE_THROTTLE_MAX_S``; 0: at once), see :mod:`resonance_os.api.http.deps`.
    Stalled connections: a request body must arrive within ``body_timeout_s`` (``RESONANCE_BODY_TIMEOUT_S``;
    then 408); request headers within ``$RESONANCE_HEADER_TIMEOUT_S`` (:mod:`resonance_os.api.http.protocol`).
    Training yields to requests (see :mod:`resonance_os.api.jobs.serving_gate`): while the server has
    requests in flight its jobs' training waits, at most ``training_yield_share`` of their wall time
    (``RESONANCE_TRAINING_YIELD_SHARE``, from 0 to 0.95; 0: training never waits, nice 19 alone).
    ``GET /metrics`` shows training jobs only to ``Authorization: Bearer <metrics_token>``
    (``RESONANCE_METRICS_TOKEN``; unset: to nobody).
    """

    db_url: str | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    rate_limit_per_s: float = 50.0
    rate_limit_burst: float = 100.0
    auth_cache_s: float = 1.0
    rate_limit_file: str | None = None
    trainers: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_TRAINERS))
    migrate: bool = True
    launch_workers: bool = True
    max_running_jobs: int = 2
    max_running_jobs_per_tenant: int = 1
    max_queued_jobs_per_tenant: int = 4
    max_queued_jobs: int = 64
    checkpoint_every: int = 1
    quota_rows: int = 100_000
    quota_bytes: int = 500_000_000
    generate_budget_s: float = 300.0
    generate_per_tenant: int = 2
    generate_total: int = 16
    text_workers: int = 2
    failed_auth_per_s: float = 1.0
    failed_auth_burst: float = 20.0
    throttle_max_s: float = 1.0
    body_timeout_s: float = 30.0
    metrics_token: str | None = None
    training_yield_share: float = MAX_SHARE

    def __post_init__(self) -> None:
        if not 0.0 <= self.training_yield_share <= MAX_TRAINING_YIELD_SHARE:
            raise ValidationError(
                f"training_yield_share ($RESONANCE_TRAINING_YIELD_SHARE) must be from 0 (training never "
                f"waits for requests) to {MAX_TRAINING_YIELD_SHARE}, got {self.training_yield_share!r}"
            )

    @classmethod
    def from_env(cls, **overrides) -> Settings:
        values = {
            "db_url": os.environ.get("RESONANCE_DB") or None,
            "rate_limit_per_s": env_float("RESONANCE_RATE_LIMIT", cls.rate_limit_per_s),
            "rate_limit_burst": env_float("RESONANCE_RATE_BURST", cls.rate_limit_burst),
            "auth_cache_s": env_float("RESONANCE_AUTH_CACHE_S", cls.auth_cache_s, allow_zero=True),
            "rate_limit_file": os.environ.get("RESONANCE_RATE_LIMIT_FILE") or None,
            "migrate": os.environ.get("RESONANCE_SKIP_MIGRATE") != "1",
            "generate_budget_s": env_float("RESONANCE_GENERATE_BUDGET_S", cls.generate_budget_s),
            "generate_per_tenant": env_int("RESONANCE_GENERATE_PER_TENANT", cls.generate_per_tenant),
            "generate_total": env_int("RESONANCE_GENERATE_TOTAL", cls.generate_total),
            "text_workers": env_int("RESONANCE_TEXT_WORKERS", cls.text_workers, minimum=0),
            "failed_auth_per_s": env_float("RESONANCE_FAILED_AUTH_RATE", cls.failed_auth_per_s),
            "failed_auth_burst": env_float("RESONANCE_FAILED_AUTH_BURST", cls.failed_auth_burst),
            "throttle_max_s": env_float("RESONANCE_THROTTLE_MAX_S", cls.throttle_max_s, allow_zero=True),
            "body_timeout_s": env_float("RESONANCE_BODY_TIMEOUT_S", cls.body_timeout_s),
            "metrics_token": os.environ.get("RESONANCE_METRICS_TOKEN") or None,
            "training_yield_share": env_float(
                "RESONANCE_TRAINING_YIELD_SHARE", cls.training_yield_share, allow_zero=True
            ),
            **{name: env_int(f"RESONANCE_{name.upper()}", getattr(cls, name)) for name in INT_SETTINGS},
        }
        if os.environ.get("RESONANCE_TRAINERS"):
            values["trainers"] = _parse_trainers(os.environ["RESONANCE_TRAINERS"])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
