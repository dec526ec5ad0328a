"""The socket layer against real sockets on loopback."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import seda
import seda._loop
from seda.io import (
    Closed,
    Connected,
    Failed,
    FileSegment,
    Packet,
    Send,
    SocketLayer,
    WriteDone,
    sockets,
)

from tests.helpers import WAIT, certs
from tests.helpers.epoll import CountingEpoll
from tests.helpers.net import until
from tests.helpers.recorder import Recorder


class Echo(seda.EventHandler):
    """Sends every packet back upper-cased; remembers what else it saw."""

    def __init__(self) -> None:
        self.events: list = []
        self.closed = threading.Event()

    def handle_event(self, ev):
        if type(ev) is Packet:
            ev.conn.enqueue(ev.data.upper())
        else:
            self.events.append(ev)
            if type(ev) in (Closed, Failed):
                self.closed.set()


@pytest.fixture
def echo(rt):
    handler = Echo()
    rt.add_stage("echo", handler, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("echo"))
    rt.start()
    return handler, listener


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(min(65536, n - len(data)))
        if not chunk:
            break
        data += chunk
    return data


def test_many_clients_each_get_their_own_bytes_back_in_order(echo):
    _, listener = echo
    clients = [socket.create_connection(listener.address, timeout=WAIT) for _ in range(20)]
    try:
        for round_ in range(5):
            for i, c in enumerate(clients):
                c.sendall(f"c{i}r{round_};".encode())
            for i, c in enumerate(clients):
                want = f"C{i}R{round_};".encode()
                assert recv_exactly(c, len(want)) == want
    finally:
        for c in clients:
            c.close()


def test_large_replies_survive_partial_sends(echo):
    _, listener = echo
    with socket.create_connection(listener.address, timeout=WAIT) as c:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # force the server to wait
        payload = os.urandom(2**20).hex().encode()[: 2**20]
        sender = threading.Thread(target=c.sendall, args=(payload,))
        sender.start()
        got = recv_exactly(c, len(payload))
        sender.join()
        assert got == payload.upper()


class SendAtOnce(seda.EventHandler):
    """Sends every packet back upper-cased with ``send`` (at once from the loop), between
    brackets queued with ``enqueue`` and ``send``."""

    def handle_event(self, ev):
        if type(ev) is Packet and ev.data:
            ev.conn.enqueue(b"<")               # queued: what is sent at once waits behind it
            ev.conn.send(ev.data.upper())
            ev.conn.send(b">")


@pytest.fixture
def sender(rt):
    rt.add_stage("sender", SendAtOnce(), blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("sender"))
    rt.start()
    return listener


def test_what_is_sent_at_once_keeps_its_place_behind_what_is_queued(sender):
    with socket.create_connection(sender.address, timeout=WAIT) as c:
        for word in (b"one", b"two", b"three"):
            c.sendall(word)
            assert recv_exactly(c, len(word) + 2) == b"<" + word.upper() + b">"


def test_what_the_kernel_does_not_take_at_once_follows_when_it_can(sender):
    with socket.create_connection(sender.address, timeout=WAIT) as c:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        payload = os.urandom(2**20).hex().encode()[: 2**19]
        c.sendall(payload[:1])                 # one packet: the reply is sent at once
        assert recv_exactly(c, 3) == b"<" + payload[:1].upper() + b">"
        sender_thread = threading.Thread(target=c.sendall, args=(payload,))
        sender_thread.start()
        got = b""
        while len(got.replace(b"<", b"").replace(b">", b"")) < len(payload) or got[-1:] != b">":
            chunk = c.recv(65536)
            assert chunk
            got += chunk
        sender_thread.join()
        assert re.fullmatch(rb"(<[0-9A-F]+>)+", got)     # each reply whole, in its place
        assert got.replace(b"<", b"").replace(b">", b"") == payload.upper()


def test_connected_and_closed_events_and_server_side_close(rt):
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"))
    rt.start()
    c = socket.create_connection(listener.address, timeout=WAIT)
    conn = seen.wait(1)[0].conn
    assert isinstance(seen.events[0], Connected) and conn.peer == c.getsockname()
    conn.enqueue(b"bye")
    conn.close()                                     # after what is queued
    assert recv_exactly(c, 10) == b"bye"             # then EOF
    assert isinstance(seen.wait(2)[1], Closed) and seen.events[1].error is None
    c.close()
    with pytest.raises(seda.StageClosedError):
        conn.enqueue(b"late")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_accepted_connections_do_not_block_and_send_small_writes_at_once(rt, host):
    """Nagle's algorithm is off for every accepted connection (set once, on the listener,
    whose connections inherit it) and each socket is made like its listener's."""
    try:
        socket.create_server((host, 0), family=socket.AF_INET6 if ":" in host else
                             socket.AF_INET).close()
    except OSError:
        pytest.skip(f"no {host} on this machine")
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen((host, 0), rt.sink("owner"))
    rt.start()
    with socket.create_connection(listener.address[:2], timeout=WAIT) as c:
        conn = seen.wait(1)[0].conn
        assert conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        assert conn.sock.getblocking() is False
        assert (conn.sock.family, conn.sock.type) == (c.family, socket.SOCK_STREAM)
        assert conn.peer == c.getsockname()


