"""Tinker sampler weights are OpenAI models: what a tenant saves with the tinker SDK's
``save_weights_for_sampler`` is listed by the official openai SDK's ``models.list()`` under its
``tinker://`` path and answers ``chat.completions`` with the numbers Tinker's own sampler gives, on one
live server; another tenant sees and reaches none of it."""

from __future__ import annotations

import numpy as np
import pytest
import tinker
from tinker import types
from tinker_server import BASE

openai = pytest.importorskip("openai")

SENTENCES = ["the cat sat on the mat .", "a dog ran under the tree .", "the bird flew over the roof ."]
MESSAGES = [{"role": "user", "content": "the cat sat"}]


def openai_client(server, tinker_key: str) -> openai.OpenAI:
    """The same tenant's key for the OpenAI API (without the tinker SDK's ``tml-`` prefix)."""
    key = tinker_key.removeprefix("tml-")
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=120)


def train(training, tokenizer, steps: int) -> None:
    batch = []
    for text in SENTENCES:
        ids = tokenizer.encode(text)
        batch.append(
            types.Datum(
                model_input=types.ModelInput.from_ints(ids[:-1]),
                loss_fn_inputs={"target_tokens": ids[1:], "weights": [1.0] * (len(ids) - 1)},
            )
        )
    for _ in range(steps):
        training.forward_backward(batch, "cross_entropy").result()
        training.optim_step(types.AdamParams(learning_rate=2e-2)).result()


def chat_prompt(tokenizer) -> list[int]:
    text = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def greedy_chat(client: openai.OpenAI, model: str) -> tuple[str, list[float]]:
    reply = client.chat.completions.create(
        model=model, messages=MESSAGES, max_tokens=8, temperature=0, logprobs=True
    )
    return reply.choices[0].message.content, [t.logprob for t in reply.choices[0].logprobs.content]


def tinker_greedy(service_client, path: str, prompt: list[int]) -> list[float]:
    sampler = service_client.create_sampling_client(model_path=path).result()
    params = types.SamplingParams(max_tokens=8, temperature=0.0, stop=[])
    return sampler.sample(types.ModelInput.from_ints(prompt), 1, params).result().sequences[0].logprobs


def test_sampler_weights_answer_chat_completions_through_the_openai_sdk(tinker_server, service_client):
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=7).result()
    tokenizer = training.get_tokenizer()
    train(training, tokenizer, steps=4)
    path = training.save_weights_for_sampler("chat").result().path
    client = openai_client(tinker_server, tinker_server.last_key)

    ids = [m.id for m in client.models.list()]
    assert ids[0] == BASE and path in ids
    _, base_logprobs = greedy_chat(client, BASE)
    text, logprobs = greedy_chat(client, path)
    assert text and len(logprobs) == 8
    # the OpenAI API's answer is the one Tinker's own sampler gives for the same chat prompt
    expected = tinker_greedy(service_client, path, chat_prompt(tokenizer))
    np.testing.assert_allclose(logprobs, expected, rtol=1e-4, atol=1e-4)
    assert not np.allclose(logprobs, base_logprobs, atol=1e-3)  # the adapter is applied

    # saving the same name again serves the new weights
    train(training, tokenizer, steps=3)
    assert training.save_weights_for_sampler("chat").result().path == path
    _, newer = greedy_chat(client, path)
    np.testing.assert_allclose(newer, tinker_greedy(service_client, path, chat_prompt(tokenizer)), atol=1e-4)
    assert not np.allclose(newer, logprobs, atol=1e-3)


def test_training_states_are_not_models_and_other_tenants_see_nothing(tinker_server, service_client):
    training = service_client.create_lora_training_client(base_model=BASE, rank=4, seed=8).result()
    sampler_path = training.save_weights_for_sampler("mine").result().path
    state_path = training.save_state("state").result().path
    owner = openai_client(tinker_server, tinker_server.last_key)
    assert state_path not in [m.id for m in owner.models.list()]
    with pytest.raises(openai.NotFoundError):
        owner.chat.completions.create(model=state_path, messages=MESSAGES, max_tokens=2)

    other_key = tinker_server.tenant_key("other")
    other = openai_client(tinker_server, other_key)
    assert sampler_path not in [m.id for m in other.models.list()]
    with pytest.raises(openai.NotFoundError) as caught:
        other.chat.completions.create(model=sampler_path, messages=MESSAGES, max_tokens=2)
    assert caught.value.body["code"] == "model_not_found"
    with tinker.ServiceClient(base_url=tinker_server.url, api_key=other_key) as foreign:  # nor through Tinker
        with pytest.raises(tinker.BadRequestError, match="no such checkpoint"):
            foreign.create_sampling_client(model_path=sampler_path).result()


def test_weights_of_another_base_model_are_refused_by_name(tmp_path, tiny_model_folder):
    """Sampler weights trained on a base model the OpenAI API does not serve: a 400 ``model_not_served``
    that names both base models and the fix (sample them with the Tinker SDK), never a 500 or a
    silent answer from the wrong base."""
    import shutil

    from tinker_server import TinkerServer

    other = shutil.copytree(tiny_model_folder, tmp_path / "other-llama")
    env = {"RESONANCE_TINKER_BASE_MODELS": f"{BASE}={tiny_model_folder};other-llama={other}"}
    (tmp_path / "home").mkdir()
    server = TinkerServer(tmp_path / "home", tiny_model_folder, env=env).start()
    try:
        client = server.service_client()
        training = client.create_lora_training_client(base_model="other-llama", rank=4, seed=3).result()
        path = training.save_weights_for_sampler("elsewhere").result().path
        chat = openai_client(server, server.last_key)
        with pytest.raises(openai.BadRequestError) as caught:
            chat.chat.completions.create(model=path, messages=MESSAGES, max_tokens=2)
        error = caught.value.body
        assert error["code"] == "model_not_served" and error["param"] == "model"
        assert str(other) in error["message"] and "Tinker SDK" in error["message"]
        sampler = client.create_sampling_client(model_path=path).result()  # Tinker still samples it
        params = types.SamplingParams(max_tokens=2, temperature=0.0, stop=[])
        assert (
            len(sampler.sample(types.ModelInput.from_ints([1, 2, 3]), 1, params).result().sequences[0].tokens)
            == 2
        )
    finally:
        server.stop()
