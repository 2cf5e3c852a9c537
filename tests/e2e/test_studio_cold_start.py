"""Cold start (issue 45): a first write right after ``resonance serve`` starts succeeds, the Studio saying
that the language model is loading (with the service's estimate) instead of hanging, then each
paragraph under way with its elapsed time.

The text workers start with the server and take seconds to load; the test holds them (``SIGSTOP``)
while the Studio asks, so that the start-up the editor meets is the same on a fast or a slow machine,
and lets them go on (``SIGCONT``) once the Studio has said what it waits for."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
from conftest import served_studio
from studio_pages import open_studio, signed_in

STATUS_LOG = """() => {
  window.statusLog = [];
  const box = document.querySelector('#write-status');
  new MutationObserver(() => window.statusLog.push(box.textContent))
    .observe(box, { childList: true, characterData: true, subtree: true });
}"""


def text_workers(server_pid: int) -> list[int]:
    """The server's text worker processes (multiprocessing spawns them as ``spawn_main`` children)."""
    found = []
    for task in Path(f"/proc/{server_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"spawn_main" in cmdline:
                found.append(int(child))
    return found


def test_a_first_write_right_after_start_up_succeeds_and_says_what_it_waits_for(browser, tmp_path):
    # the served default of two text workers (the test suite's environment says 0); /health answered
    with served_studio(tmp_path, ready=False, RESONANCE_TEXT_WORKERS="2") as studio:
        workers = text_workers(studio.pid)
        assert len(workers) == 2  # started with the server, before any request asked for them
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        try:
            health = httpx.get(f"{studio.url}/health").json()
            assert (
                health["status"] == "starting" and httpx.get(f"{studio.url}/health/ready").status_code == 503
            )
            context, page = open_studio(browser, studio.url)
            signed_in(page, studio, "write")
            page.fill("#write-prompt", "Why early mornings at the harbour matter")
            page.fill("#write-paragraphs", "2")
            page.evaluate(STATUS_LOG)
            page.click("#write-form button[type=submit]")
            page.wait_for_selector("#write-status:has-text('Starting: loading the language model (')")
            assert "so far" in page.inner_text("#write-status")
        finally:
            for pid in workers:
                os.kill(pid, signal.SIGCONT)
        page.wait_for_selector("#write-result:not([hidden]), #message:not([hidden])", timeout=180_000)
        assert page.is_hidden("#message"), page.inner_text("#message")
        assert len(page.locator("#article p").all_inner_texts()) == 2
        log = page.evaluate("window.statusLog")
        writing = [line for line in log if line.startswith("Writing paragraph ")]
        assert writing and writing[0].startswith("Writing paragraph 1 of 2 ("), log
        assert any(
            line.startswith("Writing paragraph 2 of 2 (") and "a paragraph takes " in line for line in writing
        ), log
        assert page.inner_text("#write-status") == "Wrote 2 of 2 paragraphs."
        assert httpx.get(f"{studio.url}/health/ready").status_code == 200
        context.close()
