"""Bad requests fail their future with category "user" and a message naming the field (the SDK raises
RequestFailedError at once, no retry loop); tenants never see each other's runs, checkpoints or futures;
per-tenant limits; keys."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest
import tinker
from tinker import types
from tinker.types import RequestErrorCategory
from tinker_server import BASE, TinkerServer


def datum(tokens, **inputs) -> types.Datum:
    return types.Datum(model_input=types.ModelInput.from_ints(tokens), loss_fn_inputs=inputs)


def user_error(future, *words: str) -> str:
    started = time.monotonic()
    with pytest.raises(tinker.RequestFailedError) as caught:
        future.result()
    assert time.monotonic() - started < 30, "a bad request must fail fast, not sit in a retry loop"
    assert caught.value.category == RequestErrorCategory.User, caught.value
    for word in words:
        assert word in caught.value.message, caught.value.message
    return caught.value.message


@pytest.fixture
def training(service_client):
    return service_client.create_lora_training_client(base_model=BASE, rank=4, seed=0).result()


def test_an_unknown_base_model_fails_naming_the_field(service_client):
    message = user_error(
        service_client.create_lora_training_client(base_model="no/such-model", rank=4), "base_model"
    )
    assert BASE in message  # names what is served


def test_bad_loss_requests_name_the_field(training):
    ids = [5, 6, 7, 8]
    user_error(training.forward_backward([datum(ids, target_tokens=ids)], "gspo"), "loss_fn", "gspo")
    user_error(
        training.forward_backward([datum(ids, target_tokens=ids, advantages=[1.0] * 4)], "cross_entropy"),
        "advantages",
    )
    user_error(training.forward_backward([datum(ids, target_tokens=ids)], "importance_sampling"), "logprobs")
    user_error(
        training.forward_backward([datum(ids, target_tokens=ids, weights=[1.0] * 3)], "cross_entropy"),
        "weights",
        "one value per input token",
    )
    user_error(
        training.forward_backward(
            [datum(ids, target_tokens=ids, logprobs=[0.0] * 4, advantages=[1.0] * 4)],
            "ppo",
            loss_fn_config={"clip": 0.2},
        ),
        "loss_fn_config",
        "clip",
    )
    user_error(
        training.forward_backward([datum(ids, target_tokens=[5, 6, 7, 10_000])], "cross_entropy"),
        "target_tokens",
    )
    long = list(range(5, 45)) * 4  # 160 tokens, over the tiny model's 128
    user_error(
        training.forward_backward([datum(long, target_tokens=long)], "cross_entropy"), "model_input", "128"
    )
    # the run is unharmed: a good request still works
    assert (
        training.forward_backward([datum(ids, target_tokens=ids)], "cross_entropy")
        .result()
        .metrics["loss:sum"]
        > 0
    )


def test_bad_paths_and_sampling_params_fail_cleanly(service_client, training):
    user_error(training.save_state("no/slashes"), "path")
    user_error(
        service_client.create_training_client_from_state("tinker://nope/weights/x"),
        "path",
        "no such checkpoint",
    )
    user_error(service_client.create_training_client_from_state("s3://bucket/x"), "path")
    sampler = training.save_weights_and_get_sampling_client().result()
    prompt = types.ModelInput.from_ints([5, 6, 7])
    user_error(sampler.sample(prompt, 1, types.SamplingParams(max_tokens=500)), "max_tokens")


def test_tenants_never_see_each_other(tinker_server):
    key_a, key_b = tinker_server.tenant_key("a"), tinker_server.tenant_key("b")
    a = tinker_server.service_client(key_a)
    b = tinker_server.service_client(key_b)
    run = a.create_lora_training_client(base_model=BASE, rank=4, seed=0).result()
    ids = [5, 6, 7, 8]
    pending = run.forward_backward([datum(ids, target_tokens=ids)], "cross_entropy")
    pending.result()
    path = run.save_state("mine").result().path
    sampler_path = run.save_weights_for_sampler("mine").result().path

    user_error(b.create_training_client_from_state_with_optimizer(path), "no such checkpoint")
    with pytest.raises(tinker.BadRequestError, match="no such checkpoint"):
        b.create_sampling_client(model_path=sampler_path).result()
    rest_b = tinker.RestClient(base_url=tinker_server.url, api_key=key_b)
    assert run.model_id not in {r.training_run_id for r in rest_b.list_training_runs().result().training_runs}
    with pytest.raises(tinker.NotFoundError):
        rest_b.get_training_run(run.model_id).result()
    with pytest.raises(tinker.NotFoundError):
        rest_b.list_checkpoints(run.model_id).result()
    with pytest.raises(tinker.NotFoundError):
        rest_b.get_weights_info_by_tinker_path(path).result()

    # B's requests on A's run id land in B's own queue and fail; A's future ids are unknown to B
    with httpx.Client(base_url=f"{tinker_server.url}/api/v1", timeout=30) as http:
        own = http.post("/retrieve_future", json={"request_id": "1"}, headers={"X-API-Key": key_a})
        assert own.status_code in (200, 404)
        for request_id in range(1, 30):
            reply = http.post(
                "/retrieve_future", json={"request_id": str(request_id)}, headers={"X-API-Key": key_b}
            )
            assert reply.status_code == 404 or "error" in reply.json()
        info = http.post("/get_info", json={"model_id": run.model_id}, headers={"X-API-Key": key_b})
        assert info.status_code == 404
    rest_a = tinker.RestClient(base_url=tinker_server.url, api_key=key_a)
    assert [c.tinker_path for c in rest_a.list_checkpoints(run.model_id).result().checkpoints] == [
        path,
        sampler_path,
    ]


def test_keys_need_the_tml_prefix_and_a_real_key(tinker_server):
    with pytest.raises(tinker.TinkerError, match="tml-"):
        tinker.ServiceClient(
            base_url=tinker_server.url, api_key="rsk_not_prefixed"
        ).create_lora_training_client(base_model=BASE).result()
    with pytest.raises(tinker.AuthenticationError):
        tinker.RestClient(
            base_url=tinker_server.url, api_key="tml-rsk_" + "x" * 40
        ).get_server_capabilities().result()
    rest = tinker.RestClient(base_url=tinker_server.url, api_key=tinker_server.tenant_key())
    capabilities = rest.get_server_capabilities().result()
    assert [m.model_name for m in capabilities.supported_models] == [BASE]
    assert capabilities.supported_models[0].max_context_length == 128


@pytest.mark.slow  # starts its own server with small limits
def test_per_tenant_model_and_storage_limits(tmp_path, tiny_model_folder):
    server = TinkerServer(
        tmp_path,
        tiny_model_folder,
        {"RESONANCE_TINKER_MAX_MODELS": "1", "RESONANCE_TINKER_STORAGE_BYTES": "20000"},
    ).start()
    try:
        key = server.tenant_key()
        client = server.service_client(key)
        run = client.create_lora_training_client(base_model=BASE, rank=4, seed=0).result()
        user_error(client.create_lora_training_client(base_model=BASE, rank=4), "RESONANCE_TINKER_MAX_MODELS")
        other = server.service_client()
        other.create_lora_training_client(base_model=BASE, rank=4).result()  # another tenant's own allowance
        user_error(run.save_state("big"), "limit")
        rest = tinker.RestClient(base_url=server.url, api_key=key)
        assert rest.list_checkpoints(run.model_id).result().checkpoints == []
        assert not list((tmp_path / "tinker").rglob("adapter.safetensors"))  # nothing half-kept
    finally:
        server.stop()


@pytest.mark.slow
def test_a_restart_loses_no_acknowledged_request(tmp_path, tiny_model_folder):
    """kill -9 the server: the run's next request fails with an error naming the checkpoint to resume
    from, and resuming from it works."""
    server = TinkerServer(tmp_path, tiny_model_folder).start()
    key = server.tenant_key()
    client = server.service_client(key)
    run = client.create_lora_training_client(base_model=BASE, rank=4, seed=0).result()
    ids = [5, 6, 7, 8, 9]
    batch = [datum(ids[:-1], target_tokens=ids[1:])]
    run.forward_backward(batch, "cross_entropy").result()
    run.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    path = run.save_state("before").result().path
    expected = run.forward(batch, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_numpy()
    port = server.port
    server.kill()
    server.start(port=port)
    try:
        message = run.forward_backward(batch, "cross_entropy")
        with pytest.raises(tinker.RequestFailedError, match="restarted") as caught:
            message.result()
        assert path in caught.value.message
        resumed = client.create_training_client_from_state_with_optimizer(path).result()
        again = resumed.forward(batch, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_numpy()
        assert np.array_equal(expected, again)
    finally:
        server.stop()
