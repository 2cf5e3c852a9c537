"""The steered writing task: HR-PPO's 8 action numbers steer the language model sentence by sentence.

The edit-operator env (``hr_rl_trainer.HRWritingEnv``) can move style only as far as rule-based edits
reach; here the action acts on the model itself. An episode writes one paragraph about a topic toward
a target HRV, one sentence per step. The action is 8 strengths in [-1, 1], one per HRV dimension; the
strengths of the dimensions that have a shipped steering direction (``generation.steering_directions``:
valence, intensity, assertiveness, storytelling for SmolLM2) are added to the model's residual stream
while it writes that sentence (contrastive activation addition); the others have no direction and are
ignored (``info["steer"]`` lists what was applied). The observation is the signed gap
``target - measured`` of the paragraph so far (before the first sentence, of ``MODEL_TYPICAL_HRV``:
what the model writes unsteered). The reward is the change of the paragraph's writing reward
(``quality.reward``; 0 for no text), so an episode's return is the finished paragraph's score. The
finished paragraph is what the writer keeps of the reply (``llm_writing.clean_reply``: a last
sentence cut at ``MAX_SENTENCE_TOKENS`` is dropped, as are meta-text and repeats), the text a reader
gets and the final step's ``info["text"]``.

``SteeredWritingVectorEnv(num_envs)`` runs ``num_envs`` episodes in one batch: every step is one
batched decode (``SentenceDecoder``) whose keys and values persist across the episode's sentences,
each row with its own strengths, so a sentence costs its own tokens only.

    env = SteeredWritingVectorEnv(num_envs=32, split="train", seed=0)
    model = train_hr_ppo(env, timesteps=5000)          # evolution.hr_rl_trainer
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from transformers import DynamicCache, LogitsProcessorList
from transformers.generation.logits_process import (
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
)

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIM, HRV_DIMENSIONS, TYPICAL_HRV
from resonance_os.core.text import split_sentences
from resonance_os.evolution.draft_pool import load_drafts
from resonance_os.generation.backends.local import LocalBackend
from resonance_os.generation.llm_writing import MODEL_TYPICAL_HRV, clean_reply
from resonance_os.generation.steering_directions import (
    SteeringDirections,
    shipped_directions,
    writing_messages,
)
from resonance_os.llm.causal_lm import cache_argument, eos_token_ids
from resonance_os.profiles.targets import resolve_target_item
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.quality.reward import (
    REWARD_TERMS,
    WritingReward,
    WritingScore,
    make_reward,
    quality_factor,
)

SENTENCES_PER_EPISODE = 4
"""Steps (sentences) per episode: a paragraph of four sentences."""
MAX_SENTENCE_TOKENS = 40
"""A sentence longer than this is cut there; the next step continues it."""
MAX_STRENGTH = 0.5
"""The strength an action of +-1 asks for: within +-0.5 the shipped directions keep fluency within 10%
of unsteered (``benchmarks/bench_steer.py``); at +-1 storytelling turns to word salad."""
TRAIN_TARGETS = 64
"""Random training targets, each dimension uniform between real prose's 10th and 90th percentile."""
NUCLEUS_CANDIDATES = 256
"""Tokens the nucleus is drawn from (sorting 49k logits a token cost more than the rest of sampling;
at temperature 0.7 the 256 likeliest hold the nucleus)."""
SENTENCE_END = (".", "!", "?", '."', '!"', '?"', ".'", ".)")
OBJECTIVES = ("writing", "resonance", "style")
"""What an episode's return scores: ``"writing"`` the writing reward (resonance x quality);
``"resonance"`` resonance with fluency, topic and repetition held (the writing reward without its
coherence term, whose spread on model prose outweighs the style term's: PPO trained on the writing
reward learned to raise the quality factor and left resonance where it was); ``"style"`` the
resonance term alone (fluency and topic are then only watched, not rewarded)."""


