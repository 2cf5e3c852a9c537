"""On a real server (one start, four stories): a flood of bad keys from one address is refused from
memory (429) while good keys from other addresses, and good keys already verified, keep working; a
connection refused with 429 is not read again until its wait has passed; an address opening
connection after connection is refused at the door (429, closed); connections that stall in their
headers or body are answered 408 and closed."""

from __future__ import annotations

import socket
import time
import uuid

import httpx

from resonance_os.api.http.protocol import REFUSED_HOLD_S
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant

ATTACKER = "127.0.0.2"  # the whole of 127.0.0.0/8 is loopback on Linux
THROTTLE_S = 0.2
CONNECTOR = "127.0.0.3"
CONNECTION_BURST = 20


def _tenant_key(db_url: str, name: str) -> str:
    database = Database(db_url)
    database.migrate()
    try:
        return create_tenant(database, name)
    finally:
        database.dispose()


def test_one_client_can_neither_flood_logins_nor_stall_connections(live_server_factory, db_url):
    server = live_server_factory(
        db_url,
        env={
            "RESONANCE_FAILED_AUTH_RATE": "0.01",
            "RESONANCE_FAILED_AUTH_BURST": "5",
            "RESONANCE_AUTH_CACHE_S": "600",  # "verified moments ago" below, however slow the machine
            "RESONANCE_HEADER_TIMEOUT_S": "0.5",
            "RESONANCE_BODY_TIMEOUT_S": "0.5",
            "RESONANCE_THROTTLE_MAX_S": str(THROTTLE_S),
            "RESONANCE_NEW_CONNECTIONS_PER_S": "0.01",
            "RESONANCE_NEW_CONNECTIONS_BURST": str(CONNECTION_BURST),
        },
    )
    good = _tenant_key(db_url, f"victim-{uuid.uuid4().hex[:8]}")
    _failed_logins_are_limited_per_address(server, good)
    _a_refused_request_is_answered_only_after_its_wait(server)
    _an_address_opening_connection_after_connection_is_refused_at_the_door(server, good)
    _stalled_headers_and_bodies_are_answered_408_and_closed(server, good)


def _failed_logins_are_limited_per_address(server, good: str) -> None:
    """Refused from memory (429) past the burst; good keys from elsewhere, or already verified, pass."""
    body = {"text": "A short text to measure."}
    attacker = httpx.Client(
        base_url=server.url, transport=httpx.HTTPTransport(local_address=ATTACKER), timeout=30
    )
    with attacker, httpx.Client(base_url=server.url, timeout=30) as victim:
        assert (
            attacker.post("/v1/analyze", json=body, headers={"Authorization": f"Bearer {good}"}).status_code
            == 200
        )
        codes = [
            attacker.post(
                "/v1/analyze", json=body, headers={"Authorization": f"Bearer rsk_wrong{i:040d}"}
            ).status_code
            for i in range(20)
        ]
        assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}
        refused = attacker.post(
            "/v1/analyze", json=body, headers={"Authorization": "Bearer rsk_other" + "x" * 40}
        )
        assert refused.json()["error"]["type"] == "TooManyFailedLogins"
        assert int(refused.headers["Retry-After"]) >= 1
        assert attacker.post("/v1/analyze", json=body).status_code == 429  # no header: refused too
        # a key verified moments ago still works from the blocked address; other addresses are untouched
        assert (
            attacker.post("/v1/analyze", json=body, headers={"Authorization": f"Bearer {good}"}).status_code
            == 200
        )
        assert (
            victim.post("/v1/analyze", json=body, headers={"Authorization": f"Bearer {good}"}).status_code
            == 200
        )
        assert (
            victim.post(
                "/v1/analyze", json=body, headers={"Authorization": "Bearer rsk_x" + "y" * 40}
            ).status_code
            == 401
        )


