"""Handshake header blocks as servents in the field write them: any case, bare LF, continuation
lines, repeated headers; and what PeerInfo makes of them."""

from __future__ import annotations

import pytest

from gnutella.errors import ProtocolError
from gnutella.headers import (
    PeerInfo,
    block_end,
    format_block,
    parse_block,
    parse_hosts,
    ultrapeer_headers,
)


@pytest.mark.parametrize("block", [
    b"GNUTELLA CONNECT/0.6\r\nA: b\r\n\r\n",
    b"GNUTELLA CONNECT/0.4\n\n",
    b"GNUTELLA CONNECT/0.6\r\nA: b\n\r\n",        # mixed
    b"GNUTELLA CONNECT/0.6\nA: b\n\n"])
def test_block_end_with_crlf_and_lf(block):
    assert block_end(block + b"rest\r\n\r\n") == len(block)
    assert block_end(block[:-1]) == -1


def test_block_end_searches_from_where_it_is_told():
    assert block_end(b"x\r\n\r\n\r\n", 3) == len(b"x\r\n\r\n\r\n")


def test_parse_block():
    block = (b"GNUTELLA CONNECT/0.6\r\n"
             b"user-agent: LimeWire/4.18\r\n"
             b"X-ULTRAPEER: true\r\n"
             b"X-Try-Ultrapeers: 1.2.3.4:6346,\r\n"
             b"\t5.6.7.8:6347\r\n"                       # a continuation line
             b"x-try-ultrapeers: 9.9.9.9:6348\r\n"       # repeated: joined with a comma
             b"garbage line without a colon\r\n"
             b"Pong-Caching:0.1\n"                        # bare LF, no space after the colon
             b"\r\n")
    line, headers = parse_block(block)
    assert line == "GNUTELLA CONNECT/0.6"
    assert headers == {"user-agent": "LimeWire/4.18", "x-ultrapeer": "true",
                       "x-try-ultrapeers": "1.2.3.4:6346, 5.6.7.8:6347, 9.9.9.9:6348",
                       "pong-caching": "0.1"}


def test_parse_block_faults():
    with pytest.raises(ProtocolError, match="before any header"):
        parse_block(b"GNUTELLA CONNECT/0.6\r\n continued\r\n\r\n")
    with pytest.raises(ProtocolError, match="without a start line"):
        parse_block(b"\r\nA: b\r\n\r\n")


def test_format_block():
    assert format_block("GNUTELLA/0.6 200 OK", [("User-Agent", "x"), ("X-Ultrapeer", "True")]) \
        == b"GNUTELLA/0.6 200 OK\r\nUser-Agent: x\r\nX-Ultrapeer: True\r\n\r\n"
    assert format_block("GNUTELLA/0.6 200 OK", []) == b"GNUTELLA/0.6 200 OK\r\n\r\n"


def test_parse_hosts():
    value = ("1.2.3.4:6346, 5.6.7.8:6347 2003-02-25T23:59Z,bad,host.example.net:6348,"
             " 10.0.0.1:0, 10.0.0.2:99999, :6346, [2001:db8::1]:6349,,")
    assert parse_hosts(value) == [("1.2.3.4", 6346), ("5.6.7.8", 6347),
                                  ("host.example.net", 6348), ("2001:db8::1", 6349)]
    assert parse_hosts("") == []


def test_peer_info():
    peer = PeerInfo("0.6", {"user-agent": "gtk-gnutella/1.2", "x-ultrapeer": "False",
                            "listen-ip": "1.2.3.4:6346", "remote-ip": "9.8.7.6",
                            "accept-encoding": "gzip, Deflate;q=1",
                            "content-encoding": "deflate",
                            "x-try": "5.5.5.5:1", "x-try-ultrapeers": "6.6.6.6:2"})
    assert peer.user_agent == "gtk-gnutella/1.2"
    assert peer.ultrapeer is False and peer.leaf
    assert peer.listen_ip == ("1.2.3.4", 6346) and peer.remote_ip == "9.8.7.6"
    assert peer.accepts_deflate and peer.content_encoding == "deflate"
    assert peer.x_try == [("5.5.5.5", 1)] and peer.x_try_ultrapeers == [("6.6.6.6", 2)]
    assert not peer.bye and PeerInfo("0.6", {"bye-packet": "0.1"}).bye


def test_ultrapeer_headers_as_leaves_want_them():
    headers = dict(ultrapeer_headers(degree=32, max_ttl=4))
    assert headers == {"X-Query-Routing": "0.1", "X-Ultrapeer-Query-Routing": "0.1",
                       "X-Degree": "32", "X-Max-TTL": "4", "X-Dynamic-Querying": "0.1",
                       "GGEP": "0.5", "Bye-Packet": "0.1"}


def test_peer_info_of_a_plain_servent():
    peer = PeerInfo("0.4", {})
    assert peer.ultrapeer is None and not peer.leaf
    assert peer.user_agent is None and peer.listen_ip is None and peer.remote_ip is None
    assert not peer.accepts_deflate and peer.content_encoding is None
    assert peer.x_try == [] and peer.x_try_ultrapeers == []


def test_peer_info_odd_values():
    peer = PeerInfo("0.6", {"x-ultrapeer": " TRUE ", "x-my-address": "1.1.1.1:7",
                            "content-encoding": "identity"})
    assert peer.ultrapeer is True and not peer.leaf
    assert peer.listen_ip == ("1.1.1.1", 7)
    assert peer.content_encoding is None
    assert PeerInfo("0.6", {"node": "2.2.2.2:6346"}).listen_ip == ("2.2.2.2", 6346)   # gtkg
    assert PeerInfo("0.6", {"x-ultrapeer": "maybe"}).ultrapeer is None
    assert PeerInfo("0.6", {"listen-ip": "1.1.1.1"}).listen_ip is None