def test_peer_close_is_reported(echo):
    handler, listener = echo
    socket.create_connection(listener.address, timeout=WAIT).close()
    assert handler.closed.wait(WAIT)
    assert [type(e) for e in handler.events] == [Connected, Closed]


@pytest.mark.parametrize("half_close", [False, True])
def test_what_a_peer_sends_just_before_it_closes_arrives_and_then_the_close(rt, half_close):
    """Data and the peer's FIN that arrive together are one readiness edge: the close behind
    the data is still read, after it (sockets are watched edge-triggered)."""
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"),
                                         half_close=half_close)
    rt.start()
    c = socket.create_connection(listener.address, timeout=WAIT)
    seen.wait(1)                               # Connected: the socket is watched
    hold, held = threading.Event(), threading.Event()

    def stall():                               # the loop waits while both arrive
        held.set()
        hold.wait(WAIT)

    rt.loop.call_soon_threadsafe(stall)
    assert held.wait(WAIT)
    c.sendall(b"last words")
    c.shutdown(socket.SHUT_WR)
    hold.set()
    events = seen.wait(3)
    assert [type(e) for e in events] == [Connected, Packet, Packet if half_close else Closed]
    assert events[1].data == b"last words"
    if half_close:                             # the end of input; the connection stays
        assert events[2].data == b""
        events[2].conn.enqueue(b"reply")
        events[2].conn.close()
        assert recv_exactly(c, 10) == b"reply"
    c.close()


def test_a_connection_reported_twice_before_it_is_read_has_its_data_before_its_close(rt):
    """With more stages ready than the loop runs between two polls, the loop polls again
    before the read stage runs, and a socket whose data and FIN came together is in its
    batch twice: the second read finds the end, and the Closed must not pass the data."""
    seen = Recorder()

    class Idle(seda.EventHandler):
        def handle_events(self, events):
            pass

    rt.add_stage("owner", seen, blocking=False)
    idle = [rt.add_stage(f"idle{i}", Idle(), blocking=False).sink
            for i in range(seda._loop.BUDGET + 6)]
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"))
    rt.start()
    c = socket.create_connection(listener.address, timeout=WAIT)
    seen.wait(1)
    hold, held = threading.Event(), threading.Event()

    def stall_then_busy():                     # both arrive while the loop waits, and then
        held.set()                             # the idle stages come first
        hold.wait(WAIT)
        for sink in idle:
            sink.enqueue(None)

    rt.loop.call_soon_threadsafe(stall_then_busy)
    assert held.wait(WAIT)
    c.sendall(b"last words")
    c.shutdown(socket.SHUT_WR)                 # (on loopback, in before this returns)
    hold.set()
    events = seen.wait(3)
    assert [type(e) for e in events] == [Connected, Packet, Closed]
    assert events[1].data == b"last words"
    c.close()


