"""Deflate on a connection: every write decodable at once, any split of the compressed bytes,
bounded inflation, and a compressed descriptor stream behind a negotiated handshake."""

from __future__ import annotations

import zlib
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnutella.compression import Deflater, Inflater
from gnutella.errors import ProtocolError
from gnutella.handshake import Acceptor, Connector, Established, Request, Send
from gnutella.parser import DescriptorParser

from tests.helpers.gnutella_spec import HIT_RAW, PING_RAW, PONG_RAW, PUSH_RAW, QUERY_RAW

STREAM = [PING_RAW, PONG_RAW, QUERY_RAW, HIT_RAW, PUSH_RAW] * 20


def inflate(inflater: Inflater, data: bytes) -> bytes:
    return b"".join(inflater.decompress(data))


def test_each_write_decodes_at_once():
    d, i = Deflater(), Inflater()
    for raw in STREAM[:5]:
        assert inflate(i, d.compress(raw)) == raw      # nothing held back


def test_the_stream_is_plain_zlib():
    d = Deflater()
    z = zlib.decompressobj()
    assert z.decompress(d.compress(b"abc") + d.compress(b"def")) == b"abcdef"
    peer = zlib.compressobj(9)                         # a peer's deflater, read by ours
    sent = peer.compress(b"hello") + peer.flush(zlib.Z_SYNC_FLUSH)
    assert inflate(Inflater(), sent) == b"hello"


@given(st.lists(st.integers(0, 10_000), max_size=20))
def test_any_split_of_the_compressed_bytes(cuts):
    d = Deflater()
    wire = b"".join(d.compress(b"".join(STREAM[k:k + 7])) for k in range(0, len(STREAM), 7))
    bounds = [0, *sorted(c % (len(wire) + 1) for c in cuts), len(wire)]
    i, parser, got = Inflater(), DescriptorParser(), []
    for lo, hi in pairwise(bounds):
        for piece in i.decompress(wire[lo:hi]):
            got += parser.feed(piece)
    assert [g.raw for g in got] == STREAM


def test_inflation_comes_in_bounded_pieces():
    bomb = Deflater().compress(bytes(10_000_000))      # about 10 kB on the wire
    assert len(bomb) < 20_000
    pieces = Inflater(piece=65536).decompress(bomb)
    first = next(pieces)                               # only a piece is inflated so far
    assert len(first) == 65536
    sizes = [len(first), *map(len, pieces)]
    assert max(sizes) <= 65536 and sum(sizes) == 10_000_000


def test_no_output_is_stranded_when_a_read_ends_inside_a_match():
    """A read can end right after a long match's code: all input taken, output still inside
    zlib. Everything those bytes encode must come out now, not with the next read."""
    wire = Deflater().compress(b"a" * 5000)
    for cut in range(1, len(wire)):
        for piece in (10, 258, 1000):
            i = Inflater(piece=piece)
            now = inflate(i, wire[:cut])
            assert now == zlib.decompressobj().decompress(wire[:cut])
            assert now + inflate(i, wire[cut:]) == b"a" * 5000


def test_corrupt_stream():
    with pytest.raises(ProtocolError, match="corrupt deflate stream"):
        inflate(Inflater(), b"\x78\x9cnot deflate at all")


def test_a_finished_stream_is_refused():
    with pytest.raises(ProtocolError, match="ended its deflate stream"):
        inflate(Inflater(), zlib.compress(b"the end"))


def test_compressed_descriptors_behind_the_handshake():
    """A connector and an acceptor negotiate deflate both ways; the connector's confirmation and
    its first compressed descriptors arrive in one read, as they do on a real socket."""
    c, a = Connector(), Acceptor()
    [req] = a.receive(c.start()[0].data)
    assert isinstance(req, Request)
    [answer] = a.accept()
    confirm, done_c = c.receive(answer.data)
    assert isinstance(confirm, Send) and done_c.deflate_out and done_c.deflate_in

    to_acceptor = Deflater()
    [done_a] = a.receive(confirm.data + to_acceptor.compress(b"".join(STREAM[:3])))
    assert isinstance(done_a, Established) and done_a.deflate_in and done_a.deflate_out
    inflater, parser = Inflater(), DescriptorParser()
    got = [d for piece in inflater.decompress(done_a.extra) for d in parser.feed(piece)]
    got += [d for piece in inflater.decompress(to_acceptor.compress(b"".join(STREAM[3:])))
            for d in parser.feed(piece)]
    assert [d.raw for d in got] == STREAM

    to_connector = Deflater()
    back = [d.forward(d.ttl - 1, d.hops + 1) for d in got[:5]]
    received = inflate(Inflater(), to_connector.compress(b"".join(back)))
    assert [d.raw for d in DescriptorParser().feed(received)] == [bytes(b) for b in back]
