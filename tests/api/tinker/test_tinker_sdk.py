"""The official tinker SDK's documented loops against a real ``resonance serve`` on 127.0.0.1 (tiny random
Llama): supervised fine-tuning, an RL loop, save and resume, sampler weights, concurrent clients."""

from __future__ import annotations

import numpy as np
import pytest
import tinker
from tinker import types
from tinker_server import BASE

SENTENCES = [
    "the cat sat on the mat .",
    "a dog ran under the tree .",
    "the bird flew over the roof .",
    "one two three four five six",
]


def sft_datum(tokenizer, text: str) -> types.Datum:
    """The SDK's SFT datum: input tokens[:-1], targets tokens[1:], all weighted."""
    ids = tokenizer.encode(text)
    return types.Datum(
        model_input=types.ModelInput.from_ints(ids[:-1]),
        loss_fn_inputs={"target_tokens": ids[1:], "weights": [1.0] * (len(ids) - 1)},
    )


def mean_nll(result: types.ForwardBackwardOutput, batch: list[types.Datum]) -> float:
    """The cookbook's compute_mean_nll: -sum(logprobs * weights) / sum(weights)."""
    logprobs = np.concatenate([out["logprobs"].to_numpy() for out in result.loss_fn_outputs])
    weights = np.concatenate([d.loss_fn_inputs["weights"].to_numpy() for d in batch])
    return float(-(logprobs * weights).sum() / weights.sum())


def test_sft_loop_lowers_the_loss_and_reports_logprobs_and_loss_sum(service_client):
    training = service_client.create_lora_training_client(base_model=BASE, rank=8, seed=0).result()
    tokenizer = training.get_tokenizer()  # loads offline from the folder get_info names
    batch = [sft_datum(tokenizer, s) for s in SENTENCES]
    losses = []
    for _ in range(12):
        fwdbwd = training.forward_backward(batch, "cross_entropy")
        optim = training.optim_step(types.AdamParams(learning_rate=2e-2))
        result = fwdbwd.result()
        optim.result()
        losses.append(mean_nll(result, batch))
        assert [len(out["logprobs"].tolist()) for out in result.loss_fn_outputs] == [
            len(d.loss_fn_inputs["target_tokens"].tolist()) for d in batch
        ]
        total_weight = sum(len(d.loss_fn_inputs["weights"].tolist()) for d in batch)
        assert result.metrics["loss:sum"] == pytest.approx(losses[-1] * total_weight, rel=1e-5)
    assert losses[-1] < 0.5 * losses[0], losses


def test_forward_backward_custom_runs_a_client_side_loss(service_client):
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=1).result()
    tokenizer = training.get_tokenizer()
    batch = [sft_datum(tokenizer, s) for s in SENTENCES[:2]]

    def negative_mean_logprob(data, logprobs_list):
        loss = -sum(lp.sum() for lp in logprobs_list) / sum(len(lp) for lp in logprobs_list)
        return loss, {"custom_nll": float(loss)}

    first = training.forward_backward_custom(batch, negative_mean_logprob).result()
    training.optim_step(types.AdamParams(learning_rate=5e-2)).result()
    second = training.forward_backward_custom(batch, negative_mean_logprob).result()
    assert second.metrics["custom_nll"] < first.metrics["custom_nll"]


def test_chunked_batches_give_the_same_result_as_one_request(tinker_server, service_client):
    """More datums than one request may carry (the server's client config caps a chunk's bytes): the SDK
    sends chunks concurrently, first chunk last; the server runs them in seq_id order."""
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=2).result()
    tokenizer = training.get_tokenizer()
    batch = [sft_datum(tokenizer, SENTENCES[i % 4]) for i in range(1100)]  # > fwdbwd_max_chunk_len 1024
    out = training.forward(batch, "cross_entropy").result()
    assert len(out.loss_fn_outputs) == 1100
    single = training.forward(batch[:4], "cross_entropy").result()
    for i in range(4):
        np.testing.assert_allclose(
            out.loss_fn_outputs[i]["logprobs"].to_numpy(),
            single.loss_fn_outputs[i]["logprobs"].to_numpy(),
            rtol=1e-5,
            atol=1e-6,
        )
    assert out.metrics["loss:sum"] == pytest.approx(275 * single.metrics["loss:sum"], rel=1e-4)


GOOD_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "zero"]


