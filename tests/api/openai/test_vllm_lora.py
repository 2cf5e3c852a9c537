"""vLLM's runtime LoRA routes on a real ``resonance serve`` (127.0.0.1, the tiny model), and GRPO sampling
on it through ``GRPOConfig.rollout_server``: the trainer's samples are the server's tokens, the server's
log-probs are the policy's, and the adapter is synced after each update."""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import torch

pytest.importorskip("peft", reason="LoRA adapters need the local extra")

sys.path.insert(0, str(Path(__file__).parents[2] / "llm"))
from live_server import LiveServer, free_port  # noqa: E402
from openai_servers import model_server, save_tiny_model  # noqa: E402
from service_helpers import new_tenant  # noqa: E402
from tiny_lm import CHAT_TEMPLATE, WORDS, make_model, make_tokenizer, one_step_lora  # noqa: E402

from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.pipeline import AsyncGRPO  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.remote_sampler import RolloutServerError  # noqa: E402

MODEL = "tiny"
PEPPER = "vllm-lora-tests"
CONTEXT = 128


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vllm")
    folder = save_tiny_model(tmp / MODEL, context=CONTEXT)
    server, runs = model_server(tmp, PEPPER, folder, RESONANCE_ENGINE_DTYPE="float32")
    server.start()
    yield server, runs
    server.stop()
    assert "Traceback" not in server.output()  # no request, good or bad, hit a bug


def _tenant(server: LiveServer) -> tuple[str, dict[str, str]]:
    tenant = new_tenant(server.db_url, "vllm", PEPPER)
    return tenant.name, {"Authorization": f"Bearer {tenant.key}"}


def _post(server: LiveServer, route: str, headers: dict[str, str], body: object) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {**headers, "Content-Type": "application/json"}
    return httpx.post(f"{server.url}/v1/{route}", headers=headers, content=content, timeout=60)


def _greedy(server: LiveServer, headers: dict[str, str], model: str) -> list[int]:
    body = {"model": model, "prompt": [5, 6, 7], "max_tokens": 8, "temperature": 0, "ignore_eos": True,
            "return_token_ids": True}  # fmt: skip
    answer = _post(server, "completions", headers, body)
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["token_ids"]


def _vllm_error(answer: httpx.Response, status: int) -> dict:
    """The body of a failure in vLLM's shape, checked."""
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["code"] == status
    return error


def test_load_reload_and_unload_like_vllm(live):
    server, runs = live
    name, headers = _tenant(server)
    first, second = runs / name / "run-a" / "policy", runs / name / "run-b" / "policy"
    one_step_lora(make_tokenizer(), first, context=CONTEXT, seed=0)
    one_step_lora(make_tokenizer(), second, context=CONTEXT, seed=1)
    base = _greedy(server, headers, MODEL)

    loaded = _post(server, "load_lora_adapter", headers, {"lora_name": "pol", "lora_path": str(first)})
    assert loaded.status_code == 200 and loaded.text.startswith("Success"), loaded.text
    models = httpx.get(f"{server.url}/v1/models", headers=headers, timeout=60).json()["data"]
    assert [m["id"] for m in models] == [MODEL, "pol"]
    tuned = _greedy(server, headers, "pol")
    assert tuned != base

    again = _post(server, "load_lora_adapter", headers, {"lora_name": "pol", "lora_path": str(second)})
    assert _vllm_error(again, 400)["type"] == "BadRequestError"
    assert _greedy(server, headers, "pol") == tuned  # refused: the weights are the first folder's
    inplace = _post(server, "load_lora_adapter", headers,
                    {"lora_name": "pol", "lora_path": "run-b", "load_inplace": True})  # fmt: skip
    assert inplace.status_code == 200, inplace.text
    reloaded = _greedy(server, headers, "pol")
    assert reloaded not in (tuned, base)  # the next request runs on the new weights

    gone = _post(server, "unload_lora_adapter", headers, {"lora_name": "pol"})
    assert gone.status_code == 200 and gone.text.startswith("Success")
    assert [m["id"] for m in httpx.get(f"{server.url}/v1/models", headers=headers).json()["data"]] == [MODEL]
    assert _vllm_error(_post(server, "unload_lora_adapter", headers, {"lora_name": "pol"}), 404)["type"] == (
        "NotFoundError"
    )


