"""The HTTP protocol state machine in memory, case by case (as h11 is tested): bytes in, events
out, the clock passed in. No sockets: what needs them is in test_server.py."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seda.http import (
    HttpRequest,
    Limits,
    ReadyAnswer,
    Response,
    ServerProtocol,
    StreamBody,
    protocol,
)
from seda.http.body import BodyError
from seda.http.protocol import (
    ABORT,
    CLOSE,
    CLOSED,
    DONE,
    HANG_UP,
    IDLE,
    PAUSE,
    RESUME,
    TRANSITIONS,
    Switched,
    Unsent,
)
from seda.http.response import Prepared, Switch, prepare_head


class Conn:
    """A protocol with a fake clock; collects what it emits, split by kind."""

    def __init__(self, limits: Limits | None = None, **options) -> None:
        self.now = 100.0
        self.p = ServerProtocol(limits or Limits(), "conn", now=self.now, **options)
        self.events: list = []

    def send(self, data: bytes) -> list:
        return self._keep(self.p.receive(data, self.now))

    def answer(self, request: HttpRequest, response=None) -> list:
        return self._keep(self.p.respond(request, response or Response(200, request.path.encode()),
                                         self.now))

    def tick(self, seconds: float) -> list:
        self.now += seconds
        return self._keep(self.p.tick(self.now))

    def _keep(self, events: list) -> list:
        """Keep every event; return those but PAUSE and RESUME (tested on their own)."""
        self.events += events
        return [e for e in events if e is not PAUSE and e is not RESUME]

    def requests(self) -> list[HttpRequest]:
        return [e for e in self.events if type(e) is HttpRequest]

    def wire(self) -> bytes:
        return b"".join(e for e in self.events if type(e) is bytes)

    def statuses(self) -> list[int]:
        return [int(s) for s in re.findall(rb"HTTP/1\.[01] (\d{3})", self.wire())]

    @property
    def closed(self) -> bool:
        return CLOSE in self.events or HANG_UP in self.events or ABORT in self.events


def get(path: str = "/", *extra: str) -> bytes:
    return ("\r\n".join([f"GET {path} HTTP/1.1", "Host: x", *extra]) + "\r\n\r\n").encode()


def post(path: str, body: bytes, *extra: str) -> bytes:
    head = "\r\n".join([f"POST {path} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}",
                        *extra])
    return head.encode() + b"\r\n\r\n" + body


# -- the table ------------------------------------------------------------------------------------

def test_every_transition_leads_to_a_state_of_its_side():
    for side, table in TRANSITIONS.items():
        for state, moves in table.items():
            for event, nxt in moves.items():
                assert nxt in table, f"{side}: {state} --{event}--> {nxt} is not a state"


# -- well-formed traffic --------------------------------------------------------------------------

def test_a_request_and_its_answer_keep_the_connection_open():
    c = Conn()
    (req,) = c.send(get("/a?q=1", "X-Thing: yes"))
    assert (req.method, req.path, req.query, req.version) == ("GET", "/a", "q=1", "1.1")
    assert req.header("x-thing") == "yes" and req.keep_alive and req.connection == "conn"
    c.answer(req)
    assert c.statuses() == [200] and not c.closed
    assert c.p.client is IDLE and c.p.server is IDLE


def test_answers_leave_in_request_order_whatever_order_they_come_in():
    c = Conn()
    a, b, d = c.send(get("/a") + get("/b") + get("/d"))
    c.answer(d)
    c.answer(b)
    assert c.wire() == b""
    c.answer(a)
    assert re.findall(rb"\r\n\r\n(/\w)", c.wire()) == [b"/a", b"/b", b"/d"]


def test_a_request_split_anywhere_parses_the_same():
    data = get("/one", "A: 1") + post("/two", b"hello") + get("/three")
    for cut in range(1, len(data)):
        c = Conn()
        c.send(data[:cut])
        c.send(data[cut:])
        assert [(r.path, r.body) for r in c.requests()] == [
            ("/one", b""), ("/two", b"hello"), ("/three", b"")], cut


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), max_size=30))
def test_any_packetisation_of_a_pipelined_stream_gives_the_same_requests(sizes):
    chunked = (b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"4 ; ext = \"v\"\r\nwiki\r\n5\r\npedia\r\n0\r\nX-Trace: 7\r\n\r\n")
    data = get("/a") + chunked + post("/p", b"xyz") + get("/z")
    c, pos = Conn(), 0
    for size in sizes:
        c.send(data[pos:pos + size])
        pos += size
    c.send(data[pos:])
    reqs = c.requests()
    # (the chunked body streams unless it came whole with its head)
    assert [(r.path, r.body if r.stream is None else r.stream.read()) for r in reqs] == [
        ("/a", b""), ("/c", b"wikipedia"), ("/p", b"xyz"), ("/z", b"")]
    assert reqs[1].trailers == [(b"x-trace", b"7")]


def test_expect_100_continue_is_answered_when_its_turn_comes():
    c = Conn()
    (slow,) = c.send(get("/slow"))
    c.send(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue \r\n\r\n")
    assert b"100 Continue" not in c.wire()           # an answer before it is still owed
    c.answer(slow)
    assert c.wire().endswith(b"HTTP/1.1 100 Continue\r\n\r\n")
    (up,) = c.send(b"abc")
    assert up.body == b"abc"


def test_http_1_2_is_served_as_1_1_and_major_versions_get_505():
    c = Conn()
    (req,) = c.send(b"GET / HTTP/1.2\r\nHost: x\r\n\r\n")
    c.answer(req)
    assert c.wire().startswith(b"HTTP/1.1 200")
    for version in (b"2.0", b"3.0"):
        c = Conn()
        c.send(b"GET / HTTP/" + version + b"\r\nHost: x\r\n\r\n")
        assert c.statuses() == [505] and c.closed


def test_an_http_0_9_request_gets_505_at_once_though_no_empty_line_follows():
    """HTTP/0.9's client sends its request line alone and waits: it is answered now, not at
    the header timeout. A head whose lines come in pieces is not taken for one."""
    for request in (b"GET /\r\n", b"GET /\r\n\r\n"):
        c = Conn()
        c.send(request)
        assert c.statuses() == [505] and c.closed, request
    c = Conn()
    assert c.send(b"GET / HTTP/1.1\r\n") == [] and c.statuses() == []
    (req,) = c.send(b"Host: x\r\n\r\n")
    assert req.version == "1.1"


def test_http_1_0_is_answered_http_1_1_and_closes_unless_asked_to_keep_alive():
    """RFC 9110 2.5: the answer says HTTP/1.1 (the highest version of the request's major one
    the server conforms to); what it does is HTTP/1.0's: a close, said, unless the client
    asked to keep the connection (then said), and a body of unknown length never chunked."""
    c = Conn()
    (req,) = c.send(b"GET / HTTP/1.0\r\n\r\n")
    c.answer(req)
    assert c.wire().startswith(b"HTTP/1.1 200 OK\r\n") and c.closed
    assert b"connection: close\r\n" in c.wire()
    c = Conn()
    (req,) = c.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    c.answer(req)
    assert c.wire().startswith(b"HTTP/1.1 200 OK\r\n") and not c.closed
    assert b"connection: keep-alive\r\n" in c.wire()
    (req,) = c.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    c.answer(req, Response(200, iter([b"a", b"b"])))    # no length: ended by the close
    second = c.wire().split(b"HTTP/1.1 200 OK\r\n")[2]
    assert b"connection: close\r\n" in second and b"transfer-encoding" not in second
    assert second.endswith(b"\r\n\r\nab") and c.closed


def test_the_version_is_read_right_however_the_head_arrives():
    """Whole, byte by byte (the request line split anywhere), after empty lines, or behind
    another request in the same packet: the answer keeps the request's own version's ways
    (HTTP/1.0's close)."""
    head = b"GET /a%20b?q=1 HTTP/1.0\r\nHost: x\r\n\r\n"
    for pieces in ([head], [head[:20], head[20:]], [bytes([b]) for b in head],
                   [b"\r\n\r\n" + head], [get("/first") + head]):
        c = Conn()
        reqs = [r for piece in pieces for r in c.send(piece)]
        assert [r.version for r in reqs][-1] == "1.0"
        for req in reqs:
            c.answer(req)
        assert c.wire().count(b"connection: close") == 1 and c.closed


def test_the_fragment_is_not_part_of_the_target():
    c = Conn()
    (req,) = c.send(get("/p?a=1#frag"))
    assert (req.path, req.query, req.target) == ("/p", "a=1", "/p?a=1")


def test_options_star_and_absolute_form_targets():
    c = Conn()
    star, absolute = c.send(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"
                            + get("http://x/abs/path?k=v"))
    assert star.method == "OPTIONS" and star.path == "*"
    assert (absolute.path, absolute.query) == ("/abs/path", "k=v")


def test_an_upgrade_request_is_served_as_a_plain_one():
    c = Conn()
    reqs = c.send(get("/ws", "Connection: Upgrade", "Upgrade: websocket") + get("/next"))
    assert [r.path for r in reqs] == ["/ws", "/next"]
    # noted as the head is read, however the client spells the field, for only that request
    assert [r.upgrade for r in reqs] == [True, False]
    assert Conn().send(get("/", "UPGRADE: h2c", "Connection: HTTP2-Settings, upgrade"))[0].upgrade


@pytest.mark.parametrize("head", [
    b"GET /ws HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    get("/ws", "Upgrade: websocket"),
    get("/ws", "Connection: keep-alive", "Upgrade: websocket"),
], ids=["http/1.0", "no connection", "connection without upgrade"])
def test_an_upgrade_not_meant_for_this_hop_is_ignored(head):
    """RFC 9110 7.8: ignored in HTTP/1.0, and not for this hop unless Connection names it."""
    c = Conn()
    (req,) = c.send(head)
    assert req.path == "/ws" and not req.upgrade


class Tunnel:
    """What a WebSocket would be; the protocol only carries it."""

    def feed(self, data): ...

    def lost(self): ...

    def stopping(self): ...


SWITCH_HEAD = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"


def test_a_switch_answer_hands_the_connection_over():
    c = Conn()
    first, upgrade = c.send(get("/a") + get("/ws", "Connection: Upgrade", "Upgrade: websocket"))
    tunnel = Tunnel()
    assert c.answer(upgrade, Switch(SWITCH_HEAD, tunnel)) == []    # after the first's answer
    events = c.answer(first)
    assert events[1] == SWITCH_HEAD and type(events[2]) is Switched and events[2].tunnel is tunnel
    assert c.statuses() == [200, 101] and not c.closed
    assert c.p.client is DONE and c.p.server is CLOSED
    assert c.send(get("/after")) == [] and c.tick(1000) == []    # not HTTP any more: no timeouts


def test_a_switch_is_refused_when_a_request_followed_the_upgrade():
    c = Conn()
    upgrade, after = c.send(get("/ws", "Connection: Upgrade", "Upgrade: websocket") + get("/b"))
    tunnel = Tunnel()
    events = c.answer(upgrade, Switch(SWITCH_HEAD, tunnel))
    assert any(type(e) is Unsent and e.response.tunnel is tunnel for e in events)
    assert c.statuses() == [400] and c.closed
    assert c.answer(after) and c.statuses() == [400]    # nothing after the refusal goes


# -- what a client may not do ---------------------------------------------------------------------

def test_requests_pipelined_before_connection_close_are_answered_and_nothing_after_runs():
    c = Conn()
    reqs = c.send(get("/a") + get("/b", "Connection: close") + get("/c") + b"garbage")
    assert [r.path for r in reqs] == ["/a", "/b"]
    assert c.p.client is DONE
    c.answer(reqs[1])
    c.answer(reqs[0])
    assert c.statuses() == [200, 200] and c.events[-1] is CLOSE
    assert b"connection: close" in c.wire().split(b"HTTP/1.1")[-1]


def test_a_client_that_said_close_is_hung_up_on_and_one_that_sends_more_waits():
    """A client whose last request said close (HTTP/1.1 Connection: close, or HTTP/1.0 without
    keep-alive) sends nothing more: the close need not wait for its input (HANG_UP). One that
    sends more after it, or one we stop, gets a CLOSE: lest our last answer be lost to the
    reset a close over unread input makes, its input is drained first (RFC 9112 9.6)."""
    for said_close in (get("/a", "Connection: close"), b"GET /a HTTP/1.0\r\n\r\n",
                       post("/a", b"body", "Connection: close")):
        c = Conn()
        (req,) = c.send(said_close)
        c.answer(req)
        assert c.events[-1] is HANG_UP and CLOSE not in c.events
    more = Conn()
    (req,) = more.send(get("/a", "Connection: close") + b"GET /b")
    more.answer(req)
    assert more.events[-1] is CLOSE and HANG_UP not in more.events
    ready = Conn(answers=ready_answers("/f"))    # answered at once, then more follows
    assert ready.send(get("/f", "Connection: close")) == [ready.wire(), HANG_UP]
    again = Conn(answers=ready_answers("/f"))
    again.send(get("/f", "Connection: close") + get("/f"))
    assert again.statuses() == [200] and again.events[-1] is CLOSE
    assert HANG_UP not in again.events
    stopped = Conn()
    (req,) = stopped.send(get("/a"))
    stopped.p.stop(stopped.now)
    stopped.answer(req)
    assert stopped.events[-1] is CLOSE


def test_requests_before_a_bad_one_are_answered_in_order_then_the_400():
    c = Conn()
    posts = b"".join(post(f"/p{i}", b"x") for i in range(10))
    reqs = c.send(posts + b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"
                  + get("/never"))
    assert [r.path for r in reqs] == [f"/p{i}" for i in range(10)]
    assert c.wire() == b""                           # the 400 waits for the ten answers
    for req in reversed(reqs):
        c.answer(req)
    assert c.statuses() == [200] * 10 + [400] and c.events[-1] is CLOSE
    assert b"connection: close" not in c.wire().split(b"HTTP/1.1 400")[0]


@pytest.mark.parametrize("trailer", [b"Host: evil", b"Content-Type: text/evil",
                                     b"Transfer-Encoding: chunked", b"Content-Length: 9"])
def test_trailers_cannot_carry_framing_routing_or_content_fields(trailer):
    c = Conn()
    c.send(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"3\r\nabc\r\n0\r\n" + trailer + b"\r\n\r\n")
    assert c.requests() == [] and c.statuses() == [400] and c.closed


_CHUNKED = (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n0\r\n")
_SIX = b"".join(b"X-T%d: 1\r\n" % i for i in range(6))


def test_trailers_are_held_to_the_limits_of_the_header_section():
    """Trailer fields are counted against ``max_headers`` and ``max_header_bytes`` as header
    fields are (apart from them): 431 past either, as for the header section, and a close."""
    c = Conn(Limits(max_headers=5))
    c.send(_CHUNKED + _SIX + b"\r\n")
    assert c.requests() == [] and c.statuses() == [431] and c.closed
    c = Conn(Limits(max_headers=6))
    (req,) = c.send(_CHUNKED + _SIX + b"\r\n")
    assert len(req.trailers) == 6
    c = Conn(Limits(max_header_bytes=200))
    c.send(_CHUNKED + b"X-Big: " + b"v" * 300 + b"\r\n\r\n")
    assert c.requests() == [] and c.statuses() == [431] and c.closed


def test_trailers_past_a_limit_fail_a_streamed_body_with_431_and_close_after_its_answer():
    c = Conn(Limits(max_headers=5))
    head, body = _CHUNKED.split(b"\r\n\r\n", 1)
    (req,) = c.send(head + b"\r\n\r\n")                # streamed: the body comes later
    assert c.send(body + _SIX + b"\r\n") == []
    with pytest.raises(BodyError) as failed:
        req.stream.read()
    assert failed.value.status == 431 and not req.trailers
    c.answer(req, Response(failed.value.status, b""))
    assert c.statuses() == [431] and c.closed


def test_trailers_reach_the_application_apart_from_the_headers():
    c = Conn()
    (req,) = c.send(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"3\r\nabc\r\n0\r\nX-Forwarded-For: 6.6.6.6\r\nX-Checksum: 12 \r\n\r\n")
    assert req.body == b"abc"
    assert req.trailers == [(b"x-forwarded-for", b"6.6.6.6"), (b"x-checksum", b"12")]
    assert req.header("x-forwarded-for") is None


def test_field_values_lose_surrounding_whitespace():
    c = Conn()
    (req,) = c.send(get("/", "X-Value: abc \t", "X-Empty:   "))
    assert req.header("x-value") == "abc" and req.header("x-empty") == ""


@pytest.mark.parametrize("line", [b"3;a=b", b"3 ;a=b", b"3; a=b", b"3;a = b", b"3 ; a = \"q s\"",
                                  b"3;a;b=c"])
def test_chunk_extensions_may_have_whitespace_around_semicolon_and_equals(line):
    c = Conn()
    (req,) = c.send(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + line + b"\r\nabc\r\n0\r\n\r\n")
    assert req.body == b"abc"


@pytest.mark.parametrize("request_line, status", [
    (b"-BLARGH / HTTP/1.1", 501), (b"BREW / HTTP/1.1", 501), (b"GET\x01 / HTTP/1.1", 400),
    (b"CONNECT example.com:443 HTTP/1.1", 501)])
def test_unknown_methods_get_501_and_what_is_no_method_400(request_line, status):
    c = Conn()
    c.send(request_line + b"\r\nHost: x\r\n\r\n")
    assert c.statuses() == [status] and c.closed


@pytest.mark.parametrize("host", [b"x y/z", b"a/b", b"a@b", b"[::1", b"h:po"])
def test_an_invalid_host_is_refused(host):
    c = Conn()
    c.send(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    assert c.statuses() == [400]


@pytest.mark.parametrize("host", [b"example.com", b"example.com:8080", b"[::1]:80", b"10.0.0.1",
                                  b""])
def test_valid_hosts_are_accepted(host):
    c = Conn()
    assert len(c.send(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")) == 1


def test_a_coding_other_than_chunked_is_not_implemented():
    c = Conn()
    c.send(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
    assert c.statuses() == [501]


def test_a_body_over_the_limit_is_refused_before_it_is_read():
    c = Conn(Limits(max_body=10))
    c.send(post("/", b"x" * 11))
    assert c.statuses() == [413] and c.closed and c.requests() == []


def test_a_head_that_never_ends_is_refused_at_its_limit():
    c = Conn(Limits(max_request_line=100, max_header_bytes=200))
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 400)
    assert c.statuses() == [431] and c.closed


def test_a_head_whose_fields_pass_their_limit_is_refused_before_it_ends():
    """Fields past ``max_header_bytes`` while the head goes on (under its bound with the
    request line, past which any head is refused): 431 as they pass it, not a 408 at the
    header timeout; a head just under it goes on."""
    c = Conn()
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
    field = b"X-Filler: " + b"a" * 1000 + b"\r\n"
    for _ in range(64):                        # 64 KB less a little: under the limit
        c.send(field)
    assert c.statuses() == [] and not c.closed
    c.send(field)
    assert c.statuses() == [431] and c.closed


# -- bodies read by the application as they arrive ------------------------------------------------

def test_a_large_body_is_handed_over_at_once_and_streamed():
    c = Conn(Limits(stream_body_over=10))
    (req,) = c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n" + b"a" * 12)
    assert req.stream is not None and req.body == b""
    c.send(b"b" * 18)
    assert req.stream.read() == b"a" * 12 + b"b" * 18


def test_a_body_the_application_did_not_read_is_drained_and_the_connection_kept():
    c = Conn(Limits(stream_body_over=10, max_discard=1000))
    (req,) = c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n" + b"a" * 100)
    c.answer(req, Response(413, b"no"))
    assert c.statuses() == [413] and not c.closed
    (nxt,) = c.send(b"a" * 400 + get("/next"))
    assert nxt.path == "/next"


def test_an_unread_body_too_large_to_drain_closes_after_the_answer():
    c = Conn(Limits(stream_body_over=10, max_discard=1000))
    (req,) = c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"a" * 100)
    c.answer(req, Response(200, b"early"))
    assert b"connection: close" in c.wire() and c.events[-1] is CLOSE


def test_a_body_cut_short_fails_the_reader_and_its_answer_is_the_last():
    c = Conn(Limits(stream_body_over=10))
    (req,) = c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n" + b"a" * 100)
    c.send(b"")                                     # the client stopped sending
    with pytest.raises(ConnectionError):
        req.stream.read()
    c.answer(req, Response(400, b""))
    assert c.statuses() == [400] and c.events[-1] is CLOSE


CHUNKED = b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize("head", ["parsed", "seen before"])
def test_a_chunked_body_still_arriving_is_handed_over_at_once_and_streamed(head):
    """A chunked body that has not ended by the end of its head's packet may be a stream
    (events as they happen, a full-duplex exchange): the application gets each piece as it
    comes. One that came whole with its head (the usual small upload) is handed over whole."""
    parsed: dict = {}
    whole = Conn(parsed=parsed)
    (small,) = whole.send(CHUNKED + b"5\r\nwhole\r\n0\r\n\r\n")
    assert small.stream is None and small.body == b"whole" and list(parsed) == [CHUNKED]
    c = Conn(parsed=parsed if head == "seen before" else {})
    (req,) = c.send(CHUNKED + b"5\r\nfirst\r\n")
    assert req.body == b"" and req.stream.read_nowait() == (b"first", False)
    assert c.send(b"6\r\nsecond\r\n") == []
    assert req.stream.read_nowait() == (b"second", False)
    (after,) = c.send(b"0\r\nX-Trace: 7\r\n\r\n" + get("/after"))   # pipelined after it
    assert req.stream.read_nowait() == (b"", True) and req.trailers == [(b"x-trace", b"7")]
    c.answer(req)
    c.answer(after)
    assert c.statuses() == [200, 200] and not c.closed and after.path == "/after"


@pytest.mark.parametrize("expect", [False, True])
def test_a_chunked_head_alone_in_its_packet_is_handed_over_at_once(expect):
    c = Conn()
    head = CHUNKED[:-2] + b"Expect: 100-continue\r\n\r\n" if expect else CHUNKED
    events = c.send(head)
    req = events[-1]
    assert type(req) is HttpRequest and req.stream.read_nowait() == (b"", False)
    assert events[:-1] == ([b"HTTP/1.1 100 Continue\r\n\r\n"] if expect else [])
    c.send(b"3\r\nabc\r\n0\r\n\r\n")
    assert req.stream.read() == b"abc"
    c.answer(req)
    assert c.statuses()[-1] == 200 and not c.closed


def test_a_chunked_body_on_http_1_0_streams_too_and_the_connection_closes_after_it():
    c = Conn()
    (req,) = c.send(b"POST / HTTP/1.0\r\nConnection: keep-alive\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
    assert req.stream.read_nowait() == (b"hello", False)
    assert c.send(b"0\r\n\r\nGET /smuggled HTTP/1.0\r\n\r\n") == []
    assert req.stream.read_nowait() == (b"", True) and c.p.client is DONE
    c.answer(req)
    assert c.wire().startswith(b"HTTP/1.1 200") and c.events[-1] is CLOSE


def test_a_chunked_stream_that_stalls_fails_its_reader_with_408():
    c = Conn(Limits(body_timeout=5))
    (req,) = c.send(CHUNKED + b"5\r\nfirst\r\n")
    c.tick(4)
    assert c.send(b"6\r\nsecond\r\n") == []       # each piece puts the deadline off
    c.tick(4)
    assert req.stream.read_nowait() == (b"firstsecond", False)
    c.tick(2)
    with pytest.raises(BodyError) as failed:
        req.stream.read()
    assert failed.value.status == 408
    c.answer(req, Response(408, b""))
    assert c.statuses() == [408] and c.events[-1] is CLOSE


def test_a_chunked_stream_answered_before_its_end_is_drained_and_the_connection_goes_on():
    """Its rest is read and dropped, as a body with a length is, while it stays under
    max_discard: the request after it is answered."""
    c = Conn()
    (req,) = c.send(CHUNKED + b"5\r\nfirst\r\n")
    c.answer(req, Response(403, b"no"))
    assert c.statuses() == [403] and b"connection: close" not in c.wire()
    (after,) = c.send(b"5\r\nlater\r\n0\r\n\r\n" + get("/after"))
    assert after.target == "/after"


def test_a_chunked_stream_answered_before_its_end_closes_past_max_discard():
    c = Conn(Limits(max_discard=8))
    (req,) = c.send(CHUNKED + b"5\r\nfirst\r\n")
    c.answer(req, Response(403, b"no"))
    # (the closing, and no request for what came after)
    assert c.send(b"10\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n" + get("/after")) == [CLOSE]


# -- answers --------------------------------------------------------------------------------------

def test_a_streamed_answer_goes_piece_by_piece_and_the_next_waits_for_it():
    c = Conn()
    a, b = c.send(get("/a") + get("/b"))
    stream = StreamBody()
    c.answer(a, Response(200, stream))
    c.answer(b)
    assert c.events.count(stream) == 1               # the socket side attaches to it
    stream.write(b"first")
    c._keep(c.p.pump(c.now))
    assert c.wire().endswith(b"5\r\nfirst\r\n")     # sent while more may come
    stream.finish()
    c._keep(c.p.pump(c.now))
    assert c.statuses() == [200, 200] and c.wire().endswith(b"/b")


@pytest.mark.parametrize(("request_line", "framed"), [("GET /a HTTP/1.1", True),
                                                     ("GET /a HTTP/1.0", False)])
def test_a_stream_the_application_cannot_finish_is_cut_off_after_what_it_wrote(request_line,
                                                                                framed):
    c = Conn()
    (a,) = c.send(f"{request_line}\r\nHost: x\r\n\r\n".encode())
    stream = StreamBody()
    c.answer(a, Response(200, stream))
    stream.write(b"partial")
    stream.fail()
    c._keep(c.p.pump(c.now))
    assert c.p.stats.aborted == 1
    if framed:       # chunked: what was written goes, and the body never ends
        assert c.wire().endswith(b"7\r\npartial\r\n") and c.events[-1] is CLOSE
    else:            # ended by the close, the body would look complete: dropped instead
        assert c.events[-1] is ABORT


def test_an_answer_too_late_comes_back_unsent():
    c = Conn(Limits(response_timeout=5))
    (req,) = c.send(get("/slow"))
    c.tick(6)
    assert c.statuses() == [500] and c.closed
    (late,) = c.answer(req)
    assert type(late) is Unsent


def test_the_response_timeout_waits_while_a_streamed_body_is_read_and_not_once_it_is_not():
    """An upload being read is not cut by the response timeout (it counts from the body's
    end), even one read more slowly than it comes (its reader full); an application that
    stopped reading gets its 500 as one that never answers does."""
    c = Conn(Limits(response_timeout=5))
    (req,) = c.send(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
    for _ in range(4):                          # 12 s of upload, read as it comes
        c.tick(3)
        c.send(b"x" * 1000)
        req.stream.read(1000)
    c.send(b"x" * 400_000)                      # more than the reader holds
    assert req.stream.paused
    for _ in range(4):                          # 12 s more, read slowly: a little each time
        c.tick(3)
        req.stream.read(1000)
    assert c.statuses() == []
    c.tick(3)                                   # then not at all: the 500 comes 5 s after
    c.tick(3)                                   # the last look that saw a read
    assert c.statuses() == []
    c.tick(3)
    assert c.statuses() == [500]


def test_ready_answers_serve_plain_gets_without_a_request_event():
    ok = Prepared(200, prepare_head([("content-length", "2")]), b"hi")
    answers = {b"/f": ReadyAnswer(ok, fresh_until=200.0)}
    c = Conn(answers=answers)
    assert c.send(get("/f")) == [c.wire()] and c.statuses() == [200]
    assert answers[b"/f"].hits == 1
    (req,) = c.send(get("/f", "Range: bytes=0-0"))   # not plain: the application decides
    assert req.path == "/f"


def ready_answers(*targets: str, fresh_until: float = 200.0) -> dict[bytes, ReadyAnswer]:
    return {t.encode(): ReadyAnswer(Prepared(200, prepare_head([("content-length", str(len(t)))]),
                                             t.encode()), fresh_until) for t in targets}


def undated(wire: bytes) -> bytes:
    """(Two answers a second apart differ in their Date only.)"""
    return re.sub(rb"date: [^\r]*\r\n", b"", wire)


def test_a_head_seen_before_gets_the_same_answer_without_being_parsed():
    answers, heads = ready_answers("/f"), {}
    first, second = (Conn(answers=answers, heads=heads) for _ in range(2))
    first.send(get("/f"))
    second.send(get("/f"))
    assert undated(second.wire()) == undated(first.wire())
    assert second.p.parser is None                   # llhttp never ran on the second
    assert answers[b"/f"].hits == 2 and second.statuses() == [200]
    head10 = b"GET /f HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"   # 1.0's framing kept too
    third = Conn(answers=answers, heads=heads)
    first.send(head10)
    third.send(head10)
    assert third.p.parser is None and not third.closed
    assert undated(third.wire()) == undated(first.wire()).partition(b"/f")[2]
    assert third.wire().startswith(b"HTTP/1.1 200") and b"keep-alive" in third.wire()


def test_kept_heads_pipelined_in_one_packet_are_answered_in_turn():
    answers, heads = ready_answers("/f", "/g"), {}
    Conn(answers=answers, heads=heads).send(get("/f") + get("/g"))
    c = Conn(answers=answers, heads=heads)
    assert len(c.send(get("/f") + get("/g") + get("/f"))) == 3 and c.p.parser is None
    *_, req = c.send(get("/g") + get("/other"))     # a head not kept is parsed after it
    assert req.path == "/other" and c.p.parser is not None
    c.answer(req)
    assert c.statuses() == [200] * 5 and c.wire().endswith(b"/other")
    assert c.wire().count(b"\r\n\r\n/f") == 2 and c.wire().count(b"\r\n\r\n/g") == 2


def test_a_kept_head_waits_its_turn_behind_an_answer_owed():
    answers, heads = ready_answers("/f"), {}
    Conn(answers=answers, heads=heads).send(get("/f"))
    c = Conn(answers=answers, heads=heads)
    (slow,) = c.send(get("/slow"))
    assert c.send(get("/f")) == []                   # not before /slow's answer
    c.answer(slow)
    assert c.statuses() == [200, 200] and c.wire().endswith(b"\r\n\r\n/f")
    assert c.wire().index(b"\r\n\r\n/slow") < c.wire().index(b"\r\n\r\n/f")


def test_a_kept_head_whose_answer_went_stale_goes_to_the_application():
    answers, heads = ready_answers("/f", fresh_until=150.0), {}
    Conn(answers=answers, heads=heads).send(get("/f"))
    c = Conn(answers=answers, heads=heads)
    c.now = 160.0
    (req,) = c.send(get("/f"))
    assert type(req) is HttpRequest and req.path == "/f"


@pytest.mark.parametrize("head", [get("/f", "Connection: close"), b"GET /f HTTP/1.0\r\n\r\n"])
def test_a_kept_head_that_said_close_is_answered_without_being_parsed_and_closes(
        head, monkeypatch):
    """A connection per request (a client that says close, or HTTP/1.0 without keep-alive)
    is answered from the heads kept, as a keep-alive client is, and still closes: at once
    when nothing follows, once the client's input ends when more does (RFC 9112 9.6)."""
    answers, heads = ready_answers("/f"), {}
    first = Conn(answers=answers, heads=heads)
    first.send(head)
    parsed = []
    head_parse = ServerProtocol._head
    monkeypatch.setattr(ServerProtocol, "_head",
                        lambda p, data: parsed.append(data) or head_parse(p, data))
    again = Conn(answers=answers, heads=heads)
    again.send(head)
    assert parsed == [] and again.events[-1] is HANG_UP and again.closed
    assert undated(again.wire()) == undated(first.wire())
    assert b"connection: close" in again.wire() and answers[b"/f"].hits == 2
    assert again.send(get("/f")) == [] and again.statuses() == [200]   # nothing more is read
    more = Conn(answers=answers, heads=heads)
    more.send(head + get("/f"))
    assert more.statuses() == [200] and more.events[-1] is CLOSE and HANG_UP not in more.events


@pytest.mark.parametrize("how", ["in pieces", "pipelined", "logged", "body"])
def test_heads_kept_are_only_those_answered_alone_at_once_on_a_connection_that_goes_on(how):
    heads: dict = {}
    c = Conn(answers=ready_answers("/f"), heads=heads, log=how == "logged")
    if how == "in pieces":
        c.send(get("/f")[:10])
        c.send(get("/f")[10:])
    elif how == "pipelined":                         # the first is answered after /slow's
        c.send(get("/slow") + get("/f"))
    elif how == "logged":                            # each answer must make its Logged event
        c.send(get("/f"))
    else:
        c.send(get("/f", "Content-Length: 2") + b"hi")
    assert heads == {} and c.statuses() in ([200], [])


def test_heads_kept_stay_bounded_however_many_clients_send():
    targets = [f"/f{i}" for i in range(protocol._HEADS_KEPT + 50)]
    heads: dict = {}
    c = Conn(answers=ready_answers(*targets), heads=heads)
    for target in targets:
        c.send(get(target))
    assert 0 < len(heads) <= protocol._HEADS_KEPT
    assert c.statuses() == [200] * len(targets)
    huge = get("/f0", "X-Big: " + "b" * protocol._HEAD_KEPT_MAX)
    heads.clear()
    c.send(huge)
    assert heads == {}


# -- heads parsed before --------------------------------------------------------------------------

_SEEN_BEFORE = [
    get("/a?q=1#frag", "X-Thing: yes "),
    post("/p", b"xyz", "Content-Type: text/plain"),
    b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"4\r\nwiki\r\n0\r\nX-Trace: 7\r\n\r\n",
    b"GET http://a.example:8080/abs HTTP/1.1\r\nHost: b.example\r\n\r\n",
    b"GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
    get("/last", "Connection: close"),
]


def _exchange(c: Conn) -> list[tuple]:
    """Each request of _SEEN_BEFORE sent and answered on ``c``: what the application saw."""
    seen = []
    for data in _SEEN_BEFORE:
        for req in (e for e in c.send(data) if type(e) is HttpRequest):
            seen.append((req.method, req.target, req.path, req.query, req.headers, req.body,
                         req.version, req.keep_alive, req.trailers))
            c.answer(req)
    return seen


def test_a_head_parsed_before_gives_the_same_request_unparsed():
    """Heads are kept as they came with what was read from them, shared by the connections of
    a server: the same bytes again (another request, another connection) are not parsed, and
    make the same request, body, answer and close."""
    parsed: dict = {}
    first = Conn(parsed=parsed)
    expected = _exchange(first)
    assert len(parsed) == len(_SEEN_BEFORE)
    again = Conn(parsed=parsed)
    assert _exchange(again) == expected
    assert again.p.parser is None                    # llhttp was never needed
    assert again.wire() == first.wire() and again.closed
    assert again.wire().count(b"100 Continue") == 1


def test_a_request_taken_from_a_head_seen_before_has_fields_of_its_own():
    parsed: dict = {}
    (first,) = Conn(parsed=parsed).send(get("/", "A: 1"))
    first.headers.append((b"B", b"2"))               # the application's to change
    (second,) = Conn(parsed=parsed).send(get("/", "A: 1"))
    assert second.headers == [(b"host", b"x"), (b"a", b"1")]


def test_heads_refused_or_in_pieces_are_not_kept():
    parsed: dict = {}
    c = Conn(parsed=parsed)
    c.send(b"GET / HTTP/1.1\r\nHo")
    c.send(b"st: x\r\n\r\n")
    for _ in range(2):
        bad = Conn(parsed=parsed)
        bad.send(get("/", "Host: y"))                # two Host fields
        assert bad.statuses() == [400]
    assert parsed == {}


def test_close_in_any_connection_field_closes_however_often_the_head_comes():
    """RFC 9112 9.6: close in any Connection field wins, on the head's first coming as on its
    next (taken from those parsed before, with no llhttp to remember it)."""
    head = get("/a", "Connection: close", "Connection: keep-alive")
    parsed: dict = {}
    for _ in range(2):
        c = Conn(parsed=parsed)
        (req,) = c.send(head)
        assert not req.keep_alive
        c.answer(req)
        assert c.closed and c.send(head) == []


@pytest.mark.parametrize("then", ["the same head", "another head"])
def test_proxy_connection_close_is_ignored_and_the_connection_goes_on(then):
    """As nginx, the obsolete Proxy-Connection says nothing to a server; llhttp takes it for
    close, so the head after it is parsed afresh rather than refused."""
    head = get("/a", "Proxy-Connection: close")
    c = Conn()
    (first,) = c.send(head)
    c.answer(first)
    (second,) = c.send(head if then == "the same head" else get("/b"))
    c.answer(second)
    assert c.statuses() == [200, 200] and not c.closed


def test_stopping_while_a_body_is_discarded_reads_no_request_after_it():
    c = Conn(Limits(stream_body_over=4), parsed={})
    (up,) = c.send(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
    c.answer(up)                                     # before its body came: the rest is dropped
    c._keep(c.p.stop(c.now))
    assert c.send(b"67890" + get("/n")) == [CLOSE]   # no request read: it closes
    assert get("/n") not in c.p.parsed


def test_heads_parsed_stay_bounded_however_many_clients_send():
    parsed: dict = {}
    c = Conn(parsed=parsed)
    for i in range(protocol._PARSED_KEPT + 10):
        (req,) = c.send(get(f"/{i}"))
        c.answer(req)
    assert 0 < len(parsed) <= protocol._PARSED_KEPT


# -- time -----------------------------------------------------------------------------------------

def test_a_head_too_slow_gets_408():
    c = Conn(Limits(header_timeout=5))
    c.send(b"GET / HTTP/1.1\r\n")
    c.tick(4)
    assert c.wire() == b""
    c.tick(2)
    assert c.statuses() == [408] and c.closed


def test_empty_lines_between_requests_are_no_request():
    """RFC 9112 2.2: a CRLF after a body (old clients send one) is ignored; it starts no head
    whose timeout would answer an idle connection with a 408."""
    c = Conn(Limits(header_timeout=5, keepalive_timeout=20))
    (req,) = c.send(post("/", b"data"))
    c.answer(req)
    c.send(b"\r\n")
    c.tick(10)
    assert c.statuses() == [200] and not c.closed
    (req,) = c.send(get("/next"))
    assert req.path == "/next"
    c.send(b"\r\n\r\n" + get("/after"))
    assert [r.path for r in c.requests()] == ["/", "/next", "/after"]


def test_an_empty_line_in_the_packet_of_the_request_after_it_is_ignored():
    c = Conn(Limits())
    (req,) = c.send(b"\r\n" + get("/first"))      # before a connection's first request too
    c.answer(req)
    (req,) = c.send(b"\r\n" + get("/second"))
    c.answer(req)
    assert [r.path for r in c.requests()] == ["/first", "/second"]
    assert c.statuses() == [200, 200]


def test_an_idle_keep_alive_connection_is_closed_but_not_while_an_answer_is_owed():
    c = Conn(Limits(keepalive_timeout=5, response_timeout=60))
    (req,) = c.send(get("/"))
    c.tick(10)
    assert not c.closed                              # waiting for the application
    c.answer(req)
    c.tick(4)
    assert not c.closed
    c.tick(2)
    assert c.closed and c.p.server is CLOSED


def test_stopping_closes_idle_connections_and_lets_a_request_in_progress_finish():
    c = Conn()
    c._keep(c.p.stop(c.now))
    assert c.closed
    c = Conn()
    c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab")
    c._keep(c.p.stop(c.now))
    assert not c.closed
    (req,) = c.send(b"cd")
    c.answer(req)
    assert b"connection: close" in c.wire() and c.events[-1] is CLOSE


def test_the_end_of_input_answers_what_was_asked_then_closes():
    c = Conn()
    a, b = c.send(get("/a") + get("/b"))
    c.send(b"")
    c.answer(a)
    assert not c.closed
    c.answer(b)
    assert c.statuses() == [200, 200] and c.events[-1] is CLOSE


def test_a_lost_connection_gives_back_what_was_never_sent():
    c = Conn()
    _, b = c.send(get("/a") + get("/b"))
    later = Response(200, b"b")
    c.answer(b, later)
    assert c.p.connection_lost() == [later] and c.p.stats.dropped == 2


def test_chunked_on_http_1_0_closes_after_the_request():
    """RFC 9112 6.1: the framing of an HTTP/1.0 message with Transfer-Encoding is suspect."""
    c = Conn()
    reqs = c.send(b"POST / HTTP/1.0\r\nConnection: keep-alive\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                  b"GET /smuggled HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert [r.body for r in reqs] == [b"hello"] and c.p.client is DONE
    c.answer(reqs[0])
    assert c.statuses() == [200] and c.events[-1] is CLOSE


@pytest.mark.parametrize("coding, status", [(b"identity", 400), (b"chunked, gzip", 400),
                                            (b"gzip, chunked", 501)])
def test_transfer_codings_other_than_chunked(coding, status):
    c = Conn()
    c.send(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding + b"\r\n\r\n")
    assert c.statuses() == [status] and c.closed


def test_an_absolute_target_names_the_host():
    """RFC 9112 3.2.2: the target's authority wins over the Host field."""
    c = Conn()
    (req,) = c.send(b"GET http://a.example:8080/abs HTTP/1.1\r\nHost: b.example\r\n\r\n")
    assert req.header("host") == "a.example:8080" and req.path == "/abs"


def test_reading_pauses_while_the_pipelining_window_is_full_and_resumes_as_answers_go():
    c = Conn(Limits(max_pipelined=2))
    a, b = c.send(get("/a") + get("/b"))
    assert c.events[-1] is PAUSE and not c.p.wants_input
    c.answer(a)
    assert c.events[-1] is RESUME and c.p.wants_input
    c.answer(b)
    assert c.events.count(PAUSE) == 1 and c.events.count(RESUME) == 1


def test_reading_pauses_while_a_body_waits_unread_and_resumes_when_drained():
    c = Conn(Limits(stream_body_over=10))
    (req,) = c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 400000\r\n\r\n"
                    + b"a" * 300_000)                 # more than the reader holds unread
    assert c.events[-1] is PAUSE
    assert len(req.stream.read(200_000)) == 200_000   # the application takes most of it
    c._keep(c.p.drained(c.now))
    assert c.events[-1] is RESUME


def test_a_close_needs_no_pause_before_it_but_waiting_for_the_last_answer_does():
    """Once the client has said close nothing more is read. While its answer is owed, a PAUSE
    says so; the close itself says it too, and no PAUSE goes before it (the socket side would
    only undo it, to drain the client's input while the close lingers)."""
    ready = Conn(answers=ready_answers("/f"))
    ready.send(get("/f", "Connection: close"))
    assert ready.events == [ready.wire(), HANG_UP] and not ready.p.wants_input
    c = Conn()
    (req,) = c.send(get("/a", "Connection: close"))
    assert c.events[-1] is PAUSE
    c.answer(req)
    assert c.events[-1] is HANG_UP and c.events.count(PAUSE) == 1 and RESUME not in c.events


def test_no_question_of_reading_on_the_common_request():
    c = Conn()
    for _ in range(3):
        (req,) = c.send(get("/"))
        c.answer(req)
    assert PAUSE not in c.events and RESUME not in c.events