def test_file_segments_go_out_with_sendfile_and_writes_are_confirmed(rt, tmp_path):
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"))
    rt.start()
    body = os.urandom(1_000_000)
    (tmp_path / "f").write_bytes(body)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            conn = seen.wait(1)[0].conn
            conn.enqueue_many([b"head:", FileSegment(fd, 10, len(body) - 10),
                               Send(b":tail", rt.sink("owner"), tag="sent")])
            assert recv_exactly(c, 5 + len(body) - 10 + 5) == b"head:" + body[10:] + b":tail"
            done = seen.wait(2)[1]
            assert isinstance(done, WriteDone) and done.tag == "sent" and done.conn is conn
    finally:
        os.close(fd)


@pytest.mark.parametrize("overflow, error", [("reject", seda.RejectedError),
                                             ("close", seda.StageClosedError)])
def test_a_slow_peer_cannot_make_memory_grow(rt, overflow, error):
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"),
                                         max_pending=2**20, overflow=overflow)
    rt.start()
    with socket.create_connection(listener.address, timeout=WAIT) as c:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        conn = seen.wait(1)[0].conn
        chunk = b"x" * 65536
        with pytest.raises(error):
            for _ in range(10_000):                     # 640 MB if nothing stopped it
                conn.enqueue(chunk)
        assert conn.pending <= 2**20 + len(chunk)       # the last one accepted went over
        if overflow == "close":
            assert isinstance(seen.wait(2)[1], Closed)


def test_bytes_pending_stay_exact_while_producer_threads_and_the_loop_change_them(rt):
    """Producers (taking turns, as the contract asks) enqueue from two threads while the loop
    thread writes: once everything is read, nothing is pending. One shared count updated by
    both sides loses updates (a read and a write each), the more often the more the threads
    switch, and the bound then drifts."""
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"))
    rt.start()
    turns, count, item = threading.Lock(), 20_000, b"y" * 100
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)                         # switch threads as often as can be
    try:
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            conn = seen.wait(1)[0].conn

            def produce() -> None:
                for _ in range(count):
                    with turns:
                        conn.enqueue(item)

            threads = [threading.Thread(target=produce) for _ in range(2)]
            for t in threads:
                t.start()
            got = recv_exactly(c, 2 * count * len(item))
            for t in threads:
                t.join(WAIT)
    finally:
        sys.setswitchinterval(interval)
    assert len(got) == 2 * count * len(item)
    assert conn.pending == 0


def test_an_item_is_never_refused_for_its_own_size_and_files_weigh_nothing(rt, tmp_path):
    """The threshold bounds what piles up behind a slow peer; one large response (a 5 MB body,
    a 50 MB file going out with sendfile) is not what it protects against."""
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"),
                                         max_pending=2**20)
    rt.start()
    big = tmp_path / "big"
    big.write_bytes(os.urandom(8 * 2**20))
    fd = os.open(big, os.O_RDONLY)
    body = os.urandom(5 * 2**20)
    try:
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            conn = seen.wait(1)[0].conn
            conn.enqueue(FileSegment(fd, 0, 8 * 2**20))
            conn.enqueue(body)
            conn.close()
            got = bytearray()
            while piece := c.recv(2**20):
                got += piece
        assert bytes(got) == big.read_bytes() + body
    finally:
        os.close(fd)


def test_outgoing_connections(rt):
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    rt.add_stage("echo", Echo(), blocking=False)
    layer = SocketLayer.of(rt)
    listener = layer.listen(("127.0.0.1", 0), rt.sink("echo"))
    rt.start()
    conn = layer.connect(listener.address, rt.sink("owner"))
    conn.enqueue(b"queued before connecting")
    events = seen.wait(2)
    assert isinstance(events[0], Connected)
    assert events[1].data == b"QUEUED BEFORE CONNECTING"

    with socket.socket() as probe:                      # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()
    layer.connect(dead, rt.sink("owner"))
    failed = seen.wait(3)[2]
    assert isinstance(failed, Failed) and isinstance(failed.error, ConnectionRefusedError)