def test_bad_loads_are_4xx_in_vllms_shape(live):
    server, runs = live
    owner, owner_headers = _tenant(server)
    name, headers = _tenant(server)
    theirs = runs / owner / "secret" / "policy"
    one_step_lora(make_tokenizer(), theirs, context=CONTEXT)
    (runs / "x").mkdir(parents=True, exist_ok=True)
    cases = [
        ({"lora_name": "a", "lora_path": "/nowhere/adapter"}, 404, "lora_path"),
        ({"lora_name": "a", "lora_path": str(theirs)}, 404, "lora_path"),  # another tenant's folder
        ({"lora_name": "a", "lora_path": f"../{owner}/secret"}, 400, "lora_path"),
        ({"lora_name": "a", "lora_path": str(runs / "x")}, 404, "lora_path"),  # outside the caller's runs
        ({"lora_name": "a"}, 400, "lora_path"),
        ({"lora_name": 7, "lora_path": "x"}, 400, "lora_name"),
        ({"lora_name": "a b", "lora_path": "x"}, 400, "lora_name"),
        ({"lora_name": MODEL, "lora_path": "x"}, 400, "lora_name"),  # the base model's id
        ({"lora_name": "a", "lora_path": "x", "load_inplace": "yes"}, 400, "load_inplace"),
    ]
    for body, status, param in cases:
        error = _vllm_error(_post(server, "load_lora_adapter", headers, body), status)
        assert error["param"] == param, (body, error)
    (runs / name / "empty").mkdir(parents=True, exist_ok=True)
    not_lora = _vllm_error(
        _post(server, "load_lora_adapter", headers, {"lora_name": "a", "lora_path": "empty"}), 400
    )
    assert "adapter" in not_lora["message"]
    for raw in (b"{not json", b"[1]", b"{}"):
        _vllm_error(_post(server, "load_lora_adapter", headers, raw), 400)
        _vllm_error(_post(server, "unload_lora_adapter", headers, raw), 400)
    assert _vllm_error(_post(server, "load_lora_adapter", {}, {"lora_name": "a", "lora_path": "x"}), 401)
    # the owner still has nothing loaded, and a load by another tenant never reached its folder
    models = httpx.get(f"{server.url}/v1/models", headers=owner_headers, timeout=60).json()["data"]
    assert [m["id"] for m in models] == [MODEL]


# ------------------------------------------------------------------------------------ GRPO on the server
PROMPTS = ["the cat sat on the", "a dog ran under the", "one two three", "the bird flew over"]


def _policy() -> LMPolicy:
    tokenizer = make_tokenizer()
    return LMPolicy(
        tokenizer,
        make_model(len(tokenizer), seed=0, context=CONTEXT),
        PolicyConfig(lora_rank=4, lora_alpha=8),
    )


def _lengths(prompts, completions):
    return [float(len(c.split())) for c in completions]