def test_rl_loop_with_importance_sampling_raises_the_reward(service_client):
    """The cookbook's rl_loop: sample a group from the current weights, score it, centre the rewards per
    group, train with importance_sampling on the sampler's logprobs. Reward: the share of number words."""
    training = service_client.create_lora_training_client(base_model=BASE, rank=8, seed=0).result()
    tokenizer = training.get_tokenizer()
    good = {tokenizer.convert_tokens_to_ids(w) for w in GOOD_WORDS}
    prompt = tokenizer.encode("<|im_start|> user hello world <|im_end|> <|im_start|> assistant")
    rewards_by_step = []
    for step in range(14):
        sampler = training.save_weights_and_get_sampling_client().result()
        result = sampler.sample(
            types.ModelInput.from_ints(prompt), 16, types.SamplingParams(max_tokens=6, seed=step, stop=[])
        ).result()
        rewards = np.array([np.mean([t in good for t in seq.tokens]) for seq in result.sequences])
        rewards_by_step.append(rewards.mean())
        advantages = rewards - rewards.mean()
        batch = []
        for seq, advantage in zip(result.sequences, advantages, strict=True):
            assert seq.logprobs is not None and len(seq.logprobs) == len(seq.tokens)
            tokens = prompt + seq.tokens
            n_prompt = len(prompt) - 1
            batch.append(
                types.Datum(
                    model_input=types.ModelInput.from_ints(tokens[:-1]),
                    loss_fn_inputs={
                        "target_tokens": tokens[1:],
                        "logprobs": [0.0] * n_prompt + list(seq.logprobs),
                        "advantages": [0.0] * n_prompt + [float(advantage)] * len(seq.tokens),
                    },
                )
            )
        training.forward_backward(batch, "importance_sampling").result()
        training.optim_step(types.AdamParams(learning_rate=3e-2)).result()
    early, late = np.mean(rewards_by_step[:3]), np.mean(rewards_by_step[-3:])
    assert late > early + 0.2, rewards_by_step


@pytest.mark.parametrize(
    ("loss_fn", "config"),
    [
        ("ppo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}),
        ("cispo", None),
        ("dro", {"beta": 0.1}),
    ],
)
def test_rl_losses_match_their_definitions_at_the_sampler(service_client, loss_fn, config):
    """At the sampling weights the ratio is 1: ppo and cispo reduce to -sum(A) and -sum(logp A)."""
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=3).result()
    tokenizer = training.get_tokenizer()
    ids = tokenizer.encode("the cat sat on the mat .")
    forward = training.forward([sft_datum(tokenizer, "the cat sat on the mat .")], "cross_entropy").result()
    logprobs = forward.loss_fn_outputs[0]["logprobs"].to_numpy()
    advantages = np.linspace(-1, 1, len(ids) - 1).astype(np.float32)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(ids[:-1]),
        loss_fn_inputs={
            "target_tokens": ids[1:],
            "logprobs": logprobs.tolist(),
            "advantages": advantages.tolist(),
        },
    )
    out = training.forward_backward([datum], loss_fn, loss_fn_config=config).result()
    expected = {
        "ppo": -advantages.sum(),
        "cispo": -(logprobs * advantages).sum(),
        "dro": -(logprobs * advantages).sum(),
    }
    assert out.metrics["loss:sum"] == pytest.approx(float(expected[loss_fn]), rel=1e-4, abs=1e-4)
    training.optim_step(types.AdamParams(learning_rate=1e-2, weight_decay=0.01, grad_clip_norm=1.0)).result()


def _step(training, batch, lr=2e-2):
    fwdbwd = training.forward_backward(batch, "cross_entropy").result()
    training.optim_step(types.AdamParams(learning_rate=lr, beta1=0.8, beta2=0.9, eps=1e-8)).result()
    return fwdbwd


def test_save_state_and_resume_continue_bitwise(tinker_server, service_client):
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=5).result()
    tokenizer = training.get_tokenizer()
    batch = [sft_datum(tokenizer, s) for s in SENTENCES]
    for _ in range(3):
        _step(training, batch)
    path = training.save_state("step-3").result().path
    assert path.startswith("tinker://") and path.endswith("/weights/step-3")
    original = [_step(training, batch) for _ in range(2)]
    after = training.forward(batch, "cross_entropy").result()

    resumed = service_client.create_training_client_from_state_with_optimizer(path).result()
    again = [_step(resumed, batch) for _ in range(2)]
    after_again = resumed.forward(batch, "cross_entropy").result()
    for a, b in zip(original + [after], again + [after_again], strict=True):
        assert a.metrics["loss:sum"] == b.metrics["loss:sum"]
        for x, y in zip(a.loss_fn_outputs, b.loss_fn_outputs, strict=True):
            assert np.array_equal(x["logprobs"].to_numpy(), y["logprobs"].to_numpy())

    weights_only = service_client.create_training_client_from_state(path).result()
    restarted_adam = _step(weights_only, batch)
    assert restarted_adam.metrics["loss:sum"] == original[0].metrics["loss:sum"]  # same weights at step 4
    assert _step(weights_only, batch).metrics["loss:sum"] != original[1].metrics["loss:sum"]  # fresh moments

    training.load_state(path).result()  # the deprecated in-place form: weights back to step 3
    assert (
        training.forward(batch, "cross_entropy").result().metrics["loss:sum"]
        == original[0].metrics["loss:sum"]
    )

    rest = tinker.RestClient(base_url=tinker_server.url, api_key=tinker_server.last_key)
    checkpoints = rest.list_checkpoints(training.model_id).result().checkpoints
    assert [c.tinker_path for c in checkpoints] == [path]
    runs = rest.list_training_runs().result().training_runs
    assert {r.training_run_id for r in runs} >= {training.model_id, resumed.model_id}


