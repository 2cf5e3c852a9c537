"""The compute under the Tinker service: base models with LoRA slots, training runs, sampling.

One :class:`BaseModel` per base model name holds the model once (frozen) with a
:class:`~resonance_os.llm.lora_slots.LoraSlots`; each training run is an adapter on it with its own AdamW.
:func:`forward_backward` runs the requests of several runs on the same base model as one batch (each
row routed to its run's adapter), so N clients cost one base forward/backward pass. Everything here
runs on the service's single worker thread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import resonance_os.api.tinker.losses as losses
from resonance_os.api.tinker.errors import UserError
from resonance_os.api.tinker.wire import FwdBwdRequest, Sequence
from resonance_os.llm.lora_slots import LoraSlots, LoraSpec


def load_base_model(folder: str | None) -> tuple[Any, torch.nn.Module, str]:
    """(tokenizer, private model copy, folder) from a local folder; ``None``: the reference SmolLM2."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if folder is None:
        from resonance_os.quality import reference_lm

        path = reference_lm.default_cache_dir()
        if not (path / "config.json").is_file():
            reference_lm.load_model(str(path))  # converts the packaged GGUF once
        folder = str(path)
    if not (Path(folder) / "config.json").is_file():
        raise FileNotFoundError(f"no Hugging Face model folder at {folder} (config.json missing)")
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    return tokenizer, model.eval(), str(Path(folder).resolve())


@dataclass
class Run:
    """A training run: its adapter's name on the base model, its parameters and optimiser."""

    model_id: str
    spec: LoraSpec
    seed: int | None
    params: list[torch.nn.Parameter]
    optimizer: torch.optim.AdamW


@dataclass
class BaseModel:
    name: str
    tokenizer: Any
    model: torch.nn.Module
    folder: str
    slots: LoraSlots = field(init=False)

    def __post_init__(self) -> None:
        self.slots = LoraSlots(self.model)
        config = self.model.config
        self.vocab_size = int(self.model.get_output_embeddings().base.out_features)
        self.context_length = int(getattr(config, "max_position_embeddings", 0) or 2048)
        self.arch = type(self.model).__name__

    # ----------------------------------------------------------------------------------- runs
    def add_run(self, model_id: str, spec: LoraSpec, seed: int | None) -> Run:
        params = self.slots.add(model_id, spec, seed)
        optimizer = torch.optim.AdamW(params, lr=0.0, foreach=False)
        return Run(model_id, spec, seed, params, optimizer)

    def remove(self, name: str) -> None:
        self.slots.remove(name)

    # ----------------------------------------------------------------------------------- validation
    def check_tokens(self, tokens: np.ndarray, where: str) -> None:
        if tokens.size == 0:
            raise UserError(f"{where}: empty; send at least one token")
        if tokens.size > self.context_length:
            raise UserError(
                f"{where}: {tokens.size} tokens, over the {self.context_length}-token context of {self.name}"
            )
        if tokens.min() < 0 or tokens.max() >= self.vocab_size:
            raise UserError(f"{where}: token ids must be in [0, {self.vocab_size}) for {self.name}")


def check_fwdbwd(base: BaseModel, request: FwdBwdRequest) -> dict[str, float]:
    """Validate a request against its loss and the base model; return the loss config with defaults."""
    if not request.data:
        raise UserError("data: empty; send at least one Datum")
    config: dict[str, float] = {}
    for i, datum in enumerate(request.data):
        config = losses.check_request(request.loss_fn, request.config, set(datum.inputs), f"data[{i}]")
        base.check_tokens(datum.tokens, f"data[{i}].model_input")
        for name, values in datum.inputs.items():
            if values.size != datum.tokens.size:
                raise UserError(
                    f"data[{i}].loss_fn_inputs[{name!r}] has {values.size} values but model_input has "
                    f"{datum.tokens.size} tokens; send one value per input token"
                )
        base.check_tokens(
            datum.inputs["target_tokens"].astype(np.int64), f"data[{i}].loss_fn_inputs['target_tokens']"
        )
    return config