def test_tls_both_ways(rt, tmp_path):
    server_ctx, client_ctx = certs.contexts(tmp_path)
    handler = Echo()
    rt.add_stage("echo", handler, blocking=False)
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    layer = SocketLayer.of(rt)
    listener = layer.listen(("127.0.0.1", 0), rt.sink("echo"), ssl_context=server_ctx)
    rt.start()
    raw = socket.create_connection(listener.address, timeout=WAIT)
    with client_ctx.wrap_socket(raw, server_hostname="localhost") as c:   # a blocking client
        c.sendall(b"secret")
        assert recv_exactly(c, 6) == b"SECRET"
        for i in range(30):                    # one thread: SSLSocket is not thread-safe
            piece = bytes([97 + i % 26]) * 10_000
            c.sendall(piece)
            assert recv_exactly(c, len(piece)) == piece.upper()
    conn = layer.connect(listener.address, rt.sink("owner"), ssl_context=client_ctx,
                         server_hostname="localhost")                     # our own client
    conn.enqueue(b"over tls")
    events = seen.wait(2)
    assert isinstance(events[0], Connected) and events[1].data == b"OVER TLS"


def test_a_failed_tls_handshake_closes_the_connection(rt, tmp_path):
    server_ctx, _ = certs.contexts(tmp_path)
    handler = Echo()
    rt.add_stage("echo", handler, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("echo"),
                                         ssl_context=server_ctx)
    rt.start()
    with socket.create_connection(listener.address, timeout=WAIT) as c:
        c.sendall(b"GET / HTTP/1.1\r\n\r\n")          # plaintext to a TLS port
        assert handler.closed.wait(WAIT)
        assert c.recv(100) == b""                      # closed on us, nothing decrypted
    assert isinstance(handler.events[-1], Failed)
    assert isinstance(handler.events[-1].error, ssl.SSLError)


def test_stop_closes_listeners_and_connections(echo, rt):
    _, listener = echo
    c = socket.create_connection(listener.address, timeout=WAIT)
    c.sendall(b"a")
    assert recv_exactly(c, 1) == b"A"
    rt.stop()
    assert c.recv(10) == b""                          # the server side is gone
    c.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(listener.address, timeout=WAIT)


SERVER = textwrap.dedent("""
    import resource, sys, seda
    from seda.io import SocketLayer, Packet
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    class Echo(seda.EventHandler):
        def handle_event(self, ev):
            if type(ev) is Packet:
                reply = str(self.listener.emfile).encode() if ev.data == b"?" else ev.data
                ev.conn.enqueue(reply)
    echo = Echo()
    with seda.Runtime() as rt:
        rt.add_stage("echo", echo, blocking=False)
        echo.listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("echo"))
        print(echo.listener.address[1], flush=True)
        sys.stdin.read()                       # until the test closes our stdin
""")


def test_running_out_of_descriptors_does_not_stall_the_listener():
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    clients = []
    try:
        port = int(server.stdout.readline())
        first = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        first.sendall(b"a")
        assert first.recv(1) == b"a"
        for _ in range(80):                    # more than the server's 48 descriptors
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=WAIT))
        first.sendall(b"b")                    # still served while the backlog is refused
        assert first.recv(1) == b"b"
        for c in clients:
            c.close()
        late = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        late.sendall(b"?")
        assert int(late.recv(10)) >= 1         # it did run out, and it recovered
        late.close()
        first.close()
    finally:
        for c in clients:
            c.close()
        server.stdin.close()
        server.wait(timeout=WAIT)


