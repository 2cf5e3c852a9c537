"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions API, for backend tests.

Replies are deterministic: a plain expository paragraph about the requested focus (one text for an
opening, another for a closing paragraph), with a question and a simile added when the instructions
ask for them ("ask a question", "simile"). A request with ``n`` gets ``n`` choices unless
``honour_n`` is False (like llama.cpp, one choice); choice 1 leaks a meta-text line. ``fail_first``
makes the first N requests answer HTTP 500 (to exercise retries); ``delay`` sleeps before answering
(timeouts).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DRAFT = (
    "{focus} changes how teams plan their week. Meetings move to the morning and the afternoon stays "
    "quiet. Managers publish the schedule early. People keep notes in one shared place, and the notes "
    "are read by everyone."
)
CLOSING = (
    "In the end, {focus} rewards patience more than rules. A small habit, kept for a season, outlasts a "
    "grand plan that nobody follows. Start with one change this month and watch what grows from it."
)
META = "Here is the paragraph you asked for:"


class ChatServer:
    def __init__(self, fail_first: int = 0, delay: float = 0.0, honour_n: bool = True) -> None:
        self.requests: list[dict] = []
        self.fail_first = fail_first
        self.delay = delay
        self.honour_n = honour_n
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if server.delay:
                    time.sleep(server.delay)
                if len(server.requests) <= server.fail_first:
                    self._send(500, {"error": {"message": "temporary failure", "type": "server_error"}})
                    return
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                content = server.reply(body["messages"])
                n = body.get("n", 1) if server.honour_n else 1
                replies = [f"{META}\n{content}" if i == 1 else content for i in range(n)]
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": i,
                                "message": {"role": "assistant", "content": reply},
                                "finish_reason": "stop",
                            }
                            for i, reply in enumerate(replies)
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                    },
                )

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:  # the client gave up (the timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @staticmethod
    def reply(messages: list[dict]) -> str:
        user = messages[-1]["content"]
        focus = re.search(r"(?:Introduce|example about|thought on) ([^.]*)\.", user)
        focus_text = focus.group(1) if focus else "the topic"
        if "closing paragraph" in user:
            return CLOSING.format(focus=focus_text)
        paragraph = DRAFT.format(focus=focus_text.capitalize())
        if "ask a question" in user:
            paragraph += " Why does the quiet afternoon matter so much?"
        if "simile" in user:
            paragraph += " The calendar works like a metronome for the whole team."
        return paragraph

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
