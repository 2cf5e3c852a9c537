"""The openai backend against a real local HTTP server that speaks the chat-completions API."""

import socket

import pytest

pytest.importorskip("openai")

from chat_server import ChatServer  # noqa: E402

from resonance_os.generation.backends.base import BackendError  # noqa: E402
from resonance_os.generation.backends.openai_backend import OpenAIBackend  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402

CREATIVE = [0.6, 0.65, 0.6, 0.55, 0.35, 0.3, 0.7, 0.93]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_writer_drafts_then_reprompts_with_measured_gaps():
    with ChatServer() as server:
        backend = OpenAIBackend(base_url=server.base_url, model="tiny-chat", api_key="k", max_retries=0)
        article = HumanResonantWriter(backend=backend).generate(
            "remote work", target_hrv=CREATIVE, num_paragraphs=2, seed=1
        )
    assert article.backend == "openai"
    assert len(article.paragraphs) == 2
    assert all("Remote work" in p for p in article.paragraphs)
    bodies = [r["body"] for r in server.requests]
    assert all(b["model"] == "tiny-chat" for b in bodies)
    assert server.requests[0]["auth"] == "Bearer k"
    first = bodies[0]["messages"][-1]["content"]
    assert "ask several questions" in first or "ask one question" in first  # targets became instructions
    revisions = [
        b["messages"][-1]["content"] for b in bodies if b["messages"][-1]["content"].startswith("Revise")
    ]
    assert revisions, "the loop re-prompts when the draft is off target"
    assert "curiosity_index" in revisions[0] and "target 0." in revisions[0]
    llm_steps = [t for t in article.trace if t["layer"] == "llm"]
    # the draft with the highest writing reward is kept: for paragraph 1 a revision (question + simile
    # added) that is closer to the curious, figurative target; paragraph 2 repeats paragraph 1 word for
    # word in every draft, which the reward's repetition term zeroes
    assert all(s["draft_rewards"][s["chosen_draft"]] == max(s["draft_rewards"]) for s in llm_steps)
    first, second = llm_steps
    assert (
        first["chosen_draft"] > 0 and first["draft_errors"][first["chosen_draft"]] < first["draft_errors"][0]
    )
    assert second["draft_rewards"] == [0.0] * len(second["draft_rewards"])


def test_retries_server_errors_with_backoff():
    with ChatServer(fail_first=1) as server:
        backend = OpenAIBackend(base_url=server.base_url, model="m", max_retries=2)
        reply = backend.complete([{"role": "user", "content": "Mention 'tea'. hi"}])
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