@dataclass
class FwdBwdItem:
    run: Run
    request: FwdBwdRequest
    config: dict[str, float]


def forward_backward(
    base: BaseModel, items: list[FwdBwdItem]
) -> list[tuple[list[dict[str, np.ndarray]], dict[str, float]]]:
    """One padded batch over every datum of ``items`` (each row on its run's adapter); gradients of
    the non-forward-only requests accumulate in their runs' parameters. Returns, per item, the
    per-datum outputs (``logprobs``, ``elementwise_loss``) and metrics (``loss:sum``)."""
    rows = [(k, datum) for k, item in enumerate(items) for datum in item.request.data]
    width = max(d.tokens.size for _, d in rows)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    targets = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for r, (_, datum) in enumerate(rows):
        n = datum.tokens.size
        input_ids[r, :n] = torch.from_numpy(datum.tokens)
        targets[r, :n] = torch.from_numpy(datum.inputs["target_tokens"].astype(np.int64))
        mask[r, :n] = 1
    train = any(not item.request.forward_only for item in items)
    names = [items[k].run.model_id for k, _ in rows]
    with torch.set_grad_enabled(train), base.slots.route(names):
        logits = base.model(input_ids=input_ids, attention_mask=mask).logits.float()
        logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)
        del logits
        outputs: list[list[dict[str, np.ndarray]]] = [[] for _ in items]
        totals = [0.0] * len(items)
        objective = None
        for r, (k, datum) in enumerate(rows):
            n = datum.tokens.size
            inputs = {
                name: torch.from_numpy(values.astype(np.float32))
                for name, values in datum.inputs.items()
                if name != "target_tokens"
            }
            row_logp = logp[r, :n]
            element = losses.elementwise_loss(items[k].request.loss_fn, row_logp, inputs, items[k].config)
            loss = element.sum()
            totals[k] += float(loss.detach())
            if not items[k].request.forward_only:
                objective = loss if objective is None else objective + loss
            outputs[k].append(
                {
                    "logprobs": row_logp.detach().numpy().astype(np.float32),
                    "elementwise_loss": element.detach().numpy().astype(np.float32),
                }
            )
        if objective is not None and objective.requires_grad:
            objective.backward()
    return [(outputs[k], {"loss:sum": totals[k]}) for k in range(len(items))]


