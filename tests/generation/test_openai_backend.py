"""The openai backend against a real local HTTP server that speaks the chat-completions API."""

import socket

import pytest

pytest.importorskip("openai")

from chat_server import ChatServer  # noqa: E402

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.generation.backends.base import BackendError  # noqa: E402
from resonance_os.generation.backends.openai_backend import OpenAIBackend  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.generation.llm_writing import GAP_ADVICE  # noqa: E402

CREATIVE = [0.6, 0.65, 0.6, 0.55, 0.35, 0.3, 0.7, 0.93]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_writer_samples_candidates_at_once_then_reprompts_with_plain_advice():
    with ChatServer() as server:
        backend = OpenAIBackend(base_url=server.base_url, model="tiny-chat", api_key="k", max_retries=0)
        article = HumanResonantWriter(backend=backend, candidates=3, rounds=1).generate(
            "remote work", target_hrv=CREATIVE, num_paragraphs=2, seed=1
        )
    assert article.backend == "openai"
    assert len(article.paragraphs) == 2 and article.paragraphs[0].startswith("Remote work")
    assert all("Here is" not in p for p in article.paragraphs)  # the meta-text line was filtered
    bodies = [r["body"] for r in server.requests]
    assert all(b["model"] == "tiny-chat" and b["n"] == 3 for b in bodies)
    assert server.requests[0]["auth"] == "Bearer k"
    prompts = [b["messages"][-1]["content"] for b in bodies]
    for text in prompts:
        assert not any(name in text or name.replace("_", " ") in text for name in HRV_DIMENSIONS)
        assert article.paragraphs[0] not in text  # no earlier paragraph is pasted
    advice = {phrase for pair in GAP_ADVICE.values() for phrase in pair}
    # re-prompted with plain advice
    assert len(prompts) > 2 and any(phrase in prompts[1].lower() for phrase in advice)
    llm_steps = [t for t in article.trace if t["layer"] == "llm"]
    assert all(s["draft_rewards"][s["chosen_draft"]] == max(s["draft_rewards"]) for s in llm_steps)
    assert all("rewrite_calls" not in s for s in llm_steps)  # only the local model rewrites (its own judge)


def test_servers_that_ignore_n_get_one_request_per_candidate():
    with ChatServer(honour_n=False) as server:
        backend = OpenAIBackend(base_url=server.base_url, model="m", max_retries=0)
        replies = backend.sample([{"role": "user", "content": "Introduce tea."}], 3, seed=5)
    assert len(replies) == 3 and all(r.startswith("Tea changes") for r in replies)
    assert [r["body"].get("seed") for r in server.requests] == [5, 6, 7]


def test_retries_server_errors_with_backoff():
    with ChatServer(fail_first=1) as server:
        backend = OpenAIBackend(base_url=server.base_url, model="m", max_retries=2)
        reply = backend.complete([{"role": "user", "content": "Introduce tea. hi"}])
    assert reply.startswith("Tea changes")
    assert len(server.requests) == 2


def test_unreachable_server_is_a_clear_error():
    url = f"http://127.0.0.1:{free_port()}/v1"
    backend = OpenAIBackend(base_url=url, model="m", max_retries=0, timeout=2)
    with pytest.raises(BackendError, match="cannot reach the LLM server at http://127.0.0.1"):
        HumanResonantWriter(backend=backend).generate("remote work", num_paragraphs=1)


def test_timeout_is_a_clear_error():
    with ChatServer(delay=1.5) as server:
        backend = OpenAIBackend(base_url=server.base_url, model="m", max_retries=0, timeout=0.3)
        with pytest.raises(BackendError, match="did not answer in time"):
            backend.complete([{"role": "user", "content": "hi"}])


def test_missing_key_for_openai_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "RESONANCE_LLM_API_KEY", "RESONANCE_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        OpenAIBackend()
