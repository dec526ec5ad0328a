"""The handshake in both roles, against the exchanges of the 0.6 specification (2.1) written out
by hand, then the two roles against each other: deflate negotiation, refusal with X-Try, 0.4,
header oddities and input that is no handshake."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnutella.errors import ProtocolError
from gnutella.handshake import (
    Acceptor,
    Connector,
    Established,
    Refused,
    Request,
    Send,
    Settings,
)

US = Settings(user_agent="pyseda-test/1")

LEAF_CONNECT = (b"GNUTELLA CONNECT/0.6\r\n"
                b"User-Agent: LimeWire/4.18.8\r\n"
                b"X-Ultrapeer: False\r\n"
                b"X-Query-Routing: 0.1\r\n"
                b"Accept-Encoding: deflate\r\n"
                b"Listen-IP: 1.2.3.4:6346\r\n"
                b"\r\n")
OUR_OK = (b"GNUTELLA/0.6 200 OK\r\n"
          b"User-Agent: pyseda-test/1\r\n"
          b"X-Ultrapeer: True\r\n"
          b"Accept-Encoding: deflate\r\n"
          b"Content-Encoding: deflate\r\n"
          b"\r\n")


def test_accept_a_leaf():
    a = Acceptor(US)
    [req] = a.receive(LEAF_CONNECT)
    assert isinstance(req, Request)
    peer = req.peer
    assert peer.version == "0.6" and peer.leaf and peer.user_agent == "LimeWire/4.18.8"
    assert peer.listen_ip == ("1.2.3.4", 6346) and peer.accepts_deflate
    assert a.accept() == [Send(OUR_OK)]
    [done] = a.receive(b"GNUTELLA/0.6 200 OK\r\nContent-Encoding: deflate\r\n\r\n\x78\x9c")
    assert done == Established(done.peer, deflate_in=True, deflate_out=True, extra=b"\x78\x9c")
    assert done.peer.leaf and done.peer.content_encoding == "deflate"


def test_accept_without_deflate_and_with_hosts_and_headers():
    a = Acceptor(Settings(user_agent="u", deflate=False, listen_ip=("5.6.7.8", 6347),
                          headers=(("X-Query-Routing", "0.1"),)))
    a.receive(LEAF_CONNECT)
    [send] = a.accept(x_try_ultrapeers=[("9.9.9.9", 6346), ("8.8.8.8", 6347)],
                      headers=[("Remote-IP", "1.2.3.4")])
    assert send.data == (b"GNUTELLA/0.6 200 OK\r\nUser-Agent: u\r\nX-Ultrapeer: True\r\n"
                         b"Listen-IP: 5.6.7.8:6347\r\n"
                         b"X-Try-Ultrapeers: 9.9.9.9:6346,8.8.8.8:6347\r\n"
                         b"X-Query-Routing: 0.1\r\nRemote-IP: 1.2.3.4\r\n\r\n")
    [done] = a.receive(b"GNUTELLA/0.6 200 OK\r\n\r\n")
    assert (done.deflate_in, done.deflate_out, done.extra) == (False, False, b"")


def test_accept_an_ultrapeer():
    a = Acceptor(US)
    [req] = a.receive(b"GNUTELLA CONNECT/0.6\r\nUser-Agent: gtk-gnutella/1.2\r\n"
                      b"X-Ultrapeer: True\r\n\r\n")
    assert req.peer.ultrapeer and not req.peer.leaf
    [send] = a.accept()
    assert b"Content-Encoding" not in send.data        # the peer does not accept deflate


def test_refuse_with_hosts_to_try():
    a = Acceptor(US)
    a.receive(LEAF_CONNECT)
    send, refused = a.refuse(x_try=[("1.1.1.1", 6346)], x_try_ultrapeers=[("2.2.2.2", 6347)])
    assert send.data == (b"GNUTELLA/0.6 503 Full\r\nUser-Agent: pyseda-test/1\r\n"
                         b"X-Ultrapeer: True\r\nAccept-Encoding: deflate\r\n"
                         b"X-Try: 1.1.1.1:6346\r\nX-Try-Ultrapeers: 2.2.2.2:6347\r\n\r\n")
    assert refused == Refused(503, "Full", refused.peer, by_peer=False)
    with pytest.raises(RuntimeError, match="over"):
        a.receive(b"more")


def test_the_peer_refuses_at_the_third_step():
    a = Acceptor(US)
    a.receive(LEAF_CONNECT)
    a.accept()
    [refused] = a.receive(b"GNUTELLA/0.6 401 Unauthorized\r\n\r\n")
    assert (refused.code, refused.reason, refused.by_peer) == (401, "Unauthorized", True)


def test_connect_out():
    c = Connector(US)
    assert c.start() == [Send(b"GNUTELLA CONNECT/0.6\r\nUser-Agent: pyseda-test/1\r\n"
                              b"X-Ultrapeer: True\r\nAccept-Encoding: deflate\r\n\r\n")]
    send, done = c.receive(b"GNUTELLA/0.6 200 OK\r\nUser-Agent: BearShare/4.0\r\n"
                           b"X-Ultrapeer: True\r\nAccept-Encoding: deflate\r\n"
                           b"Content-Encoding: deflate\r\nX-Try-Ultrapeers: 3.3.3.3:6346\r\n"
                           b"\r\n")
    assert send == Send(b"GNUTELLA/0.6 200 OK\r\nContent-Encoding: deflate\r\n\r\n")
    assert isinstance(done, Established)
    assert (done.deflate_in, done.deflate_out, done.extra) == (True, True, b"")
    assert done.peer.ultrapeer and done.peer.x_try_ultrapeers == [("3.3.3.3", 6346)]


def test_connect_out_refused():
    c = Connector(US)
    c.start()
    [refused] = c.receive(b"GNUTELLA/0.6 503 Service unavailable\r\n"
                          b"X-Try: 4.4.4.4:6346, 5.5.5.5:6346\r\n"
                          b"X-Try-Ultrapeers: 6.6.6.6:6346\r\n\r\n")
    assert (refused.code, refused.reason, refused.by_peer) == (503, "Service unavailable", True)
    assert refused.peer.x_try == [("4.4.4.4", 6346), ("5.5.5.5", 6346)]
    assert refused.peer.x_try_ultrapeers == [("6.6.6.6", 6346)]


# -- 0.4 ----------------------------------------------------------------------------------------

def test_accept_04():
    a = Acceptor(US)
    [req] = a.receive(b"GNUTELLA CONNECT/0.4\n\n")
    assert req.peer.version == "0.4" and req.peer.headers == {}
    assert a.accept() == [Send(b"GNUTELLA OK\n\n"),
                          Established(req.peer, False, False, b"")]


def test_accept_04_keeps_early_descriptors():
    a = Acceptor(US)
    a.receive(b"GNUTELLA CONNECT/0.4\n\nPING")
    a.receive(b"MORE")
    _, done = a.accept()
    assert done.extra == b"PINGMORE"


def test_refuse_04_is_a_close():
    a = Acceptor(US)
    a.receive(b"GNUTELLA CONNECT/0.4\n\n")
    [refused] = a.refuse()
    assert refused.code == 503 and not refused.by_peer


def test_connect_out_04():
    c = Connector(US, version="0.4")
    assert c.start() == [Send(b"GNUTELLA CONNECT/0.4\n\n")]
    [done] = c.receive(b"GNUTELLA OK\n\n\x00\x01")
    assert done.peer.version == "0.4" and done.extra == b"\x00\x01"
    with pytest.raises(ProtocolError, match=r"0\.4 handshake answered"):
        Connector(US, version="0.4").receive(b"GNUTELLA/0.6 503 Full\r\n\r\n")
    with pytest.raises(ValueError):
        Connector(US, version="0.5")


def test_later_versions_are_spoken_to_as_06():
    a = Acceptor(US)
    [req] = a.receive(b"GNUTELLA CONNECT/0.7\r\n\r\n")
    assert req.peer.version == "0.6"


# -- the two roles against each other -----------------------------------------------------------

def run(c: Connector, a: Acceptor, decide=Acceptor.accept):
    """Carry each side's Send events to the other until both are done; the events of each."""
    got_c, got_a = [], []
    to_a = [e.data for e in c.start()]
    to_c: list[bytes] = []
    while to_a or to_c:
        if to_a:
            events = a.receive(to_a.pop(0))
            for e in list(events):
                if isinstance(e, Request):
                    events += decide(a)
            got_a += events
            to_c += [e.data for e in events if isinstance(e, Send)]
        if to_c:
            events = c.receive(to_c.pop(0))
            got_c += events
            to_a += [e.data for e in events if isinstance(e, Send)]
    return got_c, got_a