def test_grpo_samples_on_the_server_and_syncs_the_adapter(live, tmp_path, monkeypatch):
    server, runs = live
    name, headers = _tenant(server)
    monkeypatch.setenv("RESONANCE_ROLLOUT_API_KEY", headers["Authorization"].split()[1])
    policy = _policy()
    config = GRPOConfig(
        group_size=4, prompts_per_step=2, max_new_tokens=8, learning_rate=0.05, seed=3, chat_template=False,
        rollout_server=f"{server.url}/v1", rollout_adapter="grpo", rollout_folder=str(runs / name / "rollouts"),
    )  # fmt: skip
    trainer = GRPO(policy, _lengths, PROMPTS, config)
    answers: dict[tuple[int, ...], list[dict]] = {}
    steps = []
    post = trainer.rollout_server._post

    def recording_post(route, body):  # the server's real answers, kept to compare with the samples
        answer = post(route, body)
        if route == "completions":
            answers[tuple(body["prompt"])] = sorted(answer.json()["choices"], key=lambda c: c["index"])
        return answer

    monkeypatch.setattr(trainer.rollout_server, "_post", recording_post)
    generate = trainer._generate

    def generate_and_check(indices, seed, policy=None):
        answers.clear()
        samples = generate(indices, seed, policy)
        with torch.no_grad():
            mask = samples.completion_mask
            ours = trainer.policy.token_logprobs(
                samples.input_ids, samples.attention_mask, mask, temperature=1.0
            )
            with trainer.policy.reference():
                base = trainer.policy.token_logprobs(samples.input_ids, samples.attention_mask, mask)
        steps.append((samples, ours, base, dict(answers)))
        return samples

    monkeypatch.setattr(trainer, "_generate", generate_and_check)
    trainer.learn(2)

    assert [row["time_generate"] > 0 for row in trainer.history] == [True, True]
    for step, (samples, ours, base, choices) in enumerate(steps):
        assert sum(len(c) for c in choices.values()) == 8
        for row in range(8):  # rows grouped by prompt, G = 4 each, in the order the server numbered them
            prompt = samples.prompt_ids[row][samples.prompt_mask[row].bool()].tolist()
            choice = choices[tuple(prompt)][row % 4]
            length = int(samples.completion_mask[row].sum())
            assert samples.completion_ids[row, :length].tolist() == choice["token_ids"]
            assert samples.logprobs[row, :length].tolist() == pytest.approx(
                choice["logprobs"]["token_logprobs"]
            )
        mask = samples.completion_mask.bool()
        assert torch.allclose(samples.logprobs[mask], ours[mask], atol=1e-4), (
            step,
            (samples.logprobs - ours).abs().max(),
        )
        if step == 1:  # sampled after the update, on the reloaded adapter: not the base model's numbers
            assert (samples.logprobs[mask] - base[mask]).abs().max() > 1e-3
    versions = sorted(p.name for p in (runs / name / "rollouts" / "grpo").iterdir())
    assert versions == ["v000000", "v000001"]
    assert (runs / name / "rollouts" / "grpo" / "v000001" / "adapter_config.json").is_file()
    assert "rollout_kl" in trainer.history[0] and trainer.history[0]["rollout_kl"] < 1e-6

    # resumed from a checkpoint: the loaded weights are synced before the next step samples
    trainer.save(tmp_path / "ckpt")
    monkeypatch.undo()
    monkeypatch.setenv("RESONANCE_ROLLOUT_API_KEY", headers["Authorization"].split()[1])
    resumed = GRPO.load(tmp_path / "ckpt", _policy(), _lengths, PROMPTS)
    seen = []
    generate = resumed._generate

    def generate_and_score_with_policy(*args, **kwargs):
        samples = generate(*args, **kwargs)
        with torch.no_grad():
            mask = samples.completion_mask
            seen.append(
                (samples, resumed.policy.token_logprobs(samples.input_ids, samples.attention_mask, mask))
            )
        return samples

    monkeypatch.setattr(resumed, "_generate", generate_and_score_with_policy)
    resumed.learn(1, reset_num_timesteps=False)
    samples, ours = seen[0]
    mask = samples.completion_mask.bool()
    assert torch.allclose(samples.logprobs[mask], ours[mask], atol=1e-4)
    assert resumed.rollout_server.version == 2
    assert sorted(p.name for p in (runs / name / "rollouts" / "grpo").iterdir()) == ["v000001", "v000002"]


def test_an_unreachable_server_is_a_clear_error(tmp_path):
    config = GRPOConfig(group_size=2, prompts_per_step=1, max_new_tokens=4, chat_template=False,
                        rollout_server=f"http://127.0.0.1:{free_port()}/v1", rollout_folder=str(tmp_path))  # fmt: skip
    with pytest.raises(RolloutServerError, match="cannot reach the rollout server"):
        GRPO(_policy(), _lengths, PROMPTS, config)


class _PlainOpenAI(BaseHTTPRequestHandler):
    """An OpenAI-API server without vLLM's extensions (the shape api.openai.com answers in)."""

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "gpt-x", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send({"id": "cmpl-1", "object": "text_completion", "model": "gpt-x",
                    "choices": [{"index": 0, "text": " hi", "logprobs": None, "finish_reason": "length"}]})  # fmt: skip

    def log_message(self, *args) -> None:
        pass


def test_a_server_without_token_ids_is_refused(tmp_path):
    plain = ThreadingHTTPServer(("127.0.0.1", 0), _PlainOpenAI)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    try:
        config = GRPOConfig(group_size=2, prompts_per_step=1, max_new_tokens=4, chat_template=False,
                            rollout_server=f"http://127.0.0.1:{plain.server_port}/v1", rollout_folder=str(tmp_path))  # fmt: skip
        with pytest.raises(RolloutServerError, match="returned no token ids"):
            GRPO(_policy(), _lengths, PROMPTS, config)
    finally:
        plain.shutdown()
        plain.server_close()


