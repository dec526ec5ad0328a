"""ASGI WebSockets on an asyncio stage, framed by wsproto, against the ``websockets`` client:
the upgrade (and the handshakes it refuses, sent as raw bytes), text and binary messages, ping
and pong, close codes both ways, the message size limit, refusals before the handshake, a
server that stops, and the server's keep-alive pings (as uvicorn's ``--ws-ping-interval`` and
``--ws-ping-timeout``), whose intervals here are short (0.1-0.2 s) so that several pass in a
test."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading
import urllib.request

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage
from wsproto.extensions import PerMessageDeflate

from seda.http import Limits, mount_asgi, serve, websocket

from tests.helpers import WAIT
from tests.helpers.net import until
from tests.helpers.wsclient import Frames, RawClient, client_logger


def run(rt, app, **options):
    sink = mount_asgi(rt, app, tasks=16, lifespan="off", **options)
    address = serve(rt, ("127.0.0.1", 0), sink, limits=Limits(response_timeout=5)).address
    rt.start()
    return f"ws://127.0.0.1:{address[1]}"


def echo(seen: list | None = None):
    """Accepts, then sends each message back reversed; records the scope and the disconnect."""
    async def app(scope, receive, send):
        assert (await receive())["type"] == "websocket.connect"
        if seen is not None:
            seen.append(scope)
        offered = scope["subprotocols"]
        await send({"type": "websocket.accept", "subprotocol": offered[0] if offered else None,
                    "headers": [(b"x-echo", b"yes")]})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                if seen is not None:
                    seen.append(message)
                return
            if message.get("text") is not None:
                await send({"type": "websocket.send", "text": message["text"][::-1]})
            else:
                await send({"type": "websocket.send", "bytes": message["bytes"][::-1]})
    return app


def test_text_and_binary_messages_echo_and_the_scope_says_what_was_asked(rt):
    seen: list = []
    url = run(rt, echo(seen), root_path="/app")
    with connect(f"{url}/app/chat?room=1", subprotocols=["v2", "v1"], open_timeout=WAIT) as ws:
        assert ws.subprotocol == "v2" and ws.response.headers["x-echo"] == "yes"
        ws.send("hello")
        assert ws.recv(WAIT) == "olleh"
        ws.send(b"\x00\x01\x02")
        assert ws.recv(WAIT) == b"\x02\x01\x00"
        ws.send("\u00e9t\u00e9 " * 50_000)                 # fragments, compressed or not
        assert ws.recv(WAIT) == (" \u00e9t\u00e9" * 50_000)
    scope = seen[0]
    assert (scope["type"], scope["scheme"], scope["path"], scope["root_path"]) == (
        "websocket", "ws", "/app/chat", "/app")
    assert scope["query_string"] == b"room=1" and scope["subprotocols"] == ["v2", "v1"]
    assert "websocket.http.response" in scope["extensions"]


def test_pings_are_answered_while_the_application_reads_nothing(rt):
    release = threading.Event()

    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        await asyncio.to_thread(release.wait, WAIT)   # reads nothing meanwhile

    url = run(rt, app)
    with connect(url, open_timeout=WAIT) as ws:
        assert ws.ping(b"are you there").wait(WAIT)
        release.set()


def test_the_application_closes_with_its_code_and_reason(rt):
    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 4001, "reason": "enough"})

    with connect(run(rt, app), open_timeout=WAIT) as ws, pytest.raises(ConnectionClosed):
        ws.recv(WAIT)
    assert (ws.close_code, ws.close_reason) == (4001, "enough")


def test_the_client_closes_with_its_code_and_reason(rt):
    seen: list = []
    with connect(run(rt, echo(seen)), open_timeout=WAIT) as ws:
        ws.close(4002, "bye")
    until(lambda: len(seen), lambda n: n == 2)
    assert seen[1] == {"type": "websocket.disconnect", "code": 4002, "reason": "bye"}


def counting_inflation(monkeypatch) -> list[int]:
    """The server's permessage-deflate made to count what it inflates: the list it appends
    each inflated piece's size to."""
    inflated: list[int] = []

    class Counting(PerMessageDeflate):
        def frame_inbound_payload_data(self, proto, data):
            out = super().frame_inbound_payload_data(proto, data)
            inflated.append(len(out))
            return out

    monkeypatch.setattr(websocket, "PerMessageDeflate", Counting)
    return inflated