def test_read_rate_limit_slows_the_sender(echo, rt):
    _, listener = echo

    def round_trips(n: int) -> float:
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            started = time.monotonic()
            for i in range(n):
                c.sendall(b"%d;" % i)
                assert recv_exactly(c, len(b"%d;" % i)) == b"%d;" % i
            return time.monotonic() - started

    SocketLayer.of(rt).limit_reads(50, burst=1)
    assert round_trips(20) >= 19 / 50 * 0.8          # at most 50 packets a second
    SocketLayer.of(rt).limit_reads(None)
    assert round_trips(20) < 2.0


def test_a_connection_the_read_stage_refuses_stops_being_read_and_no_other(echo, rt):
    _, listener = echo
    with socket.create_connection(listener.address, timeout=WAIT) as refused, \
            socket.create_connection(listener.address, timeout=WAIT) as served:
        port = refused.getsockname()[1]
        # readable connections reach the read stage together, once a poll round: a refusal
        # of one must not cost the others their reads
        rt.sink(SocketLayer.READ).predicate = lambda conn: conn.peer[1] != port
        refused.sendall(b"a")
        served.sendall(b"b")
        assert recv_exactly(served, 1) == b"B"
        served.sendall(b"c")
        assert recv_exactly(served, 1) == b"C"
        refused.settimeout(0.2)
        with pytest.raises(socket.timeout):
            refused.recv(1)


def test_connections_the_rate_limit_held_are_read_again_once_it_is_lifted():
    class Held:                                # a connection the limit paused
        closed, resumed = False, False

        def resume_reading(self):
            self.resumed = True

    reads, conn = sockets._ReadStage(), Held()
    reads.held = [conn]
    reads.limit = None                         # lifted while the wake-up was on its way
    reads.handle_events([sockets._ResumeReads()])
    assert conn.resumed and reads.held == []


def test_stopping_stops_accepting_and_reading_first_then_drains(rt, caplog):
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"))
    rt.start()
    clients = [socket.create_connection(listener.address, timeout=WAIT) for _ in range(5)]
    seen.wait(5)
    for c in clients:
        c.sendall(b"still arriving while we stop" * 100)
    rt.stop()
    assert "has been destroyed" not in caplog.text     # no callback into a closed stage
    for c in clients:
        c.settimeout(WAIT)
        with contextlib.suppress(ConnectionResetError):
            while c.recv(65536):
                pass                                    # ends: the server closed it
        c.close()


def test_a_file_segment_is_confirmed_when_sent_or_abandoned(rt, tmp_path):
    seen = Recorder()
    rt.add_stage("owner", seen, blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("owner"))
    rt.start()
    (tmp_path / "f").write_bytes(b"f" * 100_000)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            conn = seen.wait(1)[0].conn
            conn.enqueue(FileSegment(fd, 0, 100_000, rt.sink("owner"), "sent"))
            assert recv_exactly(c, 100_000) == b"f" * 100_000
            assert seen.wait(2)[1].tag == "sent"
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            conn = [e.conn for e in seen.wait(4) if isinstance(e, Connected)][1]
            for i in range(30):                 # far more than the socket takes unread
                conn.enqueue(FileSegment(fd, 0, 100_000, rt.sink("owner"), i))
            conn.abort()
            tags = {e.tag for e in seen.wait(4 + 30 + 1) if isinstance(e, WriteDone)}
            assert tags == {"sent", *range(30)}  # every one released, sent or not
    finally:
        os.close(fd)


def test_closing_with_unread_input_still_delivers_the_last_bytes(rt):
    """Closing a socket whose input is unread makes the kernel reset the connection, which can
    destroy what was just sent; the layer shuts down its side and drains first."""
    seen = Recorder()

    class Deaf(seda.EventHandler):
        def init(self, ctx):
            self.seen = ctx.runtime.sink("seen")

        def handle_event(self, ev):
            if type(ev) is Connected:
                ev.conn.pause_reading()         # never read what the client sends
                self.seen.enqueue(ev)

    rt.add_stage("seen", seen, blocking=False)
    rt.add_stage("deaf", Deaf(), blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("deaf"))
    rt.start()
    for i in range(3):
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            conn = seen.wait(i + 1)[i].conn      # reading is paused by now
            c.sendall(b"unread " * 1000)         # so this stays in the server's buffer
            conn.enqueue(b"last words")
            conn.close()
            assert recv_exactly(c, 10) == b"last words"
            assert c.recv(10) == b""             # then a proper end, not a reset