@pytest.mark.parametrize(("ours", "theirs"), [(True, True), (True, False), (False, True),
                                              (False, False)])
def test_deflate_is_negotiated_when_both_ask(ours, theirs):
    c = Connector(Settings(deflate=ours))
    a = Acceptor(Settings(deflate=theirs))
    got_c, got_a = run(c, a)
    done_c, done_a = got_c[-1], got_a[-1]
    assert isinstance(done_c, Established) and isinstance(done_a, Established)
    both = ours and theirs
    assert (done_c.deflate_in, done_c.deflate_out) == (both, both)
    assert (done_a.deflate_in, done_a.deflate_out) == (both, both)
    assert done_a.peer.ultrapeer and done_c.peer.ultrapeer


def test_refusal_between_the_roles():
    got_c, got_a = run(Connector(US), Acceptor(US),
                       lambda a: a.refuse(x_try_ultrapeers=[("7.7.7.7", 6346)]))
    [refused] = got_c
    assert refused.by_peer and refused.peer.x_try_ultrapeers == [("7.7.7.7", 6346)]
    assert isinstance(got_a[-1], Refused) and not got_a[-1].by_peer


@given(st.lists(st.integers(0, len(LEAF_CONNECT)), max_size=10))
def test_any_split_of_the_request(cuts):
    bounds = [0, *sorted(cuts), len(LEAF_CONNECT)]
    a = Acceptor(US)
    events = []
    for lo, hi in pairwise(bounds):
        events += a.receive(LEAF_CONNECT[lo:hi])
    [req] = events
    assert req.peer.listen_ip == ("1.2.3.4", 6346)