def training_targets(count: int = TRAIN_TARGETS, seed: int = 0) -> list[list[float]]:
    """``count`` seeded targets inside real prose's range (``TYPICAL_HRV``'s 10th-90th percentiles)."""
    rng = np.random.default_rng(seed)
    low = np.array([TYPICAL_HRV[d][0] for d in HRV_DIMENSIONS])
    high = np.array([TYPICAL_HRV[d][2] for d in HRV_DIMENSIONS])
    return [list(map(float, low + (high - low) * rng.random(HRV_DIM))) for _ in range(count)]


def heldout_targets() -> list[list[float]]:
    """Targets no training episode sees: the built-in profiles and the three writers' measured voices."""
    from resonance_os.voice.profile_match import writer_profiles

    return [p.vector.to_list() for p in BUILTIN_TEMPLATES.values()] + [
        list(v) for v in writer_profiles().values()
    ]


class SentenceDecoder:
    """Writes the next sentence of a batch of chat replies, each row steered by its own strengths.

    ``start(topics)`` sets up one writing prompt per row; the first ``write(steer_rows)`` computes
    them (unsteered), and each call samples until every row has ended a sentence (``SENTENCE_END``) or
    written ``max_sentence_tokens``, with the row's steering vectors added at their layers. Keys and
    values persist, so a call computes its new tokens only; the token that ended a sentence is
    computed at the start of the next call, under the next strengths. A row that ends its reply (end
    of turn or a line break) writes nothing more. The model and its decoding settings (temperature,
    nucleus, presence and repetition penalties, no repeated n-grams) are the local ``backend``'s.
    """

    def __init__(
        self,
        backend: LocalBackend,
        directions: SteeringDirections,
        max_sentence_tokens: int = MAX_SENTENCE_TOKENS,
    ) -> None:
        tokenizer, model = backend.tokenizer, backend.model
        self.tokenizer, self.model, self.directions = tokenizer, model, directions
        self.max_sentence_tokens = max_sentence_tokens
        self.processors = LogitsProcessorList(
            [
                RepetitionPenaltyLogitsProcessor(backend.repetition_penalty),
                NoRepeatNGramLogitsProcessor(backend.no_repeat_ngram_size),
                TemperatureLogitsWarper(backend.temperature),
            ]
        )
        self.top_p, self.presence_penalty = backend.top_p, backend.presence_penalty
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.end_ids = eos_token_ids(model, tokenizer)
        self._cache_kw = cache_argument(model)
        self._pieces: dict[int, str] = {}
        self.replies: list[list[int]] = []

    def start(self, topics: Sequence[str]) -> None:
        """Set up the prompt of a short paragraph about each topic, one row each; the next ``write``
        computes them (a batch reset and never written costs nothing)."""
        rows = [
            self.tokenizer.apply_chat_template(writing_messages(t), add_generation_prompt=True, tokenize=True)
            for t in topics
        ]
        rows = [list(r["input_ids"] if isinstance(r, Mapping) else r) for r in rows]
        self.prompts = rows
        ids = self._left_padded(rows)
        self.mask = (
            torch.arange(ids.shape[1]) >= ids.shape[1] - torch.tensor([len(r) for r in rows])[:, None]
        ).long()
        self.positions = self.mask.sum(1) - 1  # the position of each row's pending (last) token
        self.pending = ids[:, -1].clone()
        self.cache = DynamicCache()
        self.finished = torch.zeros(len(rows), dtype=torch.bool)
        self.replies = [[] for _ in rows]
        self._unread: torch.Tensor | None = ids[:, :-1]  # the prompts before their last token

    def write(self, steer_rows: Sequence[Mapping[str, float]], generator: torch.Generator) -> list[str]:
        """Write one more sentence in every unfinished row; returns each row's whole reply so far."""
        additions = self.directions.additions(steer_rows)
        from resonance_os.llm.steering import steering

        writing = ~self.finished
        count = 0
        if self._unread is not None:
            prompts, mask = self._unread, self.mask[:, : self._unread.shape[1]]
            with torch.inference_mode():
                self._forward(prompts, mask, (mask.cumsum(1) - 1).clamp(min=0))
            self._unread = None
        with steering(self.model, additions), torch.inference_mode():
            while writing.any() and count < self.max_sentence_tokens:
                token_mask = writing.long()
                self.mask = torch.cat([self.mask, token_mask[:, None]], 1)
                tokens = torch.where(writing, self.pending, torch.full_like(self.pending, self.pad_id))
                logits = self._forward(tokens[:, None], self.mask, self.positions[:, None])
                self.positions = self.positions + token_mask
                history = self._left_padded([p + r for p, r in zip(self.prompts, self.replies)])
                scores = logits.float()
                for b, reply in enumerate(self.replies):  # the presence penalty reads the reply alone
                    if reply and self.presence_penalty:
                        scores[b, sorted(set(reply))] -= self.presence_penalty
                sampled = self._sample(self.processors(history, scores), generator)
                count += 1
                for b in torch.nonzero(writing)[:, 0].tolist():
                    token = int(sampled[b])
                    piece = self._piece(token)
                    if token in self.end_ids or "\n" in piece:
                        self.finished[b] = True
                        writing[b] = False
                        continue
                    self.replies[b].append(token)
                    self.pending[b] = token
                    if piece.rstrip().endswith(SENTENCE_END):
                        writing[b] = False
        return [self.tokenizer.decode(r, skip_special_tokens=True).strip() for r in self.replies]

    def _left_padded(self, rows: Sequence[Sequence[int]]) -> torch.Tensor:
        """Token rows left-padded to one width (the penalties see each row's own tokens only, as
        ``generate`` with left padding does)."""
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
        return ids

    def _sample(self, scores: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One token per row from the nucleus (``top_p``) of the ``NUCLEUS_CANDIDATES`` likeliest."""
        top = scores.topk(NUCLEUS_CANDIDATES, dim=-1)
        probs = top.values.softmax(-1)
        outside = probs.cumsum(-1) - probs > self.top_p  # tokens after the nucleus's mass is reached
        probs = probs.masked_fill(outside, 0.0)
        choice = torch.multinomial(probs, 1, generator=generator)
        return top.indices.gather(1, choice)[:, 0]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            **{self._cache_kw: self.cache},
        )
        return out.logits[:, -1]

    def _piece(self, token: int) -> str:
        if token not in self._pieces:
            self._pieces[token] = self.tokenizer.decode([token])
        return self._pieces[token]


class SteeredWritingVectorEnv(VectorEnv):
    """``num_envs`` steered writing episodes stepped together (see the module docstring).

    Args:
        num_envs: rows written in one batch (32 keeps a 2-core CPU busy; each step is one sentence per row).
        targets: HRVs or profile keys, one drawn per episode; default by ``split``: ``"train"`` the
            ``training_targets()``, ``"heldout"`` the ``heldout_targets()`` (never trained on).
        split: topics (and default targets): the draft pool's ``"train"`` or ``"heldout"`` prompts.
        sentences: sentences (steps) per episode. 4.
        reward: the writing reward a paragraph is scored with: ``"fast"`` (default), ``"lm"``
            (``quality.reward.make_reward``) or a ``WritingReward``.
        directions: steering directions (default: the shipped SmolLM2 set).
        model: ``(tokenizer, model)`` to write with (default: SmolLM2, as the local backend loads it),
            with the local backend's decoding settings.
        seed: seeds the first ``reset()`` when it gets none.
        max_strength: the steering strength an action of +-1 applies (``MAX_STRENGTH``, 0.5).
        objective: what the return scores (``OBJECTIVES``): ``"writing"`` (default), ``"resonance"``
            or ``"style"``.
        controller_gain: when above 0, the action is a residual on the proportional controller of
            this gain (residual policy learning): the env applies ``clip(action + controller(obs))``,
            so an untrained policy (mean 0) steers as the controller does and PPO learns corrections.

    Spaces per env: observation ``Box(-1, 1, (8,))`` (the gap), action ``Box(-1, 1, (8,))``
    (strengths). Same-step autoreset: a finished episode's last observation and info are in
    ``infos["final_obs"]`` / ``infos["final_info"]``. Per-step ``infos``: ``text``, ``prompt``,
    ``target_hrv``, ``measured_hrv``, ``steer``, ``score`` (the objective's value of the paragraph so
    far) and the writing reward's terms.
    ``vectorised(n)`` is the same task with ``n`` rows on the same model.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int = 32,
        targets: Sequence[object] | None = None,
        split: str = "train",
        sentences: int = SENTENCES_PER_EPISODE,
        reward: str | WritingReward | None = None,
        directions: SteeringDirections | None = None,
        model: tuple[Any, torch.nn.Module] | None = None,
        seed: int | None = None,
        max_strength: float = MAX_STRENGTH,
        controller_gain: float = 0.0,
        objective: str = "writing",
    ) -> None:
        if not 0.0 < max_strength <= 1.0:
            raise ValidationError(f"max_strength must be in (0, 1], got {max_strength!r}")
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValidationError(f"num_envs must be a positive integer, got {num_envs!r}")
        if isinstance(sentences, bool) or not isinstance(sentences, int) or sentences < 1:
            raise ValidationError(f"sentences must be a positive integer, got {sentences!r}")
        if split not in ("train", "heldout"):
            raise ValidationError(f"split must be 'train' or 'heldout', got {split!r}")
        self.num_envs, self.split, self.sentences = num_envs, split, sentences
        self.max_strength = float(max_strength)
        if isinstance(controller_gain, bool) or not (
            isinstance(controller_gain, (int, float)) and 0.0 <= controller_gain < np.inf
        ):
            raise ValidationError(f"controller_gain must be a number >= 0, got {controller_gain!r}")
        self.controller_gain = float(controller_gain)
        if objective not in OBJECTIVES:
            raise ValidationError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        self.objective = objective
        self.topics = sorted({d.prompt for d in load_drafts(None, split)})
        items = (
            targets
            if targets is not None
            else (training_targets() if split == "train" else heldout_targets())
        )
        self.targets = [np.asarray(resolve_target_item(t)[0]) for t in items]
        if not self.targets:
            raise ValidationError("targets must hold at least one HRV")
        self.reward = make_reward(reward)
        self.directions = directions or shipped_directions()
        backend = LocalBackend(model=model)
        backend.model.eval()
        self.decoder = SentenceDecoder(backend, self.directions)
        self.single_observation_space = gym.spaces.Box(-1.0, 1.0, (HRV_DIM,), dtype=np.float32)
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (HRV_DIM,), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.steerable = np.array([d in self.directions.vectors for d in HRV_DIMENSIONS])
        self._controller = proportional_controller(self.controller_gain, self.steerable)
        self._initial_seed = seed
        self._np_random = np.random.default_rng(seed)
        self._generator = torch.Generator().manual_seed(0 if seed is None else seed)
        self._started = False

    def settings(self) -> dict[str, Any]:
        """The JSON-serialisable arguments that rebuild this task (``SteeredWritingVectorEnv(**settings)``)."""
        return {
            "targets": [t.tolist() for t in self.targets],
            "split": self.split,
            "sentences": self.sentences,
            "max_strength": self.max_strength,
            "controller_gain": self.controller_gain,
            "objective": self.objective,
            "reward": self.reward.kind,
        }

    def vectorised(self, num_envs: int, seed: int | None = None, **changes: Any) -> SteeredWritingVectorEnv:
        """This task with ``num_envs`` rows on the same model, directions and reward; ``changes``
        replace settings (``split="train", targets=None``: the training task)."""
        decoder = self.decoder
        return SteeredWritingVectorEnv(
            num_envs, **{**self.settings(), **changes, "reward": self.reward}, directions=self.directions,
            model=(decoder.tokenizer, decoder.model), seed=seed,
        )  # fmt: skip

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start ``num_envs`` paragraphs: a topic and a target drawn per row. ``options`` may give
        ``topics`` and ``targets`` (one per row) instead."""
        if seed is None and self._initial_seed is not None:
            seed, self._initial_seed = self._initial_seed, None
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
            self._generator.manual_seed(seed)
        options = options or {}
        n = self.num_envs
        topics = options.get("topics") or [
            self.topics[i] for i in self._np_random.integers(len(self.topics), size=n)
        ]
        targets = options.get("targets") or [
            self.targets[i] for i in self._np_random.integers(len(self.targets), size=n)
        ]
        if len(topics) != n or len(targets) != n:
            raise ValidationError(
                f"options give {len(topics)} topics and {len(targets)} targets; give {n} of each"
            )
        self._topics = list(topics)
        self._target = np.stack([np.asarray(resolve_target_item(t)[0]) for t in targets])
        self._measured = np.tile(np.asarray(MODEL_TYPICAL_HRV), (n, 1))
        self._value = np.zeros(n)
        self._texts = [""] * n
        self._steps = 0
        self._steer: list[dict[str, float]] = [{} for _ in range(n)]
        self._terms: list[dict[str, float]] = [{} for _ in range(n)]
        self.decoder.start(self._topics)
        self._started = True
        return self._observation(), self._infos()

    def step(self, actions: np.ndarray):
        if not self._started:
            raise gym.error.ResetNeeded("call reset() before step()")
        actions = np.asarray(actions, dtype=np.float64).reshape(self.num_envs, HRV_DIM)
        if not np.all(np.isfinite(actions)):
            raise ValidationError(f"actions must be finite numbers in [-1, 1], got {actions!r}")
        actions = np.clip(actions, -1.0, 1.0)
        if self.controller_gain:
            actions = np.clip(actions + self._controller(self._observation()), -1.0, 1.0)
        strengths = self.max_strength * actions
        self._steer = [
            {
                d: round(float(s), 4)
                for d, s, on in zip(HRV_DIMENSIONS, row, self.steerable)
                if on and s != 0.0
            }
            for row in strengths
        ]
        self._texts = self.decoder.write(self._steer, self._generator)
        self._steps += 1
        last = self._steps >= self.sentences
        if last:  # the paragraph a reader gets: the writer's cleaning, an unfinished tail dropped
            self._texts = [clean_reply(text) for text in self._texts]
        rewards = np.zeros(self.num_envs)
        for b, text in enumerate(self._texts):
            try:
                score = self.reward.score(text, self._target[b], prompt=self._topics[b])
            except ValidationError:  # no words (yet): nothing to score; a finished one is worth 0
                if last:
                    rewards[b], self._value[b], self._terms[b] = -self._value[b], 0.0, {}
                continue
            self._measured[b] = score.hrv
            self._terms[b] = {term: getattr(score, term) for term in (*REWARD_TERMS, "quality")}
            value = _objective_value(score, self.objective)
            rewards[b], self._value[b] = value - self._value[b], value
        terminated = np.full(self.num_envs, last)
        truncated = np.zeros(self.num_envs, dtype=bool)
        obs, infos = self._observation(), self._infos()
        if terminated.all():
            final_obs, final_info = obs, infos
            obs, infos = self.reset()
            infos["final_obs"] = np.array(list(final_obs), dtype=object)
            infos["_final_obs"] = terminated.copy()
            infos["final_info"] = final_info
            infos["_final_info"] = terminated.copy()
        return obs, rewards, terminated, truncated, infos

    def _observation(self) -> np.ndarray:
        return np.clip(self._target - self._measured, -1.0, 1.0).astype(np.float32)

    def _infos(self) -> dict[str, Any]:
        return {
            "text": np.array(self._texts, dtype=object),
            "prompt": np.array(self._topics, dtype=object),
            "target_hrv": self._target.copy(),
            "measured_hrv": self._measured.copy(),
            "steer": np.array(self._steer, dtype=object),
            "score": self._value.copy(),
            **{
                term: np.array([t.get(term, np.nan) for t in self._terms], dtype=np.float64)
                for term in (*REWARD_TERMS, "quality")
            },
        }


class SteeredWritingEnv(gym.Env):
    """One steered writing episode at a time: ``HRWritingEnv(control="steer")`` (the spec's signature).

    The arguments are ``SteeredWritingVectorEnv``'s but ``num_envs``; the spaces and ``info`` are one
    row's. Training batches the writing: ``train_hr_ppo`` trains on ``vectorised(STEER_ENVS)``.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, hrv_dim: int = HRV_DIM, render_mode: str | None = None, **kwargs: Any) -> None:
        if hrv_dim != HRV_DIM:
            raise ValidationError(f"hrv_dim must be {HRV_DIM} (the HRV's dimensions), got {hrv_dim!r}")
        if render_mode not in (None, "ansi"):
            raise ValidationError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.batch = SteeredWritingVectorEnv(num_envs=1, **kwargs)
        self.observation_space = self.batch.single_observation_space
        self.action_space = self.batch.single_action_space
        self.control = "steer"
        self._info: dict[str, Any] = {}

    def settings(self) -> dict[str, Any]:
        return {"control": self.control, **self.batch.settings()}

    def vectorised(self, num_envs: int, seed: int | None = None, **changes: Any) -> SteeredWritingVectorEnv:
        return self.batch.vectorised(num_envs, seed, **changes)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        obs, infos = self.batch.reset(seed=seed, options=options)
        self._info = _row(infos)
        return obs[0], self._info

    def step(self, action):
        obs, rewards, terminated, truncated, infos = self.batch.step(np.asarray(action)[None])
        if terminated[0]:
            obs, infos = infos["final_obs"], infos["final_info"]
        self._info = _row(infos)
        return obs[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]), self._info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or not self._info:
            return None
        info = self._info
        rows = [
            f"prompt: {info['prompt']}  score {info['score']:.3f}  steer {info['steer']}",
            info["text"],
            "",
        ]
        rows.append(f"{'dimension':<22}{'target':>8}{'measured':>10}")
        for name, target, measured in zip(HRV_DIMENSIONS, info["target_hrv"], info["measured_hrv"]):
            rows.append(f"{name:<22}{target:>8.3f}{measured:>10.3f}")
        return "\n".join(rows)


