"""The language-model policy: any Hugging Face causal LM, trained with LoRA or fully.

``pi_theta(y | x) = prod_t pi_theta(y_t | x, y_<t)`` is the causal LM's next-token distribution.
With LoRA (Hu et al., 2021, "LoRA: Low-Rank Adaptation of Large Language Models") each targeted
linear layer ``W`` becomes ``W + (alpha / r) B A`` with ``A`` (r x d_in), ``B`` (d_out x r) and
``B = 0`` at the start, so the fresh policy *is* the base model. The reference policy ``pi_ref``
of the KL term is then the same model with the adapters switched off (``with policy.reference():``),
so no second copy lives in memory. Full fine-tuning trains every weight; its reference is a frozen
copy kept only when ``PolicyConfig.reference_copy`` is true.

Usage::

    from resonance_os.llm.policy import LMPolicy, PolicyConfig

    policy = LMPolicy(tokenizer, model, PolicyConfig(lora_rank=16, lora_alpha=32))
    logp = policy.token_logprobs(input_ids, attention_mask, completion_mask)  # (B, C), grads flow
    with policy.reference():
        ref_logp = policy.token_logprobs(input_ids, attention_mask, completion_mask)
    policy.save("runs/x/policy")              # atomic folder: adapter (or full) weights + config
    policy = LMPolicy.load("runs/x/policy", tokenizer, base_model)
    merged = policy.merge()                   # a plain transformers model for export

The caller brings the model (e.g. SmolLM2 from ``quality.reference_lm.load_model``); this module
knows nothing of writing. Checkpoints follow ``rl.checkpoint``: ``weights/adapter.safetensors`` or
``weights/model.safetensors``, ``config.json`` (the policy config and the model's config),
``metadata.json``; written under a temporary name and renamed.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from resonance_os.llm.causal_lm import cache_argument
from resonance_os.llm.errors import ConfigError, LLMError, ReferenceUnavailableError
from resonance_os.rl.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from resonance_os.rl.errors import CheckpointError
from resonance_os.rl.folders import replace_folder

CHECKPOINT_KIND = "LMPolicy"
FINETUNE_MODES = ("lora", "full")
DEFAULT_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class PolicyConfig:
    """How the policy is trained. Round-trips through JSON (``to_dict`` / ``from_dict``).

    finetune: ``"lora"`` (default) or ``"full"``.
    lora_rank: LoRA rank r >= 1 (default 16). lora_alpha: scale numerator > 0, update = alpha/r * BA
    (default 32). lora_dropout: dropout on the LoRA input in [0, 1) (default 0.0).
    target_modules: names of the linear layers that get adapters (default: the attention and MLP
    projections of Llama-style models), or ``"all-linear"``.
    fp32_head: compute the LM head (logits) in float32 in ``token_logprobs`` even when the model runs
    in bf16/fp16 (ScaleRL's "FP32 LM head"; a no-op for float32 models). Default True.
    reference_copy: full fine-tuning only: keep a frozen copy of the initial weights as the reference
    policy (doubles memory). Default True. LoRA never copies.
    """

    finetune: str = "lora"
    lora_rank: int = 16
    lora_alpha: float = 32.0
    lora_dropout: float = 0.0
    target_modules: tuple[str, ...] | str = DEFAULT_TARGET_MODULES
    fp32_head: bool = True
    reference_copy: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.target_modules, list):
            self.target_modules = tuple(self.target_modules)
        if self.finetune not in FINETUNE_MODES:
            raise ConfigError(
                f"finetune={self.finetune!r} is not one of {FINETUNE_MODES}; use 'lora' or 'full'"
            )
        if isinstance(self.lora_rank, bool) or not isinstance(self.lora_rank, int) or self.lora_rank < 1:
            raise ConfigError(f"lora_rank={self.lora_rank!r} must be an integer >= 1 (typical: 8-64)")
        if not isinstance(self.lora_alpha, (int, float)) or not self.lora_alpha > 0:
            raise ConfigError(f"lora_alpha={self.lora_alpha!r} must be a number > 0 (typical: 2 x lora_rank)")
        if not isinstance(self.lora_dropout, (int, float)) or not 0.0 <= self.lora_dropout < 1.0:
            raise ConfigError(f"lora_dropout={self.lora_dropout!r} must be in [0, 1) (typical: 0.0-0.1)")
        if isinstance(self.target_modules, str):
            if not self.target_modules:
                raise ConfigError("target_modules='' names no layer; give layer names or 'all-linear'")
        elif not self.target_modules or not all(isinstance(m, str) and m for m in self.target_modules):
            raise ConfigError(
                f"target_modules={self.target_modules!r} must be a non-empty list of layer names "
                "(e.g. ['q_proj', 'v_proj']) or 'all-linear'"
            )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if isinstance(self.target_modules, tuple):
            data["target_modules"] = list(self.target_modules)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PolicyConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown PolicyConfig fields {unknown}; known fields: {sorted(known)}")
        return cls(**data)


class LMPolicy:
    """A causal LM as an RL policy: per-token log-probabilities, LoRA or full training, reference.

    ``tokenizer`` and ``model`` are a Hugging Face tokenizer and causal LM (``AutoModelForCausalLM``
    or any model whose forward takes ``input_ids``, ``attention_mask``, ``position_ids`` and returns
    ``.logits``). With LoRA the model is wrapped in place by ``peft`` (adapter layers are injected
    into it): pass a private copy when the same model object serves others (``copy.deepcopy``, or
    load it again with ``LMPolicy.from_pretrained``). A tokenizer without a pad token gets its EOS
    token as pad token.
    """

    def __init__(self, tokenizer: Any, model: torch.nn.Module, config: PolicyConfig | None = None) -> None:
        self.config = config or PolicyConfig()
        if not isinstance(self.config, PolicyConfig):
            raise ConfigError(f"config must be a PolicyConfig, got {type(self.config).__name__}")
        if tokenizer.pad_token_id is None:
            if tokenizer.eos_token_id is None:
                raise LLMError("the tokenizer has neither a pad nor an EOS token; set tokenizer.pad_token")
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        self._reference_model: torch.nn.Module | None = None
        self._use_reference = False
        if self.config.finetune == "lora":
            self.model = self._wrap_lora(model)
        else:
            self.model = model
            for p in self.model.parameters():
                p.requires_grad_(True)
            if self.config.reference_copy:
                self._reference_model = copy.deepcopy(model).eval()
                for p in self._reference_model.parameters():
                    p.requires_grad_(False)
        self.model.eval()
        self._lora_layers = self._find_lora_layers()
        self._fast_active = False
        self._mode_sensitive: bool | None = None
        self._lean_cache: dict[tuple[int, bool], Any] = {}
        self._rollout_copies: dict[torch.dtype, _RolloutCopy] = {}
        self._rollout_active: torch.nn.Module | None = None
        self._autocast_dtype: torch.dtype | None = None
        self._cache_kw = cache_argument(self.base_model)

    # ----------------------------------------------------------------------------------- building
    def _wrap_lora(self, model: torch.nn.Module) -> torch.nn.Module:
        from peft import LoraConfig, get_peft_model

        cfg = self.config
        targets = cfg.target_modules if isinstance(cfg.target_modules, str) else list(cfg.target_modules)
        names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
        if not isinstance(targets, str):
            missing = [t for t in targets if t not in names]
            if len(missing) == len(targets):
                raise ConfigError(
                    f"target_modules={targets} match no layer of this {type(model).__name__}; "
                    "name its linear layers (e.g. 'q_proj', 'v_proj') or use 'all-linear'"
                )
        lora = LoraConfig(
            r=cfg.lora_rank,
            lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout,
            target_modules=targets,
            bias="none",
            task_type="CAUSAL_LM",
        )
        with warnings.catch_warnings():  # peft reads transformers' deprecated alias; users need not see it
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            return get_peft_model(model, lora)

    def _find_lora_layers(self) -> list[tuple[dict[str, torch.nn.Module], str, torch.nn.Module]]:
        """(parent's child dict, name, peft LoRA Linear) of every injected LoRA layer; [] without LoRA."""
        if not self.is_lora:
            return []
        from peft.tuners.lora import Linear as LoraLinear

        found = []
        for parent in self.base_model.modules():
            for name, child in parent._modules.items():
                if isinstance(child, LoraLinear):
                    found.append((parent._modules, name, child))
        return found

    def _lean_layers(self, merged: bool) -> list[torch.nn.Module] | None:
        """Stand-ins for the LoRA layers that compute exactly what peft's forward computes, or None
        when some layer is in a state the stand-ins do not cover (adapters disabled or merged, several
        active adapters, DoRA and other variants, a non-Linear base layer, fan_in_fan_out). Built once
        and reused while they point at the layer's current modules; merged weights are recomputed."""
        lean: list[torch.nn.Module] = []
        for index, (_, _, layer) in enumerate(self._lora_layers):
            name = _vanilla_adapter(layer)
            if name is None:
                return None
            parts = (layer.base_layer, layer.lora_A[name], layer.lora_B[name], layer.lora_dropout[name])
            scaling = layer.scaling[name]
            dtype = parts[0].weight.dtype
            use_merged = merged and dtype in (torch.float32, torch.float64) and parts[1].weight.dtype == dtype
            key = (index, use_merged)
            module = self._lean_cache.get(key)
            if module is None or not module.fits(parts, scaling):
                module = (_MergedLinear if use_merged else _LeanLoraLinear)(parts, scaling)
                self._lean_cache[key] = module
            if use_merged:
                module.refresh()
            lean.append(module)
        return lean

    @contextmanager
    def fast_forward(self, *, merged: bool = False) -> Iterator[LMPolicy]:
        """Within this block forward passes skip peft's per-layer wrapper: every LoRA layer is swapped
        for a lean module on the same parameters that computes ``W x + b + s B(A(dropout(x)))`` with
        the same operations as peft (same numbers, gradients reach the same A and B).

        ``merged=True`` (inference only, no gradients to A and B) uses ``W + s B A`` as one weight, a
        temporary tensor: one matrix product per layer instead of three (float32/64 weights only; a
        bf16/fp16 weight would round the update away, so those layers stay unmerged). The numbers
        then differ from the unmerged ones by float rounding only (~1e-7 relative). The model's own weights are
        never written, so nothing needs restoring but the module tree. A no-op without LoRA, inside
        ``reference()`` or ``rollout_precision()``, or when a layer is in a state the lean modules do
        not cover.
        """
        if self._fast_active or self._rollout_active is not None or not self._lora_layers:
            yield self
            return
        lean = self._lean_layers(merged)
        if lean is None:
            yield self
            return
        for (children, name, _), module in zip(self._lora_layers, lean):
            children[name] = module
        self._fast_active = True
        try:
            yield self
        finally:
            self._fast_active = False
            for children, name, layer in self._lora_layers:
                children[name] = layer

    @contextmanager
    def rollout_precision(self, dtype: torch.dtype | None) -> Iterator[LMPolicy]:
        """Within this block forward passes run a copy of the policy in ``dtype`` (e.g. bf16
        rollouts for a float32 policy, as vLLM serves an RL trainer's policy in bf16): inference
        only, no gradients. The copy is made once and kept (memory: the model in ``dtype``); on
        entry every weight the optimiser can change is copied into it again, LoRA merged
        (``W + s B A``, then cast). Its log-probabilities differ from the policy's by the rounding
        of ``dtype`` (bf16: about 3 significant digits), so a trainer that samples this way corrects
        for the mismatch (``GRPOConfig.rollout_dtype``). A no-op for None or the model's own dtype.
        """
        if dtype is not None and (not isinstance(dtype, torch.dtype) or not dtype.is_floating_point):
            raise ConfigError(
                f"rollout dtype {dtype!r} is not a floating-point torch dtype; use torch.bfloat16"
            )
        own = next(self.base_model.parameters()).dtype
        if dtype is None or dtype == own or self._rollout_active is not None:
            yield self
            return
        rollout = self._rollout_copies.get(dtype)
        if rollout is None:
            rollout = self._rollout_copies[dtype] = _RolloutCopy(self, dtype)
        rollout.refresh([layer for _, _, layer in self._lora_layers])
        self._rollout_active = rollout.model
        try:
            yield self
        finally:
            self._rollout_active = None

    @contextmanager
    def autocast(self, dtype: torch.dtype | None) -> Iterator[LMPolicy]:
        """Within this block forward passes run in mixed precision: ``torch.autocast`` in ``dtype``
        (``torch.bfloat16``) does the matrix products, the weights, their gradients and the optimiser
        stay in the model's dtype (float32 master weights), and the LM head runs in float32 when
        ``PolicyConfig.fp32_head`` (ScaleRL). Call ``backward`` after the block, as torch advises. A
        no-op for None.
        """
        if dtype is None:
            yield self
            return
        previous, self._autocast_dtype = self._autocast_dtype, dtype
        try:
            yield self
        finally:
            self._autocast_dtype = previous

    def set_mode(self, training: bool) -> bool:
        """Put the model in training (dropout on) or eval mode; returns the previous mode.

        Cheaper than ``train()``: nothing is done when the model is already in that mode, or when
        the mode cannot change a forward pass (no dropout with p > 0 anywhere, no dropout setting
        > 0 in the model config, no gradient checkpointing). Used by sampling and the trainers.
        """
        previous = bool(self.model.training)
        if previous != training and self._mode_matters():
            self.model.train(training)
        return previous

    def _mode_matters(self) -> bool:
        """Whether train/eval mode can change a forward pass; computed once (dropout is set at build time)."""
        if self._mode_sensitive is None:
            self._mode_sensitive = self._find_mode_sensitivity()
        return self._mode_sensitive

    def _find_mode_sensitivity(self) -> bool:
        for module in self.model.modules():
            if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0:
                return True
            if getattr(module, "gradient_checkpointing", False) is True:  # transformers: only while training
                return True
        cfg = getattr(self.base_model, "config", None)
        for key, value in (cfg.to_dict() if hasattr(cfg, "to_dict") else {}).items():
            if (
                "dropout" in key
                and isinstance(value, (int, float))
                and not isinstance(value, bool)
                and value > 0
            ):
                return True
        return False

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike[str],
        config: PolicyConfig | None = None,
        *,
        dtype: torch.dtype | None = None,
        device: str | torch.device | None = None,
    ) -> LMPolicy:
        """Load tokenizer and model from a local Hugging Face folder (never downloads), then wrap them."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise LLMError(
                f"no Hugging Face model folder at {folder} (config.json missing); pass a local folder"
            )
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        kwargs = {"dtype": dtype} if dtype is not None else {}
        model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, **kwargs)
        if device is not None:
            model.to(device)
        return cls(tokenizer, model, config)

    # ----------------------------------------------------------------------------------- properties
    @property
    def is_lora(self) -> bool:
        return self.config.finetune == "lora"

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def context_length(self) -> int | None:
        """The model's maximum sequence length (``max_position_embeddings``), or None when unknown."""
        cfg = getattr(self.base_model, "config", None)
        for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = getattr(cfg, key, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    @property
    def base_model(self) -> torch.nn.Module:
        """The transformers model underneath (with LoRA layers injected when LoRA is on)."""
        return self.model.get_base_model() if self.is_lora else self.model

    @property
    def forward_model(self) -> torch.nn.Module:
        """The module a forward pass runs: the transformers model (LoRA layers injected, so the peft
        wrapper's per-call overhead is skipped), the frozen copy inside ``reference()`` for full
        fine-tuning, or the low-precision copy inside ``rollout_precision()``."""
        if self._rollout_active is not None:
            return self._rollout_active
        if self._use_reference and self._reference_model is not None:
            return self._reference_model
        return self.base_model

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters an optimiser should update (LoRA A and B, or every weight)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def num_parameters(self, trainable_only: bool = False) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad or not trainable_only)

    def train(self, mode: bool = True) -> LMPolicy:
        """Switch dropout on (training) or off; sampling always runs in eval mode and restores this."""
        self.model.train(mode)
        return self

    def eval(self) -> LMPolicy:
        return self.train(False)

    # ----------------------------------------------------------------------------------- reference
    @contextmanager
    def reference(self) -> Iterator[LMPolicy]:
        """Within this block the policy computes with ``pi_ref``: adapters disabled (LoRA) or the frozen copy."""
        if self.is_lora:
            with self.model.disable_adapter():
                yield self
            return
        if self._reference_model is None:
            raise ReferenceUnavailableError(
                "full fine-tuning was set up without a reference copy; build the policy with "
                "PolicyConfig(finetune='full', reference_copy=True) to use a KL term or reference()"
            )
        previous = self._use_reference
        self._use_reference = True
        try:
            yield self
        finally:
            self._use_reference = previous

    # ----------------------------------------------------------------------------------- log-probs
    def forward_logits(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        logits_to_keep: int = 0,
        past_key_values: Any = None,
        position_ids: torch.Tensor | None = None,
        fp32_head: bool | None = None,
    ) -> Any:
        """One forward pass with position ids taken from the (left-padded) attention mask.

        Returns the model output (``.logits`` of shape (B, T or logits_to_keep, V), float32 when
        ``fp32_head``); ``past_key_values`` (a transformers ``Cache``) is updated in place.
        """
        if position_ids is None:
            position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids,
        }
        if logits_to_keep:  # as positions: transformers then hands the head a contiguous copy of the
            # last rows, not a strided slice, which torch would multiply as a bmm over the head
            # expanded to the batch (8 reads of the 49k x 576 head in float32, 8 copies in bf16)
            kwargs["logits_to_keep"] = torch.arange(
                input_ids.shape[1] - logits_to_keep, input_ids.shape[1], device=input_ids.device
            )
        if past_key_values is not None:
            kwargs[self._cache_kw] = past_key_values
            kwargs["use_cache"] = True
        if self._rollout_active is not None:
            return self._rollout_active(**kwargs)  # its own dtype throughout, the head too
        if self._lora_layers and not self._fast_active and not self._use_reference:
            with self.fast_forward():
                return self._run(kwargs, fp32_head)
        return self._run(kwargs, fp32_head)

    def _run(self, kwargs: dict[str, Any], fp32_head: bool | None) -> Any:
        model = self.forward_model
        use_fp32 = self.config.fp32_head if fp32_head is None else fp32_head
        head = model.get_output_embeddings() if use_fp32 else None
        mixed = self._autocast_dtype is not None
        upcast_head = isinstance(head, torch.nn.Linear) and (mixed or head.weight.dtype != torch.float32)
        with (
            torch.autocast(self.device.type, dtype=self._autocast_dtype) if mixed else nullcontext(),
            _fp32_head(head) if upcast_head else nullcontext(),
        ):
            return model(**kwargs)

    def token_logprobs(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        completion_mask: torch.Tensor,
        *,
        temperature: float = 1.0,
        fp32_head: bool | None = None,
        group_size: int = 1,
    ) -> torch.Tensor:
        """``log pi(y_t | x, y_<t)`` of each completion token, teacher-forced, with gradients.

        input_ids, attention_mask: (B, P + C) prompt (left-padded) followed by completion; the last C
        columns are the completion. completion_mask: (B, C), 1 on real completion tokens (C may be 0).
        temperature: logits are divided by it before the log-softmax (the distribution sampled at that
        temperature). group_size: G > 1 when rows ``g*G .. g*G+G-1`` share their prompt columns (an RL
        group's completions of one prompt): each prompt is then computed once and its keys and values
        repeated for its G rows (gradients flow back through the repeat), the same numbers up to float
        rounding at a fraction of the cost (:meth:`_shared_prompt_logits`). Returns float32 (B, C), 0
        where ``completion_mask`` is 0.
        """
        if input_ids.shape != attention_mask.shape:
            raise LLMError(
                f"input_ids {tuple(input_ids.shape)} and attention_mask {tuple(attention_mask.shape)} differ"
            )
        if completion_mask.dim() != 2 or completion_mask.shape[0] != input_ids.shape[0]:
            raise LLMError(
                f"completion_mask must be (batch, completion tokens) with batch {input_ids.shape[0]}, "
                f"got {tuple(completion_mask.shape)}"
            )
        c = completion_mask.shape[1]
        if c >= input_ids.shape[1]:
            raise LLMError(
                f"completion_mask has {c} columns but input_ids only {input_ids.shape[1]}: the input "
                "must hold at least one prompt token before the completion"
            )
        if not temperature > 0:
            raise ConfigError(f"temperature={temperature!r} must be > 0")
        if not isinstance(group_size, int) or group_size < 1 or input_ids.shape[0] % group_size:
            raise LLMError(
                f"group_size={group_size!r} must be a positive integer dividing the {input_ids.shape[0]} rows"
            )
        if c == 0:
            return torch.zeros(input_ids.shape[0], 0, device=input_ids.device)
        if group_size > 1 and not self._checkpointing():
            logits = self._shared_prompt_logits(input_ids, attention_mask, c, group_size, fp32_head).float()
        else:
            out = self.forward_logits(input_ids, attention_mask, logits_to_keep=c + 1, fp32_head=fp32_head)
            logits = out.logits[:, -c - 1 : -1].float()
        if temperature != 1.0:
            logits = logits / temperature
        targets = input_ids[:, -c:]
        logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)
        return logp * completion_mask.to(logp.dtype)

    def _shared_prompt_logits(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        c: int,
        group_size: int,
        fp32_head: bool | None,
    ) -> torch.Tensor:
        """The logits that predict the last ``c`` tokens of each row, (B, c, V), with each group's prompt
        computed once: the prompt pass fills a key/value cache for one row per group, the cache is
        repeated for the group's rows (``batch_repeat_interleave``: autograd sums the rows' gradients
        into the one pass), and the completions run on it. Position ids are those of the whole row."""
        from transformers import DynamicCache

        p = input_ids.shape[1] - c
        prompts, prompt_mask = input_ids[::group_size, :p], attention_mask[::group_size, :p]
        if not (
            torch.equal(input_ids[:, :p], prompts.repeat_interleave(group_size, 0))
            and torch.equal(attention_mask[:, :p], prompt_mask.repeat_interleave(group_size, 0))
        ):
            raise LLMError(
                f"group_size={group_size}: rows of a group must share their prompt columns (the first "
                f"{p}); pass group_size=1 for rows of different prompts"
            )
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        first = self.forward_logits(
            prompts, prompt_mask, logits_to_keep=1, past_key_values=cache,
            position_ids=positions[::group_size, :p], fp32_head=fp32_head,
        ).logits.repeat_interleave(group_size, 0)  # fmt: skip
        if c == 1:
            return first
        cache.batch_repeat_interleave(group_size)
        rest = self.forward_logits(
            input_ids[:, p:-1], attention_mask[:, :-1], past_key_values=cache,
            position_ids=positions[:, p:-1], fp32_head=fp32_head,
        ).logits  # fmt: skip
        return torch.cat([first, rest], dim=1)

    def _checkpointing(self) -> bool:
        """Whether gradient checkpointing is on in training mode (transformers then keeps no cache)."""
        return bool(self.model.training) and any(
            getattr(m, "gradient_checkpointing", False) is True for m in self.model.modules()
        )

    # ----------------------------------------------------------------------------------- checkpoints
    def state_dict_to_save(self) -> tuple[str, dict[str, torch.Tensor], dict[str, str]]:
        """(name, tensors, tied) of what a checkpoint holds: the adapter, or the whole model."""
        if self.is_lora:
            from peft import get_peft_model_state_dict

            return "adapter", dict(get_peft_model_state_dict(self.model)), {}
        tensors: dict[str, torch.Tensor] = {}
        tied: dict[str, str] = {}
        seen: dict[tuple[int, torch.dtype, tuple[int, ...]], str] = {}
        for key, value in self.model.state_dict().items():
            ident = (value.data_ptr(), value.dtype, tuple(value.shape))
            if ident in seen:  # tied weights (e.g. lm_head = embed_tokens): safetensors refuses shared memory
                tied[key] = seen[ident]
                continue
            seen[ident] = key
            tensors[key] = value
        return "model", tensors, tied

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        metadata: dict[str, Any] | None = None,
        states: dict[str, Any] | None = None,
    ) -> Path:
        """Write the adapter (LoRA) or the full weights to the folder ``path``, atomically.

        ``states`` (optimiser state dicts and the like) and ``metadata`` (steps, metrics) are stored
        beside them. A crash mid-save leaves the previous checkpoint (or nothing), never half of one.
        """
        name, tensors, tied = self.state_dict_to_save()
        model_config = getattr(self.base_model, "config", None)
        config = {
            "policy": self.config.to_dict(),
            "model_config": json.loads(model_config.to_json_string()) if model_config is not None else None,
            "tied_weights": tied,
        }
        meta = {
            "algorithm": CHECKPOINT_KIND,
            "kind": name,
            "base_model": getattr(model_config, "_name_or_path", "") or "",
            **(metadata or {}),
        }
        return save_checkpoint(path, weights={name: tensors}, config=config, metadata=meta, states=states)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        tokenizer: Any,
        model: torch.nn.Module | None = None,
        *,
        return_states: bool = False,
    ) -> LMPolicy | tuple[LMPolicy, dict[str, Any]]:
        """Rebuild a policy saved with :meth:`save`.

        A LoRA checkpoint needs the base ``model`` it was trained on (the adapter is applied to it,
        in place). A full checkpoint rebuilds the model from its saved config when ``model`` is None,
        else loads the weights into ``model``. With ``return_states`` also returns the saved states.
        """
        ckpt = load_checkpoint(path, expected_algorithm=CHECKPOINT_KIND)
        try:
            config = PolicyConfig.from_dict(ckpt.config["policy"])
        except (KeyError, TypeError) as exc:
            raise CheckpointError(
                f"checkpoint {path} has no valid policy config ({exc}); re-save it"
            ) from exc
        if config.finetune == "lora":
            if model is None:
                raise LLMError(
                    f"{path} holds a LoRA adapter: pass the base model it was trained on, "
                    "LMPolicy.load(path, tokenizer, base_model)"
                )
            tensors = ckpt.weights.get("adapter")
            if tensors is None:
                raise CheckpointError(f"checkpoint {path} has no weights/adapter.safetensors; re-save it")
            policy = cls(tokenizer, model, config)
            from peft import set_peft_model_state_dict

            result = set_peft_model_state_dict(policy.model, tensors)
            unexpected = list(getattr(result, "unexpected_keys", []) or [])
            if unexpected:
                raise CheckpointError(
                    f"adapter in {path} does not fit this model (unexpected keys {unexpected[:3]}...); "
                    "load it onto the base model it was trained on"
                )
        else:
            tensors = ckpt.weights.get("model")
            if tensors is None:
                raise CheckpointError(f"checkpoint {path} has no weights/model.safetensors; re-save it")
            if model is None:
                model = _model_from_config(ckpt.config.get("model_config"), path)
            tensors = dict(tensors)
            for key, source in (ckpt.config.get("tied_weights") or {}).items():
                tensors[key] = tensors[source]
            try:
                model.load_state_dict(tensors, strict=True)
            except RuntimeError as exc:
                raise CheckpointError(f"weights in {path} do not fit the model: {exc}") from exc
            # With reference_copy the reference of a reloaded full fine-tune is the loaded weights.
            policy = cls(tokenizer, model, config)
        return (policy, ckpt.states) if return_states else policy

    def load_weights_from(self, path: str | os.PathLike[str]) -> None:
        """:meth:`load_trained_weights` from the checkpoint folder ``path`` (:meth:`save`'s or a trainer's)."""
        self.load_trained_weights(load_checkpoint(path, expected_algorithm=CHECKPOINT_KIND), path)

    def load_trained_weights(self, checkpoint: Checkpoint, path: str | os.PathLike[str]) -> None:
        """Load a trainer checkpoint's weights (``checkpoint``, read from ``path``) into this fresh policy.

        The policy must be built the way the saved one was (same base model and ``PolicyConfig``
        finetune mode, rank, alpha and targets); the adapter (or the full weights) is loaded in place,
        so the reference stays the base model. A mismatch is a ``CheckpointError`` naming the field.
        """
        saved = checkpoint.config.get("policy") or {}
        mine = self.config.to_dict()
        for key in ("finetune", "lora_rank", "lora_alpha", "target_modules"):
            if key in saved and saved[key] != mine[key]:
                raise CheckpointError(
                    f"{path} was trained with PolicyConfig.{key}={saved[key]!r} but the policy passed has "
                    f"{mine[key]!r}; build the policy with the saved PolicyConfig"
                )
        unexpected: list[str] = []
        try:
            if self.is_lora:
                from peft import set_peft_model_state_dict

                result = set_peft_model_state_dict(self.model, checkpoint.weights["adapter"])
                unexpected = list(getattr(result, "unexpected_keys", []) or [])
            else:
                tensors = dict(checkpoint.weights["model"])
                for key, source in (checkpoint.config.get("tied_weights") or {}).items():
                    tensors[key] = tensors[source]
                self.model.load_state_dict(tensors, strict=True)
        except (KeyError, RuntimeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {path} does not fit this policy: {exc}") from exc
        if unexpected:
            raise CheckpointError(f"the adapter in {path} does not fit this policy's model")

    # ----------------------------------------------------------------------------------- export
    def merge(self) -> torch.nn.Module:
        """A standalone transformers model with the LoRA update folded into the weights (a copy).

        For full fine-tuning returns a copy of the model. The policy itself is left unchanged.
        """
        if not self.is_lora:
            return copy.deepcopy(self.model).eval()
        return copy.deepcopy(self.model).merge_and_unload().eval()

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Write the merged model and the tokenizer as a Hugging Face folder (``from_pretrained``), atomically."""
        import shutil
        import uuid

        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            self.merge().save_pretrained(str(tmp))
            self.tokenizer.save_pretrained(str(tmp))
            replace_folder(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    def encode_prompts(self, prompts: Sequence[Any], *, chat_template: bool = True) -> list[list[int]]:
        """Token ids of each prompt: a string, or a list of chat messages ``{"role", "content"}``.

        With ``chat_template`` (default, when the tokenizer has one) a string becomes one user turn and
        the assistant's generation prompt is appended; otherwise the text is tokenized as is.
        """
        use_template = chat_template and getattr(self.tokenizer, "chat_template", None)
        ids: list[list[int]] = []
        for prompt in prompts:
            if isinstance(prompt, str):
                messages = [{"role": "user", "content": prompt}]
            elif isinstance(prompt, (list, tuple)) and all(isinstance(m, dict) for m in prompt):
                messages = list(prompt)
            else:
                raise LLMError(
                    f"a prompt must be a string or a list of chat messages, got {type(prompt).__name__}"
                )
            if use_template:
                text = self.tokenizer.apply_chat_template(
                    messages, add_generation_prompt=True, tokenize=False
                )
                ids.append(list(self.tokenizer(text, add_special_tokens=False)["input_ids"]))
            else:
                if not isinstance(prompt, str):
                    raise LLMError("chat messages need a tokenizer with a chat template; pass plain strings")
                ids.append(list(self.tokenizer(prompt)["input_ids"]))
        return ids


def _model_from_config(model_config: dict[str, Any] | None, path: Any) -> torch.nn.Module:
    from transformers import AutoConfig, AutoModelForCausalLM

    if not model_config or "model_type" not in model_config:
        raise CheckpointError(
            f"checkpoint {path} does not record its model config; pass the model to load into"
        )
    data = dict(model_config)
    config = AutoConfig.for_model(data.pop("model_type"), **data)
    return AutoModelForCausalLM.from_config(config)


class _LeanLoraLinear(torch.nn.Module):
    """peft's ``lora.Linear.forward`` for one active vanilla adapter, without its per-call checks:
    ``base(x) + lora_B(lora_A(dropout(x))) * scaling``, the same operations in the same order."""

    def __init__(self, parts: tuple[torch.nn.Module, ...], scaling: float) -> None:
        super().__init__()
        self.parts, self.scaling = parts, scaling  # a tuple: not registered as submodules
        self.base, self.lora_a, self.lora_b = parts[0], parts[1], parts[2]
        self.dropout = None if isinstance(parts[3], torch.nn.Identity) else parts[3]

    def fits(self, parts: tuple[torch.nn.Module, ...], scaling: float) -> bool:
        return scaling == self.scaling and all(a is b for a, b in zip(parts, self.parts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        base, lora_a, lora_b = self.base, self.lora_a, self.lora_b
        result = F.linear(x, base.weight, base.bias)
        dtype = result.dtype
        if x.dtype != lora_a.weight.dtype:  # peft's _cast_input_dtype
            x = x.to(lora_a.weight.dtype)
        if self.dropout is not None:
            x = self.dropout(x)
        result = (
            result
            + F.linear(F.linear(x, lora_a.weight, lora_a.bias), lora_b.weight, lora_b.bias) * self.scaling
        )
        return result.to(dtype)


class _MergedLinear(_LeanLoraLinear):
    """A LoRA layer folded into one weight, ``W + s B A`` (peft's ``get_delta_weight``), for inference.

    The merged weight is a new tensor made by :meth:`refresh`, stored transposed (``in x out``,
    contiguous), so a forward pass is ``x @ (W + s B A)^T`` as a plain matrix product: for the few rows
    of a decode step torch's kernel for that layout took 0.6x the time of ``F.linear``'s on this CPU
    (SmolLM2's projections at 8 rows, one thread). ``W`` itself is never written.
    """

    def refresh(self) -> None:
        with torch.no_grad():
            base, lora_a, lora_b = self.base, self.lora_a, self.lora_b
            weight = base.weight
            self.merged_t = weight.new_empty((weight.shape[1], weight.shape[0]))
            torch.addmm(
                weight.t(), lora_a.weight.t(), lora_b.weight.t(), alpha=self.scaling, out=self.merged_t
            )
            self.merged_bias = _merged_bias(base, lora_b, self.scaling)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x @ self.merged_t
        return out if self.merged_bias is None else out + self.merged_bias


class _RolloutCopy:
    """A copy of a policy's transformers model in another dtype, each LoRA layer a plain ``Linear``
    that :meth:`refresh` fills with the merged weight; every trainable weight is copied again too."""

    def __init__(self, policy: LMPolicy, dtype: torch.dtype) -> None:
        base = policy.base_model
        lora_paths = {id(layer): path for path, layer in base.named_modules()}
        for children, name, layer in policy._lora_layers:  # deep-copy the base layers, not the adapters
            children[name] = layer.base_layer
        try:
            self.model = copy.deepcopy(base).to(dtype).eval()
        finally:
            for children, name, layer in policy._lora_layers:
                children[name] = layer
        self.model.requires_grad_(False)
        self.lora_targets = [
            self.model.get_submodule(lora_paths[id(layer)]) for _, _, layer in policy._lora_layers
        ]
        copies = dict(self.model.named_parameters(remove_duplicate=False))
        self.trainable = [
            (copies[name], param)
            for name, param in base.named_parameters(remove_duplicate=False)
            if param.requires_grad and name in copies
        ]

    @torch.no_grad()
    def refresh(self, lora_layers: list[torch.nn.Module]) -> None:
        """Copy the trainable weights, and each LoRA layer's ``W + s B A`` (merged in float32 in a
        reused buffer, then cast), into the copy."""
        for target, source in self.trainable:
            target.copy_(source)
        buffers: dict[tuple[torch.Size, torch.dtype], torch.Tensor] = {}
        for target, layer in zip(self.lora_targets, lora_layers):
            name = _vanilla_adapter(layer)
            base = layer.base_layer
            if name is None or layer.lora_A[name].weight.dtype != base.weight.dtype:
                raise ConfigError(
                    "rollouts in another dtype need plain LoRA adapters in the base weights' dtype, "
                    "one active (not merged, not disabled, no DoRA); set rollout_dtype to None"
                )
            a, b, scaling = layer.lora_A[name], layer.lora_B[name], layer.scaling[name]
            key = (base.weight.shape, base.weight.dtype)
            buffer = buffers.get(key)
            if buffer is None:
                buffer = buffers[key] = torch.empty_like(base.weight)
            torch.addmm(base.weight, b.weight, a.weight, alpha=scaling, out=buffer)
            target.weight.copy_(buffer)
            bias = _merged_bias(base, b, scaling)
            if bias is not None and target.bias is None:
                target.bias = torch.nn.Parameter(bias.to(target.weight.dtype), requires_grad=False)
            elif bias is not None:
                target.bias.copy_(bias)


def _merged_bias(base: torch.nn.Linear, lora_b: torch.nn.Linear, scaling: float) -> torch.Tensor | None:
    """The bias of a LoRA layer folded into one ``Linear``: the base's, plus ``s * b_B`` with peft's
    ``lora_bias``."""
    if lora_b.bias is None:
        return base.bias
    return lora_b.bias * scaling if base.bias is None else base.bias + lora_b.bias * scaling


def _vanilla_adapter(layer: torch.nn.Module) -> str | None:
    """The name of a peft LoRA layer's one active plain adapter on a ``Linear``, or None when the
    layer is in another state (adapters disabled or merged, several active, DoRA and other variants,
    fan_in_fan_out, a non-Linear base or adapter)."""
    active = layer.active_adapters
    if (
        layer.disable_adapters
        or layer.merged
        or len(active) != 1
        or active[0] not in layer.lora_A
        or active[0] in layer.lora_variant
        or getattr(layer, "fan_in_fan_out", False)
        or type(layer.base_layer) is not torch.nn.Linear
        or type(layer.lora_A[active[0]]) is not torch.nn.Linear
        or type(layer.lora_B[active[0]]) is not torch.nn.Linear
    ):
        return None
    return active[0]


@contextmanager
def _fp32_head(head: torch.nn.Linear) -> Iterator[None]:
    """Compute the output projection in float32, also under autocast (weights upcast on the fly,
    gradients flow back); the head's own forward is replaced meanwhile, so it does not run twice."""

    def forward(x: torch.Tensor) -> torch.Tensor:
        bias = head.bias.float() if head.bias is not None else None
        with torch.autocast(x.device.type, enabled=False):
            return F.linear(x.float(), head.weight.float(), bias)

    head.forward = forward
    try:
        yield
    finally:
        del head.forward  # back to the class's forward