def test_rollout_server_config_is_checked(tmp_path):
    server = {"rollout_server": "http://127.0.0.1:1/v1", "rollout_folder": str(tmp_path)}
    with pytest.raises(ValueError, match="AsyncGRPO samples on its own generation workers"):
        AsyncGRPO(_policy(), _lengths, PROMPTS, GRPOConfig(group_size=2, **server))
    with pytest.raises(ValueError, match="rollout_folder"):
        GRPOConfig(rollout_server="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="rollout_server"):
        GRPOConfig(rollout_server="127.0.0.1:8000", rollout_folder=str(tmp_path))
    with pytest.raises(ValueError, match="rollout_dtype"):
        GRPOConfig(rollout_server="http://h/v1", rollout_folder=str(tmp_path), rollout_dtype="bfloat16")
    with pytest.raises(ValueError, match="rollout_adapter"):
        GRPOConfig(rollout_server="http://h/v1", rollout_folder=str(tmp_path), rollout_adapter="a/b")


def _shuffled_tokenizer():
    """The tiny tokenizer with its words in another order: same size, other ids for the same text."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(
        models.WordLevel(vocab={t: i for i, t in enumerate(specials + WORDS[::-1])}, unk_token="<unk>")
    )
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                  eos_token="<|im_end|>", additional_special_tokens=["<|im_start|>"])  # fmt: skip
    tok.chat_template = CHAT_TEMPLATE
    return tok


def test_a_server_of_another_model_is_refused(live, monkeypatch):
    server, runs = live
    name, headers = _tenant(server)
    monkeypatch.setenv("RESONANCE_ROLLOUT_API_KEY", headers["Authorization"].split()[1])
    config = GRPOConfig(group_size=2, prompts_per_step=1, max_new_tokens=4, chat_template=False,
                        rollout_server=f"{server.url}/v1", rollout_folder=str(runs / name / "r"))  # fmt: skip
    tokenizer = _shuffled_tokenizer()
    other_tokenizer = LMPolicy(
        tokenizer, make_model(len(tokenizer), context=CONTEXT), PolicyConfig(lora_rank=4)
    )
    with pytest.raises(RolloutServerError, match="tokenizes a probe text"):
        GRPO(other_tokenizer, _lengths, PROMPTS, config)
    tokenizer = make_tokenizer()
    other_weights = LMPolicy(
        tokenizer, make_model(len(tokenizer), seed=5, context=CONTEXT), PolicyConfig(lora_rank=4)
    )
    with pytest.raises(RolloutServerError, match="log-probs differ from the policy's"):
        GRPO(other_weights, _lengths, PROMPTS, config)
    monkeypatch.setenv("RESONANCE_ROLLOUT_API_KEY", "rsk_wrong")
    with pytest.raises(RolloutServerError, match="refused the API key"):
        GRPO(_policy(), _lengths, PROMPTS, config)


def test_an_adapter_the_server_lost_is_loaded_again(live, monkeypatch):
    server, runs = live
    name, headers = _tenant(server)
    monkeypatch.setenv("RESONANCE_ROLLOUT_API_KEY", headers["Authorization"].split()[1])
    config = GRPOConfig(group_size=2, prompts_per_step=1, max_new_tokens=4, chat_template=False, seed=0,
                        rollout_server=f"{server.url}/v1", rollout_adapter="lost", rollout_folder=str(runs / name / "r"))  # fmt: skip
    trainer = GRPO(_policy(), _lengths, PROMPTS, config)
    assert (
        _post(server, "unload_lora_adapter", headers, {"lora_name": "lost"}).status_code == 200
    )  # as a restart
    trainer.learn(1)
    models = httpx.get(f"{server.url}/v1/models", headers=headers, timeout=60).json()["data"]
    assert [m["id"] for m in models] == [MODEL, "lost"]


def test_a_server_that_does_not_answer_is_a_timeout(tmp_path):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections, never answers
    try:
        config = GRPOConfig(group_size=2, prompts_per_step=1, max_new_tokens=4, chat_template=False,
                            rollout_server=f"http://127.0.0.1:{silent.getsockname()[1]}/v1",
                            rollout_folder=str(tmp_path), rollout_server_timeout=0.5)  # fmt: skip
        with pytest.raises(RolloutServerError, match="did not answer GET .* within 0.5 s"):
            GRPO(_policy(), _lengths, PROMPTS, config)
    finally:
        silent.close()