class Closer(seda.EventHandler):
    """Closes every connection as soon as it is up, after sending ``say`` (lingering or not, as
    ``linger`` says); tells ``seen`` of the rest."""

    def __init__(self, say: bytes = b"", linger: bool = True) -> None:
        self.say, self.linger = say, linger

    def init(self, ctx):
        self.seen = ctx.runtime.sink("seen")

    def handle_event(self, ev):
        if type(ev) is Connected:
            if self.say:
                ev.conn.enqueue(self.say)
            ev.conn.close(linger=self.linger)
        else:
            self.seen.enqueue(ev)


def closer(rt, say: bytes = b"", linger: bool = True) -> tuple[Recorder, sockets.Listener]:
    seen = Recorder()
    rt.add_stage("seen", seen, blocking=False)
    rt.add_stage("closer", Closer(say, linger), blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("closer"))
    rt.start()
    return seen, listener


def test_lingering_connections_share_one_timer_event(rt, monkeypatch):
    monkeypatch.setattr(sockets, "LINGER", 60.0)        # none runs out during the test
    seen, listener = closer(rt)
    clients = [socket.create_connection(listener.address, timeout=WAIT) for _ in range(5)]
    for c in clients:
        assert c.recv(10) == b""                         # the server's side is shut: lingering
    assert rt.timer.pending() == 1
    for c in clients:
        c.close()                                        # the peers close: so do the lingerers
    assert all(type(ev) is Closed for ev in seen.wait(5))


def test_a_lingering_connection_is_closed_once_its_time_is_up(rt, monkeypatch):
    monkeypatch.setattr(sockets, "LINGER", 0.05)
    seen, listener = closer(rt)
    clients = [socket.create_connection(listener.address, timeout=WAIT) for _ in range(3)]
    try:
        for c in clients:
            assert c.recv(10) == b""
        assert all(type(ev) is Closed for ev in seen.wait(3))   # without a word from the peers
        assert rt.timer.pending() == 0
    finally:
        for c in clients:
            c.close()


def test_a_close_without_lingering_waits_for_nothing_from_the_peer(rt, monkeypatch):
    """``close(linger=False)``, for an owner that knows the peer sends nothing more: what was
    sent arrives, then the end, and the connection is closed (and its owner told) while the
    peer still holds its side open, where a lingering one would wait for the peer to close."""
    monkeypatch.setattr(sockets, "LINGER", 60.0)        # a lingering close would not end here
    seen, listener = closer(rt, say=b"bye", linger=False)
    clients = [socket.create_connection(listener.address, timeout=WAIT) for _ in range(3)]
    try:
        for c in clients:
            assert recv_exactly(c, 3) == b"bye" and c.recv(10) == b""
        assert all(type(ev) is Closed for ev in seen.wait(3))   # the peers are still open
        assert rt.timer.pending() == 0                           # and nothing lingers
    finally:
        for c in clients:
            c.close()


