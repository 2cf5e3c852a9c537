"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions API, for backend tests.

Replies are deterministic: a first draft is a plain expository paragraph about the requested
focus; a revision request (the writer's "Revise this paragraph" prompt) gets the same paragraph
with a question and a simile added when the notes ask for them. ``fail_first`` makes the first N
requests answer HTTP 500 (to exercise retries); ``delay`` sleeps before answering (timeouts).
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


class ChatServer:
    def __init__(self, fail_first: int = 0, delay: float = 0.0) -> None:
        self.requests: list[dict] = []
        self.fail_first = fail_first
        self.delay = delay
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
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
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
        if user.startswith("Revise this paragraph"):
            paragraph = user.split("\n\n")[1]
            if "curiosity_index" in user:
                paragraph += " Why does the quiet afternoon matter so much?"
            if "metaphor_density" in user:
                paragraph += " The calendar works like a metronome for the whole team."
            return paragraph
        focus = re.search(r"Mention '([^']*)'", user)
        return DRAFT.format(focus=(focus.group(1) if focus else "The topic").capitalize())

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