def optim_step(run: Run, adam: dict[str, Any]) -> dict[str, float]:
    """Apply the accumulated gradients with AdamW(``adam``) and clear them."""
    lr = float(adam.get("learning_rate", 1e-4))
    betas = (float(adam.get("beta1", 0.9)), float(adam.get("beta2", 0.95)))
    eps = float(adam.get("eps", 1e-12))
    weight_decay = float(adam.get("weight_decay", 0.0))
    clip = float(adam.get("grad_clip_norm", 0.0))
    for name, value in (
        ("learning_rate", lr),
        ("eps", eps),
        ("weight_decay", weight_decay),
        ("grad_clip_norm", clip),
    ):
        if not math.isfinite(value) or value < 0:
            raise UserError(f"adam_params.{name}={value!r} must be a finite number >= 0")
    for name, value in zip(("beta1", "beta2"), betas, strict=True):
        if not 0 <= value < 1:
            raise UserError(f"adam_params.{name}={value!r} must be in [0, 1)")
    grads = [p.grad for p in run.params if p.grad is not None]
    norm = (
        float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
        if grads
        else 0.0
    )
    if clip > 0 and grads:
        torch.nn.utils.clip_grad_norm_(run.params, clip, foreach=False)
    for group in run.optimizer.param_groups:
        group.update(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    run.optimizer.step()
    run.optimizer.zero_grad(set_to_none=True)
    return {"grad_norm:mean": norm, "learning_rate:mean": lr}


# --------------------------------------------------------------------------------------- sampling
SAMPLE_BATCH = 32
"""Sequences one sampling pass decodes together (requests beyond it wait for a free row)."""


@dataclass
class SampleParams:
    max_tokens: int | None
    temperature: float
    top_k: int
    top_p: float
    seed: int | None
    stop: list[str] | list[int] | None


@dataclass
class PromptScoring:
    """Tinker's ``prompt_logprobs`` (teacher-forced log-probs of the prompt) and ``prompt_logprobs_last_n``
    (only the last N tokens; None: all)."""

    last_n: int | None = None


def sampling_request(
    base: BaseModel, prompt: list[int], n: int, params: SampleParams, scoring: PromptScoring | None = None
) -> Any:
    """The engine's ``SamplingParams`` for ``n`` continuations of ``prompt``, or a :class:`UserError`
    naming the field that cannot be served. Tinker's stop rule: without ``stop`` a sample ends at EOS;
    with ``stop`` (token ids and/or strings) only there."""
    from resonance_os.llm.errors import ConfigError
    from resonance_os.llm.sampling_params import SamplingParams

    base.check_tokens(np.asarray(prompt), "prompt")
    room = base.context_length - len(prompt)
    max_tokens = room if params.max_tokens is None else params.max_tokens
    if max_tokens < 1 or max_tokens > room:
        raise UserError(
            f"sampling_params.max_tokens={params.max_tokens}: the {len(prompt)}-token prompt leaves room for "
            f"1 to {room} tokens in the {base.context_length}-token context"
        )
    stop = params.stop or []
    try:
        request = SamplingParams(
            max_tokens=max_tokens, temperature=max(params.temperature, 0.0), top_p=params.top_p,
            top_k=max(params.top_k, 0), n=n, stop=tuple(str(s) for s in stop if not isinstance(s, int)),
            stop_token_ids=tuple(s for s in stop if isinstance(s, int)), ignore_eos=params.stop is not None,
            seed=params.seed, logprobs=True, prompt_logprobs=scoring is not None,
            prompt_logprobs_last_n=None if scoring is None else scoring.last_n,
        )  # fmt: skip
    except ConfigError as exc:
        raise UserError(f"sampling_params.{exc}") from None
    if scoring is not None and scoring.last_n is not None and not 1 <= scoring.last_n < len(prompt):
        raise UserError(
            f"prompt_logprobs_last_n={scoring.last_n} must be between 1 and the prompt's {len(prompt)} "
            "tokens minus one"
        )
    return request


def sample(
    base: BaseModel, adapter: str | None, requests: list[tuple[list[int], Any]]
) -> list[tuple[list[Sequence], list[float] | None]]:
    """Every ``(prompt, sampling_request(...))``'s continuations on ``adapter`` (None: the base model),
    drawn together: each token's log-prob under the temperature-scaled distribution it was drawn from
    (before top-k/top-p), and where asked the prompt's own log-probs (NaN where not scored: the first
    token, those before ``last_n``).

    One generation engine (``llm.engine``, the OpenAI API's) on the base model with the adapter's LoRA
    slot routed decodes all the requests in one batch, up to ``SAMPLE_BATCH`` sequences at a time: a
    prompt is computed once for its ``n`` samples, its log-probs come from that same pass, and a seed
    gives the same tokens whatever else is in the batch, up to float rounding (a batched pass can
    differ from a lone one in the last bits, which now and then flips a draw)."""
    from resonance_os.llm.engine import EngineConfig, GenerationEngine

    widest = max(request.n for _, request in requests)
    with base.slots.route(adapter):
        engine = GenerationEngine(
            base.model, base.tokenizer, EngineConfig(max_batch=max(widest, SAMPLE_BATCH)), borrowed=True
        )
        handles = [engine.submit(prompt, request) for prompt, request in requests]
        engine.run_pending()
    results = []
    for handle in handles:
        done = handle.result()
        sequences = [
            Sequence(c.token_ids, [t.logprob for t in c.logprobs], c.finish_reason == "stop")
            for c in done.choices
        ]
        prompt_lp = (
            None
            if done.prompt_logprobs is None
            else [math.nan if lp is None else lp for lp in done.prompt_logprobs]
        )
        results.append((sequences, prompt_lp))
    return results