def test_a_new_connection_is_read_in_the_round_that_accepts_it(rt):
    """A client sends its request as soon as it is connected: what the listener accepts is
    read at once, not after another poll reports it readable."""
    seen = Recorder()
    rt.loop._epoll = counting = CountingEpoll(rt.loop._epoll)

    class Reader(seda.EventHandler):
        def init(self, ctx):
            self.seen = ctx.runtime.sink("seen")

        def handle_event(self, ev):            # each with the polls made before it
            self.seen.enqueue((ev, sum(name == "poll" for name, _ in counting.calls)))

    rt.add_stage("seen", seen, blocking=False)
    rt.add_stage("reader", Reader(), blocking=False)
    listener = SocketLayer.of(rt).listen(("127.0.0.1", 0), rt.sink("reader"))
    try:
        with socket.create_connection(listener.address, timeout=WAIT) as c:
            c.sendall(b"hello")                # in the kernel before the loop first looks
            rt.start()
            (connected, accepted_after), (packet, read_after) = seen.wait(2)
    finally:
        rt.loop._epoll = counting.epoll        # (the loop's own, for its stop to close)
    assert type(connected) is Connected and packet.data == b"hello"
    assert read_after == accepted_after       # no poll between the accept and the read


def test_finish_closes_at_once_what_has_nothing_left_to_send(rt):
    """On the loop thread, after an answer the kernel took whole (``send``), ``finish`` closes
    without the write stage's hop, and says so: the owner gets no Closed event for it. With
    something still queued, it closes after it, and the owner is told with a Closed event."""
    conns, closed, seen = [], Recorder(), Recorder()

    class Keep(seda.EventHandler):
        def handle_event(self, ev):
            if type(ev) is Connected:
                conns.append(ev.conn)
            else:
                closed.handle_events([ev])

    rt.add_stage("seen", seen, blocking=False)
    rt.add_stage("keep", Keep(), blocking=False)
    layer = SocketLayer.of(rt)
    listener = layer.listen(("127.0.0.1", 0), rt.sink("keep"))
    rt.start()
    with socket.create_connection(listener.address, timeout=WAIT) as a, \
            socket.create_connection(listener.address, timeout=WAIT) as b:
        until(lambda: len(conns), lambda n: n == 2)
        done = threading.Event()

        def on_the_loop():
            first, second = conns
            seen.handle_events([(first.send(b"bye"), first.finish(linger=False), first.closed)])
            second.enqueue(b"later")           # queued for the write stage
            seen.handle_events([(second.finish(linger=False), second.closed)])
            done.set()

        layer.call(on_the_loop)
        assert done.wait(WAIT)
        assert seen.events == [(True, True, True), (False, False)]
        assert recv_exactly(a, 3) == b"bye" and a.recv(10) == b""
        assert recv_exactly(b, 5) == b"later" and b.recv(10) == b""
        (ev,) = closed.wait(1)                 # the second's close only
        assert type(ev) is Closed and ev.conn is conns[1] and ev.error is None


def test_closing_a_connection_that_waits_to_write_unwatches_it_at_once(rt):
    """Its reader and its writer are forgotten together, and with no epoll call: closing the
    socket ends its watch in the kernel."""
    conns, done, seen = [], threading.Event(), {}

    class Flood(seda.EventHandler):
        def handle_event(self, ev):
            if type(ev) is Connected:
                ev.conn.enqueue(b"x" * 2**24)          # more than the kernel takes: it waits
                conns.append(ev.conn)

    rt.add_stage("flood", Flood(), blocking=False)
    layer = SocketLayer.of(rt)
    listener = layer.listen(("127.0.0.1", 0), rt.sink("flood"))
    rt.start()

    def close_on_the_loop():
        conn, epoll = conns[0], rt.loop._epoll
        rt.loop._epoll = counting = CountingEpoll(epoll)
        try:
            seen["writing"] = conn._writing
            conn._teardown()
        finally:
            rt.loop._epoll = epoll
        seen["calls"], seen["fd"] = counting.calls, conn.fd
        seen["watched"] = conn.fd in rt.loop._watched
        done.set()

    with socket.socket() as c:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # takes little of the flood
        c.settimeout(WAIT)
        c.connect(listener.address)
        assert c.recv(1) == b"x"                       # sending has begun, and stopped short
        layer.call(close_on_the_loop)                  # after the loop's round of sends
        assert done.wait(WAIT)
    assert seen["writing"] and seen["calls"] == [] and not seen["watched"]