def _objective_value(score: WritingScore, objective: str) -> float:
    """A paragraph's value under ``objective`` (``OBJECTIVES``)."""
    if objective == "writing":
        return score.reward
    if objective == "style":
        return score.resonance
    return score.resonance * quality_factor(score.fluency, 1.0, score.topic, score.repetition)


def _row(infos: Mapping[str, Any]) -> dict[str, Any]:
    """Row 0 of a vector env's ``infos``, as plain values."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_") or key.startswith("final_"):
            continue
        item = value[0]
        out[key] = (
            item.tolist() if isinstance(item, np.ndarray) else item.item() if hasattr(item, "item") else item
        )
    return out


def proportional_controller(gain: float, steerable: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The baseline controller: strength ``gain x gap`` on each steerable dimension (0 elsewhere)."""
    mask = np.asarray(steerable, dtype=np.float64)

    def act(obs: np.ndarray) -> np.ndarray:
        return np.clip(gain * np.asarray(obs, dtype=np.float64) * mask, -1.0, 1.0)

    return act


def evaluate_steering_policy(
    env: SteeredWritingVectorEnv,
    policy: Callable[[np.ndarray], np.ndarray] | Any,
    batches: int = 2,
    seed: int = 0,
) -> dict[str, float]:
    """Finished paragraphs' mean score (the objective; its std), writing reward, resonance, fluency,
    topic, quality factor and sentences kept over
    ``batches x num_envs`` seeded episodes. ``policy`` maps a batch of observations to strengths, or
    is a trained model (deterministic ``predict``). The same ``seed`` gives every policy the same
    topics, targets and sampling noise (common random numbers), so policies compare pair by pair."""
    keys = ("score", "reward", "resonance", "fluency", "topic", "quality")
    finals: dict[str, list[float]] = {key: [] for key in (*keys, "sentences")}
    for batch in range(batches):
        obs, _ = env.reset(seed=seed + batch)
        for _ in range(env.sentences):
            actions = policy(obs) if callable(policy) else policy.predict(obs, deterministic=True)[0]
            obs, _, terminated, _, infos = env.step(actions)
        info = infos["final_info"]
        for key in keys:
            finals[key].extend(np.nan_to_num(np.asarray(info[key], dtype=np.float64)).tolist())
        finals["sentences"].extend(len(split_sentences(text)) for text in info["text"])
    return {
        "mean": float(np.mean(finals["score"])),
        "std": float(np.std(finals["score"])),
        **{key: float(np.mean(values)) for key, values in finals.items() if key != "score"},
        "episodes": float(len(finals["score"])),
    }