def test_byte_by_byte_with_the_stream_behind():
    a = Acceptor(US)
    for byte in LEAF_CONNECT[:-1]:
        assert a.receive(bytes([byte])) == []
    assert isinstance(a.receive(LEAF_CONNECT[-1:])[0], Request)
    a.accept()
    confirm = b"GNUTELLA/0.6 200 OK\n\n"                  # LF-only
    for byte in confirm[:-1]:
        assert a.receive(bytes([byte])) == []
    [done] = a.receive(b"\nDESC")                          # the stream right behind
    assert done.extra == b"DESC"


def test_confirmation_already_buffered_when_accepting():
    a = Acceptor(US)
    a.receive(LEAF_CONNECT + b"GNUTELLA/0.6 200 OK\r\n\r\nXY")   # sent too early, kept
    send, done = a.accept()
    assert send.data.startswith(b"GNUTELLA/0.6 200 OK")
    assert isinstance(done, Established) and done.extra == b"XY"


# -- what is no handshake -----------------------------------------------------------------------

@pytest.mark.parametrize("data", [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                                  b"GNUTELLA CONNECT\r\n\r\n",
                                  b"\r\n\r\n"])
def test_not_a_connection_request(data):
    with pytest.raises(ProtocolError):
        Acceptor(US).receive(data)


@pytest.mark.parametrize("answer", [b"HTTP/1.1 200 OK\r\n\r\n", b"GNUTELLA/0.6 OK\r\n\r\n",
                                    b"GNUTELLA OK\n\n"])
def test_not_a_handshake_answer(answer):
    c = Connector(US)
    c.start()
    with pytest.raises(ProtocolError, match="not a Gnutella handshake answer"):
        c.receive(answer)


@pytest.mark.parametrize("start", [b"\x16\x03\x01\x02\x00", b"GET / HT", b"GNUTELLX"])
def test_what_cannot_become_a_handshake_is_refused_at_its_first_bytes(start):
    with pytest.raises(ProtocolError, match="not a Gnutella connection request"):
        Acceptor(US).receive(start)                 # no need to wait for a whole block
    c = Connector(US)
    c.start()
    with pytest.raises(ProtocolError, match="not a Gnutella handshake answer"):
        c.receive(start)


def test_unsupported_content_encoding():
    c = Connector(US)
    with pytest.raises(ProtocolError, match="unsupported Content-Encoding 'gzip'"):
        c.receive(b"GNUTELLA/0.6 200 OK\r\nContent-Encoding: gzip\r\n\r\n")


def test_a_huge_header_block_is_refused():
    a = Acceptor(Settings(max_header_bytes=1024))
    a.receive(b"GNUTELLA CONNECT/0.6\r\n")
    with pytest.raises(ProtocolError, match="over 1024 bytes"):
        for _ in range(100):
            a.receive(b"X-Filler: " + b"a" * 50 + b"\r\n")


def test_a_block_ending_past_the_limit_is_refused():
    a = Acceptor(Settings(max_header_bytes=64))
    with pytest.raises(ProtocolError, match="over 64 bytes"):
        a.receive(b"GNUTELLA CONNECT/0.6\r\nX-Filler: " + b"a" * 60 + b"\r\n\r\n")


def test_too_much_before_the_decision():
    a = Acceptor(Settings(max_header_bytes=100))
    a.receive(b"GNUTELLA CONNECT/0.6\r\n\r\n")
    with pytest.raises(ProtocolError, match="too much before the handshake answer"):
        a.receive(b"x" * 101)


def test_calls_out_of_order():
    a = Acceptor(US)
    with pytest.raises(RuntimeError, match="no connection request"):
        a.accept()
    a.receive(LEAF_CONNECT)
    a.accept()
    with pytest.raises(RuntimeError, match="no connection request"):
        a.refuse()