def test_a_message_over_the_size_limit_closes_with_1009(rt):
    seen: list = []
    with connect(run(rt, echo(seen), ws_max_size=1000), open_timeout=WAIT) as ws:
        ws.send("small")
        assert ws.recv(WAIT) == "llams"
        ws.send("\u00e9" * 500)                  # 1000 bytes of UTF-8: at the limit
        assert ws.recv(WAIT) == "\u00e9" * 500
        ws.send("\u00e9" * 501)                  # 501 characters, but 1002 bytes
        with pytest.raises(ConnectionClosed):
            ws.recv(WAIT)
    assert ws.close_code == 1009
    until(lambda: len(seen), lambda n: n == 2)
    assert seen[1]["code"] == 1009


def test_a_compressed_message_over_the_size_limit_is_not_inflated_whole(rt, monkeypatch):
    """A deflate bomb: one frame of 16 KB that inflates to 16 MB of zeros. Closed with 1009
    after at most a step's worth of inflation past the limit, not after all of it."""
    inflated = counting_inflation(monkeypatch)
    seen: list = []
    limit = 65536
    url = run(rt, echo(seen), ws_max_size=limit)
    with RawClient(url, extensions=[PerMessageDeflate()]) as client:
        client.send(BytesMessage(b"\0" * (16 << 20)))
        close = next(client.events())
        assert isinstance(close, CloseConnection) and close.code == 1009
    # (a byte of deflate inflates to at most about 1032)
    assert limit < sum(inflated) <= limit + 1032 * websocket.INFLATE_STEP
    until(lambda: len(seen), lambda n: n == 2)
    assert seen[1]["code"] == 1009


def test_compressed_messages_the_application_has_not_received_are_not_inflated_ahead(
        rt, monkeypatch):
    """Many compressed messages, each under the size limit, to an application that does not
    receive yet: no more is inflated once READ_LIMIT waits unreceived (1 MB read would
    otherwise inflate to about 1 GB)."""
    inflated = counting_inflation(monkeypatch)
    ahead: list[int] = []                          # inflated and not received, at each receive
    release = threading.Event()

    size, count = 512 * 1024, 24

    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        await asyncio.to_thread(release.wait, WAIT)
        for k in range(1, count + 1):
            assert len((await receive())["bytes"]) == size
            ahead.append(sum(inflated) - k * size)
        await send({"type": "websocket.send", "text": "all"})

    url = run(rt, app)
    with RawClient(url, extensions=[PerMessageDeflate()]) as client:
        for _ in range(count):
            client.send(BytesMessage(b"\0" * size))
        until(lambda: sum(inflated), lambda n: n >= size)
        release.set()
        assert next(client.events()).data == "all"
    assert max(ahead) <= websocket.READ_LIMIT + size + 1032 * websocket.INFLATE_STEP


def test_text_messages_of_many_bytes_a_character_come_and_go_without_end(rt):
    """What waits for the application is counted in the same bytes as it leaves: a text of
    3-byte characters, many times past the read limit, all echoed."""
    text = "\u20ac" * 1000                     # 3000 bytes of UTF-8
    with connect(run(rt, echo()), open_timeout=WAIT) as ws:
        for _ in range(300):                   # 900 KB in all: READ_LIMIT three times over
            ws.send(text)
            assert ws.recv(WAIT) == text[::-1]


def test_a_client_gone_with_compressed_input_left_over_is_seen_by_send(rt, monkeypatch):
    """Input held back uninflated while the application is behind (see the test above) does
    not hide the client's going: a send-only application's next send raises."""
    inflated = counting_inflation(monkeypatch)
    raised = threading.Event()

    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        try:
            while True:                        # sends, never receives
                await send({"type": "websocket.send", "text": "tick"})
                await asyncio.sleep(0.01)
        except OSError:
            raised.set()

    url = run(rt, app)
    with RawClient(url, extensions=[PerMessageDeflate()]) as client:
        client.sock.sendall(b"".join(client.ws.send(BytesMessage(b"\0" * 100_000))
                                     for _ in range(100)))
        until(lambda: sum(inflated), lambda n: n > websocket.READ_LIMIT)   # some held back
        # gone at once, as a client that vanishes (a reset, not a close)
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    assert raised.wait(WAIT)


