"""What the service does, without HTTP: measure, score, generate, keep profiles and items per tenant.

Routes translate requests into these calls; every call takes the caller's :class:`TenantContext` so
nothing here can reach another tenant's data. Components (extractor, similarity, profile manager,
writer) are created once per process on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any

import sqlalchemy as sa

from resonance_os.api.jobs.queue import JobLimits
from resonance_os.api.persistence.db import Database, Item, Job
from resonance_os.api.persistence.quotas import (
    StorageQuota,
    charge,
    check_room,
    release,
    reserved,
    text_bytes,
)
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.text.engine import as_dict
from resonance_os.api.text.rewards import check_reward
from resonance_os.api.text.workers import TextWorkers
from resonance_os.core.errors import AlreadyExistsError, NotFoundError, ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import HRVProfile
from resonance_os.profiles.sample import sample_warning
from resonance_os.profiles.targets import resolve_target
from resonance_os.profiles.templates import DEFAULT_PROFILE_NAME
from resonance_os.quality.reward import DEFAULT_REWARD


def profile_out(profile: HRVProfile) -> dict[str, Any]:
    return {
        "name": profile.name,
        "hrv": profile.vector.to_dict(),
        "description": profile.description,
        "version": profile.version,
        "created_at": getattr(profile, "created_at", None),
        "updated_at": getattr(profile, "updated_at", None),
    }


def _voice_of(article: Any) -> str | None:
    """The profile whose voice adapter drafted ``article`` (its ``voice`` trace entry), else None."""
    from resonance_os.generation.voice_adapter import profile_key_of

    if any(step.get("layer") == "voice" for step in article.trace):
        return profile_key_of(article.target_source)
    return None


class ResonanceService:
    """The service's domain calls over one :class:`Database` (profiles live in the same database);
    what a tenant stores is counted against ``quota`` (:mod:`resonance_os.api.persistence.quotas`). CPU-bound text
    work (writing, refining, scoring, measuring long texts) runs through ``workers``
    (:class:`~resonance_os.api.text.workers.TextWorkers`: tenants take turns; in worker processes when
    it has any, else in the calling thread)."""

    def __init__(
        self, db: Database, workers: TextWorkers | None = None, quota: StorageQuota | None = None
    ) -> None:
        self.db = db
        self.quota = quota or StorageQuota()
        self.writer_lock = threading.Lock()
        self.workers = workers or TextWorkers()
        self.engine = self.workers.engine

    # -- components of this process (the text workers build their own) ----------------------------

    @property
    def extractor(self):
        return self.engine.extractor

    @property
    def similarity(self):
        return self.engine.similarity

    @property
    def reward(self):
        return self.engine.reward

    @property
    def writer(self):
        return self.engine.writer

    @cached_property
    def profiles(self):
        from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

        return HRVProfileManager(self.db.url)

    def close(self) -> None:
        self.workers.close()
        if "profiles" in self.__dict__:
            self.profiles.close()

    # -- measuring ---------------------------------------------------------------------------------

    def analyze(
        self, text: str, evidence: bool = True, *, ctx: TenantContext | None = None
    ) -> dict[str, Any]:
        """The HRV of ``text`` and, with ``evidence``, what was counted for each dimension; with
        ``ctx``, measured in that tenant's turn at the text workers (for long texts), else here."""
        if ctx is None:
            return self.engine.analyze(text, evidence)
        return self.workers.run(ctx.tenant_id, "analyze", text, evidence, counted=False)

    def resolve_target(
        self, ctx: TenantContext, profile: str | None, target_hrv: list[float] | None
    ) -> tuple[list[float], str | None]:
        """The target HRV and the profile name stored with items and jobs, resolved within the caller's
        tenant by :func:`resonance_os.profiles.targets.resolve_target` (an explicit vector; else the
        tenant's profile, then a built-in template of that name; neither given: the default profile)."""
        vector, name, _ = self.resolve_target_source(ctx, profile, target_hrv)
        return vector, name

    def resolve_target_source(
        self, ctx: TenantContext, profile: str | None, target_hrv: list[float] | None
    ) -> tuple[list[float], str | None, str]:
        """:meth:`resolve_target` and where the target came from (``resolve_target``'s source:
        ``"profile acme/newsletter"``, ``"profile builtin/creative"``, ``"target_hrv"``...)."""
        vector, source = resolve_target(target_hrv, profile, self.profiles, tenant=ctx.tenant)
        if target_hrv is not None:
            return vector, None, source
        return vector, profile if profile is not None else DEFAULT_PROFILE_NAME, source

    def voice_adapter(self, target_source: str) -> str | None:
        """The folder of the voice adapter of the profile a target came from, when it has one: a
        built-in profile's shipped adapter, or a tenant's (``<data home>/adapters/<tenant>/<name>``,
        beside this service's SQLite database, else in ``$RESONANCE_HOME``; trained with
        ``POST /v1/profiles/{name}/adapter`` or ``resonance profiles from-corpus --adapter``)."""
        from resonance_os.generation.voice_adapter import find_adapter, profile_key_of

        folder = find_adapter(profile_key_of(target_source), self.db.url)
        return None if folder is None else str(folder)

    def score(
        self,
        ctx: TenantContext,
        text: str,
        profile: str | None,
        target_hrv: list[float] | None,
        prompt: str | None = None,
        reward: str | None = None,
    ) -> dict[str, Any]:
        """The writing reward ``reward`` (``"fast"``, the default, or ``"lm"``: :func:`check_reward`)
        of ``text`` toward the target with its terms (``quality.reward``), per-dimension gaps (target -
        measured), and the tenant's latest reward model's score when one has been trained."""
        from resonance_os.api.persistence import feedback

        reward = check_reward(reward)
        target, _ = self.resolve_target(ctx, profile, target_hrv)
        scored = self.workers.run(ctx.tenant_id, "score", text, target, prompt, reward, counted=False)
        measured = scored.hrv
        model = feedback.latest_model(self.db, ctx.tenant_id, self.extractor)
        return {
            **scored.to_dict(),  # hrv by dimension, the reward's terms, meta_text
            "target_hrv": as_dict(target),
            "gaps": {d: t - m for d, t, m in zip(HRV_DIMENSIONS, target, measured)},
            "reward_model_score": None
            if model is None
            else model.predict(text, target, prompt=prompt, hrv=measured),
        }

    # -- items -------------------------------------------------------------------------------------

    def store_item(self, ctx: TenantContext, **fields: Any) -> Item:
        """Store an item (``StorageQuotaError`` past the tenant's quota)."""
        with self.db.write() as session:
            charge(
                session, ctx.tenant_id, self.quota, 1, text_bytes(fields.get("text"), fields.get("prompt"))
            )
            item = Item(tenant_id=ctx.tenant_id, **fields)
            session.add(item)
            session.flush()
            return item

    def get_item(self, ctx: TenantContext, item_id: str) -> Item:
        with self.db.read() as session:
            item = session.scalar(sa.select(Item).where(Item.id == item_id, Item.tenant_id == ctx.tenant_id))
        if item is None:
            raise NotFoundError(f"no item {item_id!r} for this tenant; use an id returned by /v1/generate")
        return item

    def measure_submitted(self, ctx: TenantContext, text: str, target_hrv: list[float] | None) -> Item:
        """A text the tenant wrote elsewhere, measured into an item that is not stored yet (store it
        with the row that refers to it, in one transaction). Measured in the tenant's turn at the text
        workers, and only if an item holding it still fits the tenant's quota (else 507 at once)."""
        check_room(self.db, ctx.tenant_id, self.quota, 1, text_bytes(text))
        hrv, resonance = self.workers.run(ctx.tenant_id, "measure", text, target_hrv, counted=False)
        return Item(
            tenant_id=ctx.tenant_id,
            source="submitted",
            prompt=None,
            text=text,
            hrv=hrv,
            target_hrv=target_hrv,
            resonance=resonance,
        )

    # -- generation --------------------------------------------------------------------------------

    def generate(
        self,
        ctx: TenantContext,
        prompt: str,
        *,
        profile: str | None = None,
        target_hrv: list[float] | None = None,
        paragraphs: int = 3,
        seed: int | None = None,
        policy: str | None = None,
        adapter: bool = True,
        reward: str | None = None,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Write an article toward the target, measure it, store it as an item, return both.

        The writer picks drafts, guards edits and scores the article with writing reward ``reward``
        (``"fast"``, the default, or ``"lm"``: :func:`check_reward`); with a ``policy``, the reward its
        run trained on, and a ``reward`` naming another is refused (422).

        Without a ``policy``, the writer drafts with the target profile's voice adapter when it has
        one (:meth:`voice_adapter`) and the writer drafts with the local model; ``adapter=False``:
        never. The answer's ``voice_adapter`` names the profile whose adapter drafted (else None) and
        ``backend`` says what drafted. A corrupt adapter is a ``VoiceAdapterError`` (422) naming it.

        The writer is shared fairly (:class:`~resonance_os.api.text.turns.WriterTurns`: tenants take turns
        paragraph by paragraph); past ``deadline`` (a ``time.monotonic()`` instant) the call stops with
        ``BusyError``. ``progress(k, n)`` is called when paragraph ``k`` of ``n`` starts (from the
        writer's ``between_paragraphs`` hook, with or without a trained policy); an exception it raises
        stops the writing."""
        report = progress or (lambda k, n: None)
        started = [1]

        def next_paragraph() -> None:
            started[0] += 1
            report(started[0], paragraphs)

        if policy is not None:
            job = self._policy_job(ctx, policy, reward)
            if profile is None and target_hrv is None:  # steer toward what the policy was trained for
                target, profile_name = list(job.params["target_hrv"]), job.params.get("profile")
            else:
                target, profile_name = self.resolve_target(ctx, profile, target_hrv)
            with self.workers.turn(ctx.tenant_id, deadline):
                report(1, paragraphs)
                article = self._write_with_policy(ctx, job, prompt, target, paragraphs, seed, next_paragraph)
        else:
            reward = check_reward(reward)
            target, profile_name, source = self.resolve_target_source(ctx, profile, target_hrv)
            voice = self.voice_adapter(source) if adapter else None
            report(1, paragraphs)
            article = self._write(
                ctx,
                profile_name,
                prompt,
                target,
                paragraphs,
                seed,
                deadline=deadline,
                on_paragraph=next_paragraph,
                target_source=source,
                adapter=voice or False,
                reward=reward,
            )
        return self._stored_article(ctx, prompt, article, target, profile_name, policy)

    def _stored_article(
        self,
        ctx: TenantContext,
        prompt: str,
        article: Any,
        target: list[float],
        profile_name: str | None,
        policy: str | None,
    ) -> dict[str, Any]:
        """Store the written ``article`` as the tenant's item; the answer of :meth:`generate`."""
        measured = [float(v) for v in article.measured_hrv["article"]]
        resonance = float(article.resonance)
        item = self.store_item(
            ctx,
            source="generated",
            prompt=prompt,
            text=article.text,
            hrv=measured,
            target_hrv=target,
            profile_name=profile_name,
            resonance=resonance,
            policy=policy,
        )
        return {
            "id": item.id,
            "article": article.text,
            "paragraphs": list(article.paragraphs),
            "hrv": as_dict(measured),
            "target_hrv": as_dict(target),
            "resonance": resonance,
            "reward": article.score.to_dict(),
            "policy": policy,
            "backend": article.backend,
            "voice_adapter": _voice_of(article),
        }

    def _policy_job(self, ctx: TenantContext, policy: str, reward: str | None) -> Job:
        """The tenant's finished training job ``policy``, which writes with the reward it trained on:
        a ``reward`` naming another is refused, as is ``lm`` on a server without SmolLM2."""
        from resonance_os.api.jobs.policies import policy_job

        job = policy_job(self.db, ctx.tenant_id, policy)
        trained_on = job.params.get("reward", DEFAULT_REWARD)
        if reward is not None and reward != trained_on:
            raise ValidationError(
                f"policy {policy!r} was trained on reward {trained_on!r} and writes with it; "
                f"leave reward out or ask for {trained_on!r}"
            )
        check_reward(trained_on)
        return job

    def _write_with_policy(
        self,
        ctx: TenantContext,
        job: Job,
        prompt: str,
        target: list[float],
        paragraphs: int,
        seed: int | None,
        next_paragraph: Callable[[], None],
    ):
        """An article written with the trained policy of ``job`` (in the caller's turn), its reward
        blended with the reward model version it trained with."""
        from resonance_os.api.jobs.hr_ppo import generate_with_policy
        from resonance_os.api.jobs.policies import policy_folder

        version = job.params.get("reward_model_version")

        def reward_model():
            if version is None:
                return None
            from resonance_os.api.persistence.feedback import load_version

            return load_version(self.db, ctx.tenant_id, version, self.extractor)

        return generate_with_policy(
            self, policy_folder(job), prompt, target, paragraphs, seed, reward_model, next_paragraph
        )

    def _write(self, ctx: TenantContext, profile_name: str | None, *args: Any, **kwargs: Any):
        """The engine's ``write(*args, **kwargs)`` in the tenant's turns at the text workers; a damaged
        voice adapter is a ``VoiceAdapterError`` naming the profile and the fix, not server paths."""
        from resonance_os.generation.voice_adapter import VoiceAdapterError

        try:
            return self.workers.run(ctx.tenant_id, "write", *args, **kwargs)
        except VoiceAdapterError:
            raise VoiceAdapterError(
                f"the voice adapter of profile {profile_name!r} is damaged or was trained on another "
                'model; train it again, or write without it ("adapter": false)'
            ) from None

    def refine(
        self,
        ctx: TenantContext,
        text: str,
        *,
        profile: str | None = None,
        target_hrv: list[float] | None = None,
        seed: int = 0,
        reward: str | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """Edit ``text`` toward the target as ``resonance refine`` does
        (:func:`~resonance_os.generation.text_refine.refine_text`, holding a writer turn, passed on
        between paragraphs); the edited text, the kept edits, a word diff and the score before and after.
        Edits are guarded and the text scored by writing reward ``reward`` (``"fast"``, the default, or
        ``"lm"``: :func:`check_reward`)."""
        from resonance_os.generation.text_refine import word_diff

        reward = check_reward(reward)
        target, _ = self.resolve_target(ctx, profile, target_hrv)
        refined = self.workers.run(
            ctx.tenant_id, "refine", text, target, seed, deadline=deadline, reward=reward
        )
        return {
            "text": refined.text,
            "original_text": refined.original_text,
            "edits": refined.edits,
            "diff": word_diff(refined.original_text, refined.text),
            "target_hrv": as_dict(target),
            "before": refined.before.to_dict(),
            "after": refined.after.to_dict(),
            "suggestions": [suggestion.to_dict() for suggestion in refined.suggestions],
        }

    # -- training --------------------------------------------------------------------------------

    def start_training(
        self,
        ctx: TenantContext,
        trainer: str,
        *,
        profile: str | None,
        target_hrv: list[float] | None,
        timesteps: int,
        seed: int,
        use_reward_model: bool,
        limits: JobLimits | None = None,
        reward: str = DEFAULT_REWARD,
    ) -> Job:
        """Queue a PPO job toward the target on the ``reward`` writing reward (``"fast"`` or ``"lm"``), with
        the tenant's newest reward model unless told not to; ``JobQueueFullError`` (429) past ``limits``.
        ``lm`` on a server without SmolLM2 is refused here (:func:`check_reward`, 422), not in the job.
        A :class:`~resonance_os.api.jobs.queue.JobRunner` starts it."""
        from resonance_os.api.jobs import queue, trainers
        from resonance_os.api.persistence import feedback

        target, profile_name = self.resolve_target(ctx, profile, target_hrv)
        trainers.check_available(trainer)
        reward = check_reward(reward)
        reward_model = feedback.latest_version(self.db, ctx.tenant_id) if use_reward_model else None
        params = {
            "tenant": ctx.tenant,
            "profile": profile_name,
            "target_hrv": target,
            "timesteps": timesteps,
            "seed": seed,
            "reward_model_version": None if reward_model is None else reward_model.version,
            "reward": reward,
        }
        return queue.submit(self.db, ctx.tenant_id, "ppo", trainer, params, limits)

    def start_reward_model_training(
        self, ctx: TenantContext, trainer: str, *, holdout_fraction: float, seed: int, limits: JobLimits
    ) -> Job:
        """Queue a reward-model fit on all of the tenant's feedback (``feedback.fit_reward_model`` in a
        job worker). Refused before it queues: 422 with too little feedback, 507 when the tenant's
        storage has no room for another version, 429 past ``limits``."""
        from resonance_os.api.jobs import queue
        from resonance_os.api.persistence import feedback

        feedback.check_trainable(self.db, ctx.tenant_id)
        check_room(self.db, ctx.tenant_id, self.quota, 1, 0)
        params = {"holdout_fraction": holdout_fraction, "seed": seed}
        return queue.submit(self.db, ctx.tenant_id, feedback.REWARD_MODEL_KIND, trainer, params, limits)

    def start_voice_adapter_training(
        self,
        ctx: TenantContext,
        name: str,
        text: str,
        trainer: str,
        *,
        sft_steps: int,
        grpo_steps: int,
        seed: int,
        limits: JobLimits,
    ) -> Job:
        """Queue the training of the voice adapter of the tenant's profile ``name`` on ``text``'s
        paragraphs (``api.jobs.voice_adapters``); the paragraphs are stored as an item (source
        ``corpus``, counted in the quota) the job reads. Refused before it queues: 404 for an unknown
        profile, 422 without a paragraph of 25 words, 507 without room for the item, 429 past
        ``limits`` (the item is then removed again)."""
        from resonance_os.api.jobs import queue
        from resonance_os.api.jobs.voice_adapters import CORPUS_SOURCE, VOICE_ADAPTER_KIND
        from resonance_os.evolution.voice_adapters import split_paragraphs, writer_candidates

        profile = self.profiles.get_profile(ctx.tenant, name)
        writer_candidates(split_paragraphs(text))
        corpus = self.measure_submitted(ctx, text, profile.vector.to_list())
        corpus.source, corpus.profile_name = CORPUS_SOURCE, name
        with self.db.write() as session:
            charge(session, ctx.tenant_id, self.quota, 1, text_bytes(text))
            session.add(corpus)
            session.flush()
            corpus_id = corpus.id
        params = {
            "tenant": ctx.tenant,
            "profile": name,
            "target_hrv": profile.vector.to_list(),
            "corpus_item": corpus_id,
            "sft_steps": sft_steps,
            "grpo_steps": grpo_steps,
            "seed": seed,
        }
        try:
            return queue.submit(self.db, ctx.tenant_id, VOICE_ADAPTER_KIND, trainer, params, limits)
        except BaseException:
            with self.db.write() as session:
                session.execute(sa.delete(Item).where(Item.id == corpus_id))
            release(self.db, ctx.tenant_id, 1, text_bytes(text))
            raise

    # -- profiles ----------------------------------------------------------------------------------

    def list_profiles(self, ctx: TenantContext) -> list[dict[str, Any]]:
        return [profile_out(p) for p in self.profiles.get_profiles(ctx.tenant)]

    def get_profile(self, ctx: TenantContext, name: str) -> dict[str, Any]:
        return profile_out(self.profiles.get_profile(ctx.tenant, name))

    def save_profile(
        self,
        ctx: TenantContext,
        name: str,
        hrv: list[float],
        description: str | None,
        *,
        must_exist: bool | None,
    ) -> dict[str, Any]:
        """Create (``must_exist=False``; 409 if it exists), create or add a version (None: an explicit
        overwrite) or update (``must_exist=True``; 404 if not). Each save stores a version, counted
        against the storage quota."""
        try:
            with reserved(self.db, ctx.tenant_id, self.quota, 1, text_bytes(description)):
                saved = self.profiles.save_profile(ctx.tenant, name, hrv, description, must_exist=must_exist)
        except AlreadyExistsError:
            raise self._exists(ctx, name) from None
        return profile_out(saved)

    def _exists(self, ctx: TenantContext, name: str) -> AlreadyExistsError:
        """The 409 for a create that would replace ``name``: which version exists and how to overwrite."""
        existing = self.profiles.get_profile(ctx.tenant, name)
        return AlreadyExistsError(
            f"a profile named {name!r} already exists (version {existing.version}, saved "
            f"{existing.updated_at:%Y-%m-%d %H:%M} UTC). To replace it, send the request again with "
            f"?overwrite=true: it is saved as version {existing.version + 1} and the earlier versions stay "
            f"in GET /v1/profiles/{name}/history. Or choose another name."
        )

    def delete_profile(self, ctx: TenantContext, name: str) -> None:
        """Delete the profile with its history (their rows and bytes leave the tenant's storage usage)."""
        from resonance_os.api.jobs.voice_adapters import remove_adapter

        versions = self.profiles.profile_history(ctx.tenant, name)
        self.profiles.delete_profile(ctx.tenant, name)
        release(self.db, ctx.tenant_id, len(versions), text_bytes(*(v.description for v in versions)))
        remove_adapter(self.db, ctx.tenant_id, ctx.tenant, name)

    def profile_history(self, ctx: TenantContext, name: str) -> list[dict[str, Any]]:
        return [profile_out(p) for p in self.profiles.profile_history(ctx.tenant, name)]

    def profile_from_text(
        self, ctx: TenantContext, name: str, text: str, description: str | None, *, overwrite: bool = False
    ) -> dict[str, Any]:
        """Measure ``text`` and save it as ``name`` (409 if it exists, unless ``overwrite``); the answer's
        ``warnings`` say when the sample is too short to measure a voice (:mod:`resonance_os.profiles.sample`)."""
        must_exist = None if overwrite else False
        try:
            with reserved(self.db, ctx.tenant_id, self.quota, 1, text_bytes(description)):
                saved = self.profiles.profile_from_text(
                    ctx.tenant, name, text, description, must_exist=must_exist
                )
        except AlreadyExistsError:
            raise self._exists(ctx, name) from None
        warning = sample_warning(text)
        return {**profile_out(saved), "warnings": [warning] if warning else []}