def _a_refused_request_is_answered_only_after_its_wait(server) -> None:
    """The address is blocked for about 100 s (rate 0.01/s), so each 429 waits the server's most,
    THROTTLE_S, before it is answered (a refusal from memory otherwise takes a millisecond or two),
    on a kept-alive connection as on a new one."""
    body = b'{"text": "x"}'
    request = (
        b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer rsk_flood{0:040d}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with socket.create_connection(
        ("127.0.0.1", server.port), timeout=60, source_address=(ATTACKER, 0)
    ) as sock:
        for _ in range(3):
            sent = time.monotonic()
            sock.sendall(request)
            answer = _read_response(sock)
            assert time.monotonic() - sent >= 0.9 * THROTTLE_S
            assert answer.startswith(b"HTTP/1.1 429") and b"TooManyFailedLogins" in answer


def _an_address_opening_connection_after_connection_is_refused_at_the_door(server, good: str) -> None:
    """A connection per request from one address: the first CONNECTION_BURST are served, the next are
    refused unread: answered 429 TooManyConnections only after REFUSED_HOLD_S, and closed (the close
    can reset a connection whose request had already arrived, so a reset counts as refused too, never
    a served request); another address is still served."""
    request = b"GET /v1/profiles HTTP/1.1\r\nHost: x\r\n" + f"Authorization: Bearer {good}\r\n\r\n".encode()
    answers, seconds = [], []
    for _ in range(CONNECTION_BURST + 3):
        with socket.create_connection(
            ("127.0.0.1", server.port), timeout=60, source_address=(CONNECTOR, 0)
        ) as sock:
            start = time.monotonic()
            try:
                sock.sendall(request)
                answers.append(_read_response(sock))
            except ConnectionResetError:
                answers.append(b"reset")
            seconds.append(time.monotonic() - start)
    assert min(seconds[CONNECTION_BURST:]) >= 0.9 * REFUSED_HOLD_S
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers[:CONNECTION_BURST])
    refused = answers[CONNECTION_BURST:]
    assert all(
        a == b"reset" or (a.startswith(b"HTTP/1.1 429") and b"TooManyConnections" in a) for a in refused
    )
    ok = httpx.get(f"{server.url}/v1/profiles", headers={"Authorization": f"Bearer {good}"})
    assert ok.status_code == 200


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_response(sock: socket.socket) -> bytes:
    """One HTTP response: the head, then Content-Length bytes of body (they may come in later packets)."""
    data = b""
    while b"\r\n\r\n" not in data and (chunk := sock.recv(65536)):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length and (chunk := sock.recv(65536)):
        body += chunk
    return head + b"\r\n\r\n" + body


def _trickle_until_answered(sock: socket.socket) -> bytes:
    """Send a byte of body every 50 ms until the server answers; the answer."""
    sock.setblocking(False)
    try:
        while True:
            sock.send(b"x")
            time.sleep(0.05)
            try:
                first = sock.recv(65536)
            except BlockingIOError:
                continue
            sock.setblocking(True)
            sock.settimeout(60)
            return first if b"\r\n\r\n" in first else first + _read_response(sock)
    finally:
        sock.setblocking(True)


def _trickle_until_closed(sock: socket.socket) -> bool:
    """Go on trickling body bytes; True once the server has closed the connection (EOF or reset),
    an exception (a timeout) if it is still open after the socket's timeout."""
    try:
        while True:
            sock.send(b"x")
            if sock.recv(65536) == b"":
                return True
    except (BrokenPipeError, ConnectionResetError):
        return True


def _stalled_headers_and_bodies_are_answered_408_and_closed(server, key: str) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as silent:
        assert _read_all(silent).startswith(b"HTTP/1.1 408")  # never sent a byte
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as slow_headers:
        slow_headers.sendall(b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Ty")
        answer = _read_all(slow_headers)
    assert answer.startswith(b"HTTP/1.1 408") and b"headers" in answer
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as slow_body:
        slow_body.sendall(
            b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {key}\r\nContent-Length: 10000\r\n\r\n".encode()
            + b'{"text": "only part'
        )
        answer = _trickle_until_answered(slow_body)
        assert answer.startswith(b"HTTP/1.1 408") and b"body did not arrive" in answer
        assert b"connection: close" in answer.lower()
        # closed by the server, not kept alive while the client trickles on (KEEP_ALIVE_S is 75 s)
        slow_body.settimeout(10)
        assert _trickle_until_closed(slow_body)
    ok = httpx.post(
        f"{server.url}/v1/analyze", json={"text": "Still served."}, headers={"Authorization": f"Bearer {key}"}
    )
    assert ok.status_code == 200
