"""The stream parser: any split of the input gives the same descriptors; lying lengths and
payloads too short for their fixed fields raise a ProtocolError naming the fault."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnutella.descriptors import PONG, PUSH, QUERY, QUERY_HIT, encode
from gnutella.errors import ProtocolError
from gnutella.parser import DescriptorParser

from tests.helpers.gnutella_spec import (
    HIT_RAW,
    PING_GGEP_RAW,
    PING_RAW,
    PONG_RAW,
    PUSH_RAW,
    QUERY_RAW,
    header,
)

VENDOR_RAW = header(0x31, 1, 0, 8) + b"GTKG\x01\x00\x02\x00"   # "messages supported"
QRP_RAW = header(0x30, 1, 0, 2) + b"\x00\x01"                 # a QRP reset
STREAM = [PING_RAW, PONG_RAW, VENDOR_RAW, QUERY_RAW, HIT_RAW, PING_GGEP_RAW, QRP_RAW, PUSH_RAW]
WHOLE = b"".join(STREAM)


def raws(descriptors) -> list[bytes]:
    return [d.raw for d in descriptors]


def test_one_feed():
    p = DescriptorParser()
    assert raws(p.feed(WHOLE)) == STREAM
    assert p.buffered == 0


def test_byte_by_byte():
    p = DescriptorParser()
    out = []
    for i in range(len(WHOLE)):
        got = p.feed(WHOLE[i:i + 1])
        out += got
        assert p.buffered == (i + 1) - sum(map(len, raws(out)))
    assert raws(out) == STREAM


@settings(max_examples=200)
@given(st.lists(st.integers(0, len(WHOLE)), max_size=30))
def test_random_splits_give_the_same_descriptors(cuts):
    bounds = [0, *sorted(cuts), len(WHOLE)]
    p = DescriptorParser()
    out = []
    for a, b in pairwise(bounds):
        out += p.feed(WHOLE[a:b])
    assert raws(out) == STREAM and p.buffered == 0


def test_partial_descriptor_waits():
    p = DescriptorParser()
    assert p.feed(QUERY_RAW[:10]) == []
    assert p.feed(QUERY_RAW[10:30]) == []
    assert p.buffered == 30
    [q] = p.feed(QUERY_RAW[30:] + PONG_RAW[:5])
    assert q.raw == QUERY_RAW and p.buffered == 5


def test_feed_copies_a_reused_buffer():
    p = DescriptorParser()
    buf = bytearray(QUERY_RAW[:30])
    p.feed(memoryview(buf))
    buf[:] = b"\xff" * 30                        # the caller reuses its receive buffer
    [q] = p.feed(bytearray(QUERY_RAW[30:]))
    assert q.raw == QUERY_RAW


def test_oversize_length_refused_from_the_header_alone():
    p = DescriptorParser(max_payload=1000)
    assert len(p.feed(PONG_RAW)) == 1
    lying = header(QUERY, 7, 0, 1001)
    with pytest.raises(ProtocolError, match="1001-byte payload, over the limit of 1000") as e:
        p.feed(PING_RAW + lying)                  # no payload sent: the header is enough
    assert raws(e.value.descriptors) == [PING_RAW]
    with pytest.raises(ProtocolError, match="over the limit"):
        p.feed(PING_RAW)                          # the stream is beyond repair


def test_default_limit_is_64k():
    p = DescriptorParser()
    assert len(p.feed(encode(0x31, bytes(65536)))) == 1
    with pytest.raises(ProtocolError):
        p.feed(header(0x31, 1, 0, 65537))


def test_a_huge_length_garbled_header():
    garbage = bytes(range(0x41, 0x41 + 23))      # e.g. an HTTP request where descriptors go
    with pytest.raises(ProtocolError, match="over the limit"):
        DescriptorParser().feed(garbage)


@pytest.mark.parametrize(("ptype", "minimum", "name"), [
    (PONG, 14, "Pong"), (QUERY, 3, "Query"), (QUERY_HIT, 27, "QueryHit"), (PUSH, 26, "Push")])
def test_payload_shorter_than_its_fixed_fields(ptype, minimum, name):
    short = header(ptype, 7, 0, minimum - 1) + bytes(minimum - 1)
    with pytest.raises(ProtocolError,
                       match=f"{name} payload of {minimum - 1} bytes is shorter than the"
                             f" {minimum} bytes of its fixed fields") as e:
        DescriptorParser().feed(PING_RAW + short)
    assert raws(e.value.descriptors) == [PING_RAW]
    [d] = DescriptorParser().feed(header(ptype, 7, 0, minimum) + bytes(minimum - 1) + b"\0")
    assert d.payload_type == ptype


def test_a_short_fixed_payload_is_refused_before_its_bytes_arrive():
    with pytest.raises(ProtocolError, match="Pong payload of 10 bytes"):
        DescriptorParser().feed(header(PONG, 7, 0, 10))