def test_sampler_weights_sample_the_trained_adapter(service_client):
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=6).result()
    tokenizer = training.get_tokenizer()
    batch = [sft_datum(tokenizer, s) for s in SENTENCES]
    for _ in range(4):
        _step(training, batch)
    path = training.save_weights_for_sampler("final").result().path
    assert path.endswith("/sampler_weights/final")
    sampler = service_client.create_sampling_client(model_path=path).result()
    prompt = types.ModelInput.from_ints(tokenizer.encode("the cat sat"))
    params = types.SamplingParams(max_tokens=8, temperature=0.7, seed=11, stop=[])
    first = sampler.sample(prompt, 3, params).result()
    assert len(first.sequences) == 3 and all(len(s.tokens) == 8 for s in first.sequences)
    assert all(len(s.logprobs) == len(s.tokens) for s in first.sequences)
    assert all(s.stop_reason == "length" for s in first.sequences)
    assert len({s.sequence_id for s in first.sequences}) == 3
    assert [s.tokens for s in sampler.sample(prompt, 3, params).result().sequences] == [
        s.tokens for s in first.sequences
    ]

    ids = tokenizer.encode("the cat sat on the mat .")
    prompt_logprobs = sampler.compute_logprobs(types.ModelInput.from_ints(ids)).result()
    trained = training.forward([sft_datum(tokenizer, "the cat sat on the mat .")], "cross_entropy").result()
    assert prompt_logprobs[0] is None
    np.testing.assert_allclose(
        prompt_logprobs[1:], trained.loss_fn_outputs[0]["logprobs"].to_numpy(), rtol=1e-4, atol=1e-5
    )

    base_sampler = service_client.create_sampling_client(base_model=BASE).result()
    base_logprobs = base_sampler.compute_logprobs(types.ModelInput.from_ints(ids)).result()
    assert not np.allclose(base_logprobs[1:], prompt_logprobs[1:], atol=1e-3)  # the adapter changed something

    tail = sampler.compute_logprobs(types.ModelInput.from_ints(ids), prompt_logprobs_last_n=3).result()
    assert tail[:-3] == [None] * (len(ids) - 3)  # the SDK checks that nothing before the tail is scored
    np.testing.assert_allclose(tail[-3:], prompt_logprobs[-3:], rtol=1e-4, atol=1e-5)
    with pytest.raises(tinker.RequestFailedError, match="prompt_logprobs_last_n=.*between 1 and"):
        sampler.compute_logprobs(types.ModelInput.from_ints(ids), prompt_logprobs_last_n=len(ids)).result()


def test_stop_sequences_end_sampling(service_client, tiny_model_folder):
    from transformers import AutoTokenizer

    sampler = service_client.create_sampling_client(base_model=BASE).result()
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_folder))
    prompt = types.ModelInput.from_ints(tokenizer.encode("the cat"))
    free = (
        sampler.sample(prompt, 1, types.SamplingParams(max_tokens=12, seed=3, stop=[])).result().sequences[0]
    )
    stop_token = free.tokens[2]
    stopped = (
        sampler.sample(prompt, 1, types.SamplingParams(max_tokens=12, seed=3, stop=[stop_token]))
        .result()
        .sequences[0]
    )
    assert stopped.tokens == free.tokens[: free.tokens.index(stop_token) + 1]
    assert stopped.stop_reason == "stop"


def test_two_clients_at_once_train_independently_in_shared_batches(service_client):
    """Two runs on one base model: their requests are in flight together (batched by the server), each
    run learns only from its own data, and equal seeds and data give equal results."""
    a = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=7).result()
    b = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=7).result()
    c = service_client.create_lora_training_client(
        base_model=BASE, rank=8, seed=8, train_unembed=False
    ).result()
    tokenizer = a.get_tokenizer()
    batch = [sft_datum(tokenizer, s) for s in SENTENCES]
    other = [sft_datum(tokenizer, "red blue green red blue green")]
    history: dict[str, list[float]] = {"a": [], "b": [], "c": []}
    for _ in range(8):
        futures = {
            name: client.forward_backward(data, "cross_entropy")
            for name, client, data in (("a", a, batch), ("b", b, batch), ("c", c, other))
        }
        optims = [client.optim_step(types.AdamParams(learning_rate=2e-2)) for client in (a, b, c)]
        for name, future in futures.items():
            history[name].append(future.result().metrics["loss:sum"])
        for optim in optims:
            optim.result()
    assert history["a"] == pytest.approx(history["b"], rel=1e-5)
    assert history["a"][-1] < 0.8 * history["a"][0] and history["c"][-1] < 0.8 * history["c"][0]