@pytest.mark.parametrize("refusal, status", [
    ([{"type": "websocket.close"}], 403),
    ([{"type": "websocket.http.response.start", "status": 401,
       "headers": [(b"content-type", b"text/plain")]},
      {"type": "websocket.http.response.body", "body": b"who are you?"}], 401),
    ([], 403),                                        # returned without a word
])
def test_refused_before_the_handshake_the_client_gets_an_http_status(rt, refusal, status):
    async def app(scope, receive, send):
        await receive()
        for message in refusal:
            await send(message)

    with pytest.raises(InvalidStatus) as info:
        connect(run(rt, app), open_timeout=WAIT)
    assert info.value.response.status_code == status
    if status == 401:
        assert info.value.response.body == b"who are you?"


def test_an_application_that_raises_after_accepting_closes_with_1011(rt):
    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        await receive()
        raise ValueError("boom")

    with connect(run(rt, app), open_timeout=WAIT) as ws:
        ws.send("anything")
        with pytest.raises(ConnectionClosed):
            ws.recv(WAIT)
    assert ws.close_code == 1011


def test_a_stopping_server_closes_with_1012_and_tells_the_application(rt):
    seen: list = []
    with connect(run(rt, echo(seen)), open_timeout=WAIT) as ws:
        ws.send("x")
        assert ws.recv(WAIT) == "x"
        stopper = threading.Thread(target=rt.stop)
        stopper.start()
        with pytest.raises(ConnectionClosed):
            ws.recv(WAIT)
        stopper.join(WAIT)
    assert ws.close_code == 1012 and seen[1]["code"] == 1012


def test_open_websockets_hold_none_of_the_stage_s_places_for_requests(rt):
    """With two places (tasks=2), three WebSockets open at once, and the application still
    answers HTTP: once accepted, a WebSocket is not a request in flight."""
    talk = echo()

    async def app(scope, receive, send):
        if scope["type"] == "websocket":
            await talk(scope, receive, send)
        else:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"still here"})

    sink = mount_asgi(rt, app, tasks=2, lifespan="off")
    address = serve(rt, ("127.0.0.1", 0), sink).address
    rt.start()
    url = f"ws://127.0.0.1:{address[1]}"
    with connect(url, open_timeout=WAIT) as a, connect(url, open_timeout=WAIT) as b, \
            connect(url, open_timeout=WAIT) as c:
        for ws, text in ((a, "ab"), (b, "cd"), (c, "ef")):
            ws.send(text)
            assert ws.recv(WAIT) == text[::-1]
        with urllib.request.urlopen(f"http://127.0.0.1:{address[1]}/", timeout=WAIT) as r:
            assert r.read() == b"still here"
        stats = rt.stage("asgi").handler.stats()
        assert (stats["websockets"], stats["in_flight"], len(sink)) == (3, 0, 0)
    until(lambda: rt.stage("asgi").handler.open_websockets, lambda n: n == 0)


def test_many_messages_both_ways_arrive_whole_and_in_order(rt):
    """More than the read and write limits in flight: reading pauses while the application
    lags, sending waits while the client does; nothing is lost or reordered."""
    url = run(rt, echo())
    block = bytes(range(256)) * 256                   # 64 KB
    with connect(url, open_timeout=WAIT, max_size=None) as ws:
        sender = threading.Thread(target=lambda: [ws.send(block[i:] + block[:i])
                                                  for i in range(64)])     # 4 MB
        sender.start()
        for i in range(64):
            assert ws.recv(WAIT) == (block[i:] + block[:i])[::-1]
        sender.join(WAIT)


def test_a_plain_http_request_still_reaches_an_asgi_application(rt):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": scope["type"].encode()})

    url = run(rt, app).replace("ws://", "http://")
    assert urllib.request.urlopen(url, timeout=WAIT).read() == b"http"


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.0\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive\r\n",
], ids=["http/1.0", "connection without upgrade"])
def test_an_upgrade_not_meant_for_this_hop_is_served_as_http(rt, head):
    """RFC 9110 7.8, as uvicorn: the application gets an http scope and its answer goes."""
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": scope["type"].encode()})

    port = int(run(rt, app).rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as s:
        s.sendall(head + b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n")
        answer = s.recv(65536)
        assert answer.split(b" ", 2)[1] == b"200"
        while not answer.endswith(b"\r\n\r\nhttp"):    # (the body, if it came apart)
            data = s.recv(65536)
            assert data, answer
            answer += data


def test_a_send_waiting_for_a_client_that_goes_away_raises(rt, monkeypatch):
    raised, done, waiting = [], threading.Event(), threading.Event()
    drained = websocket.WebSocket._drained

    async def noting(self):                         # the application's send now waits
        waiting.set()
        await drained(self)

    monkeypatch.setattr(websocket.WebSocket, "_drained", noting)

    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        try:
            for _ in range(10_000):                    # 640 MB, if nobody stopped it
                await send({"type": "websocket.send", "bytes": b"x" * 65536})
        except OSError as exc:
            raised.append(exc)
        done.set()

    port = int(run(rt, app).rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 101")
        assert waiting.wait(WAIT)                      # behind us: we read nothing more
    assert done.wait(WAIT) and len(raised) == 1


# -- keep-alive pings from the server ------------------------------------------------------------


def test_a_client_that_answers_pings_stays_open_past_many_intervals(rt):
    seen: list = []
    # (a generous timeout: a ping waits for its Pong before the next, so 4 pings mean that
    # 3 Pongs were taken, whatever the machine's load did to their time)
    url = run(rt, echo(seen), ws_ping_interval=0.2, ws_ping_timeout=1.0)
    frames = Frames(pings=4)
    with connect(url, open_timeout=WAIT, ping_interval=None,
                 logger=client_logger(frames)) as ws:
        assert frames.pinged.wait(WAIT)
        ws.send("still here")
        assert ws.recv(WAIT) == "ereh llits"
    assert frames.count("> PONG") >= 4
    until(lambda: len(seen), lambda n: n == 2)
    assert seen[1]["code"] == 1000                 # the client's close, not a keep-alive one


def test_a_client_that_never_answers_is_closed_with_1011(rt):
    seen: list = []
    with RawClient(run(rt, echo(seen), ws_ping_interval=0.1, ws_ping_timeout=0.2)) as client:
        events = client.events()
        ping = next(events)
        assert isinstance(ping, Ping) and len(ping.payload) == 4
        close = next(events)                       # no second ping: the first waits its Pong
        assert isinstance(close, CloseConnection)
        assert (close.code, close.reason) == (1011, "keepalive ping timeout")
    until(lambda: len(seen), lambda n: n == 2)
    assert seen[1] == {"type": "websocket.disconnect", "code": 1011,
                       "reason": "keepalive ping timeout"}


def test_a_pong_that_does_not_answer_our_ping_does_not_keep_the_connection(rt):
    with RawClient(run(rt, echo(), ws_ping_interval=0.1, ws_ping_timeout=0.2)) as client:
        events = client.events()
        assert isinstance(next(events), Ping)
        client.send(Ping(payload=b"mine").response())         # a Pong, but not to our ping
        close = next(events)
        assert isinstance(close, CloseConnection) and close.code == 1011


def test_with_no_timeout_pings_go_on_unanswered_and_the_connection_stays(rt):
    with RawClient(run(rt, echo(), ws_ping_interval=0.1, ws_ping_timeout=0)) as client:
        events = client.events()
        for _ in range(4):                         # past interval + timeout of the tests above
            assert isinstance(next(events), Ping)
        client.send(TextMessage("still here"))
        assert next(e for e in events if not isinstance(e, Ping)) == TextMessage("ereh llits")


def test_with_pings_off_none_are_sent(rt):
    with RawClient(run(rt, echo(), ws_ping_interval=0, ws_ping_timeout=0.1)) as client:
        with pytest.raises(TimeoutError):          # (bounded: what 5 intervals of 0.1 s send)
            next(client.events(timeout=0.5))
        client.send(TextMessage("hello"))
        assert next(client.events()) == TextMessage("olleh")


def test_a_pong_held_up_because_the_application_is_behind_does_not_close(rt, monkeypatch):
    """Past READ_LIMIT of messages the application has not received, the connection stops
    reading: a Pong behind them cannot arrive, and the client is not to blame."""
    while_paused = threading.Event()
    timed_out = websocket.WebSocket._ping_timed_out

    def noting(self):                              # a Pong's deadline passed; were we reading?
        if self.paused:
            while_paused.set()
        timed_out(self)

    monkeypatch.setattr(websocket.WebSocket, "_ping_timed_out", noting)
    release = threading.Event()

    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        await asyncio.to_thread(release.wait, WAIT)    # behind: receives nothing meanwhile
        while (message := await receive())["type"] == "websocket.receive":
            await send({"type": "websocket.send", "bytes": message["bytes"][:1]})

    url = run(rt, app, ws_ping_interval=0.1, ws_ping_timeout=0.5)
    block = b"x" * 65536
    with connect(url, open_timeout=WAIT, ping_interval=None) as ws:
        sender = threading.Thread(target=lambda: [ws.send(block) for _ in range(32)])   # 2 MB
        sender.start()
        assert while_paused.wait(WAIT)
        release.set()
        for _ in range(32):
            assert ws.recv(WAIT) == b"x"
        sender.join(WAIT)


# -- the handshake, checked before the application is called --------------------------------------

def handshake(url: str, fields: bytes) -> bytes:
    """A WebSocket handshake sent as raw bytes (with ``fields`` that no client library would
    send) and the head of the answer, up to its blank line."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  + fields + b"\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = s.recv(65536)
            assert data, answer
            answer += data
        return answer.split(b"\r\n\r\n", 1)[0]


def field(head: bytes, name: bytes) -> bytes | None:
    """The value of the field ``name`` in a response head (None if it has none)."""
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


KEY = b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
VERSION = b"Sec-WebSocket-Version: 13\r\n"


@pytest.mark.parametrize("key", [
    b"short",                                         # not base64 of anything
    b"AAAAAAAAAAAAAAAAAAAA",                          # base64, but of 15 bytes
    b"AAAAAAAAAAAAAAAAAAAAAAAAAAAA",                  # base64, but of 21 bytes
    b"dGhlIHNhbXBsZSBub25jZQ==, dGhlIHNhbXBsZSBub25jZQ==",   # two of them
])
def test_a_malformed_key_is_refused_with_400_before_the_application(rt, key):
    """RFC 6455 4.2.1: the key is base64 of 16 bytes; anything else is not a handshake."""
    called: list = []

    async def app(scope, receive, send):
        called.append(scope)
        await receive()
        await send({"type": "websocket.accept"})

    head = handshake(run(rt, app), b"Sec-WebSocket-Key: " + key + b"\r\n" + VERSION)
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert called == []


def test_an_unsupported_version_is_refused_with_426_naming_the_one_spoken(rt):
    """RFC 6455 4.2.2 and 4.4: 426 Upgrade Required, with the version this server speaks."""
    called: list = []

    async def app(scope, receive, send):
        called.append(scope)

    head = handshake(run(rt, app), KEY + b"Sec-WebSocket-Version: 12\r\n")
    assert head.startswith(b"HTTP/1.1 426 "), head
    assert field(head, b"sec-websocket-version") == b"13"
    assert called == []


@pytest.mark.parametrize("offer, offered", [
    (b"", []),
    (b" , ", []),
    (b"a, , b,", ["a", "b"]),
])
def test_empty_subprotocols_offered_are_ignored(rt, offer, offered):
    """RFC 9110 5.6.1: empty elements of a list do not count; an empty field offers none."""
    seen: list = []
    head = handshake(run(rt, echo(seen)), KEY + VERSION + b"Sec-WebSocket-Protocol: " + offer
                     + b"\r\n")
    assert head.startswith(b"HTTP/1.1 101 "), head
    assert seen[0]["subprotocols"] == offered
    assert field(head, b"sec-websocket-protocol") == (offered[0].encode() if offered else None)


def test_an_empty_subprotocol_accepted_is_none(rt):
    """An application that accepts "" gets no Sec-WebSocket-Protocol field at all: an empty one
    names no subprotocol, and clients refuse it."""
    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept", "subprotocol": ""})
        await receive()

    url = run(rt, app)
    head = handshake(url, KEY + VERSION + b"Sec-WebSocket-Protocol: \r\n")
    assert head.startswith(b"HTTP/1.1 101 ") and field(head, b"sec-websocket-protocol") is None
    with connect(url, open_timeout=WAIT) as ws:
        assert ws.subprotocol is None


def test_a_subprotocol_not_offered_fails_the_handshake_and_says_why(rt, caplog):
    """ASGI: the server fails the handshake (500) if the application accepts a subprotocol the
    client did not offer; the log names both, and the application's send raises. Even an
    application that catches that and returns does not make it a 403."""
    raised: list = []

    async def app(scope, receive, send):
        await receive()
        try:
            await send({"type": "websocket.accept", "subprotocol": "v3"})
        except RuntimeError as exc:
            raised.append(exc)

    with caplog.at_level(logging.ERROR, logger="seda.asgi"), \
            pytest.raises(InvalidStatus) as info:
        connect(run(rt, app), subprotocols=["v1", "v2"], open_timeout=WAIT)
    assert info.value.response.status_code == 500
    assert len(raised) == 1
    assert "'v3'" in caplog.text and "['v1', 'v2']" in caplog.text
