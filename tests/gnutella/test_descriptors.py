"""Descriptor formats against byte strings written out by hand from the 0.6 specification
(section 2.2), so that they do not depend on the encoders; then the encoders against the same
bytes, and forwarding with a new TTL and hops."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnutella.descriptors import (
    QHD,
    QUERY,
    QUERY_HIT,
    Bye,
    Ping,
    Pong,
    Push,
    Query,
    QueryFlags,
    QueryHit,
    Result,
    UnknownDescriptor,
    encode,
    encode_bye,
    encode_ping,
    encode_pong,
    encode_push,
    encode_query,
    encode_query_hit,
    new_guid,
)
from gnutella.errors import ProtocolError
from gnutella.extensions import GGEPExtension, parse_ggep, split_extensions
from gnutella.parser import DescriptorParser

from tests.helpers.gnutella_spec import (
    BYE_RAW,
    GUID,
    H_DATA,
    HIT_RAW,
    PING_GGEP,
    PING_GGEP_RAW,
    PING_RAW,
    PONG_PAYLOAD,
    PONG_RAW,
    PUSH_PAYLOAD,
    PUSH_RAW,
    QHD_BYTES,
    QUERY_PAYLOAD,
    QUERY_RAW,
    RESULT_EXT,
    SERVENT,
    SHA1,
    header,
)


def parse_one(raw: bytes):
    [d] = DescriptorParser().feed(raw)
    assert d.raw == raw
    return d


def test_header_fields():
    d = parse_one(QUERY_RAW)
    assert (d.guid, d.payload_type, d.ttl, d.hops) == (GUID, QUERY, 5, 2)
    assert d.payload == QUERY_PAYLOAD


def test_ping():
    d = parse_one(PING_RAW)
    assert type(d) is Ping and d.ggep == b"" and d.payload == b""
    g = parse_one(PING_GGEP_RAW)
    assert parse_ggep(g.ggep) == ([GGEPExtension("SCP", b"\x01")], len(PING_GGEP))


def test_pong():
    d = parse_one(PONG_RAW)
    assert type(d) is Pong
    assert (d.port, d.ip, d.files, d.kbytes) == (6346, "192.168.1.2", 300, 70000)
    assert parse_ggep(d.ggep)[0] == [GGEPExtension("DU", b"\x10\x01")]


def test_query():
    d = parse_one(QUERY_RAW)
    assert type(d) is Query
    assert d.flags == (QueryFlags.MARK | QueryFlags.XML | QueryFlags.GGEP_H
                       | QueryFlags.OOB_REPLY)
    assert QueryFlags.FIREWALLED not in d.flags and d.min_speed == 0
    assert d.search == "free music"
    assert d.extensions == QUERY_PAYLOAD[len(b"\xac\x00free music\x00"):]
    urn, ggep = split_extensions(d.extensions)
    assert urn == SHA1
    assert parse_ggep(ggep)[0] == [GGEPExtension("H", H_DATA)]


def test_query_legacy_speed_field():
    payload = b"\x64\x00" + b"linux\x00"          # 100 kb/s, little-endian, no MARK
    d = parse_one(header(QUERY, 7, 0, len(payload)) + payload)
    assert d.min_speed == 100 and d.flags == QueryFlags(0)
    assert d.search == "linux" and d.extensions == b""


def test_query_flags_keep_bits_we_do_not_name():
    payload = b"\x80\x01" + b"x\x00"              # MARK and a low bit (max hits, GTA...)
    d = parse_one(header(QUERY, 7, 0, len(payload)) + payload)
    assert d.flags & QueryFlags.MARK and int(d.flags) == 0x8001


def test_query_hit():
    d = parse_one(HIT_RAW)
    assert type(d) is QueryHit
    assert (d.count, d.port, d.ip, d.speed) == (2, 6346, "10.0.0.7", 1000)
    assert d.results == [Result(42, 1_000_000, "song.mp3", RESULT_EXT),
                         Result(7, 1024, "café.txt", b"")]
    assert d.trailer == QHD_BYTES
    assert d.qhd == QHD("GTKG", b"\x1c\x19", b"\xc3\x82BH\x40")
    assert d.servent_id == SERVENT
    urn, ggep = split_extensions(d.results[0].extensions)
    [lf] = parse_ggep(ggep)[0]
    assert urn == SHA1 and lf.id == "LF" and lf.cobs and lf.value() == b"\x01\0\0\0\x01"


def test_query_hit_without_trailer():
    payload = b"\x00\xca\x18\x0a\x00\x00\x07\x00\x00\x00\x00" + SERVENT
    d = parse_one(header(QUERY_HIT, 7, 0, len(payload)) + payload)
    assert d.results == [] and d.trailer == b"" and d.qhd is None
    assert d.servent_id == SERVENT


def test_push():
    d = parse_one(PUSH_RAW)
    assert type(d) is Push
    assert (d.servent_id, d.file_index, d.ip, d.port) == (SERVENT, 5, "127.0.0.1", 6346)
    assert parse_ggep(d.ggep)[0] == [GGEPExtension("PSH", b"")]


def test_bye_says_its_code_and_reason_without_the_headers():
    d = parse_one(BYE_RAW)
    assert type(d) is Bye
    assert (d.code, d.message, d.ttl, d.hops) == (403, "Relayed 12 high TTL (>10) messages", 1, 0)


def test_a_bye_too_short_for_its_code_is_refused():
    with pytest.raises(ProtocolError, match="Bye payload of 1 bytes"):
        DescriptorParser().feed(header(0x02, 1, 0, 1) + b"\x00")


@pytest.mark.parametrize("ptype", [0x30, 0x31, 0x32, 0xCD, 0xFF])
def test_unknown_types_pass_as_unknown(ptype):
    payload = b"vendor \x00\xff data"
    d = parse_one(header(ptype, 1, 6, len(payload)) + payload)
    assert type(d) is UnknownDescriptor
    assert d.payload_type == ptype and d.payload == payload
    assert d.forward(0, 7) == header(ptype, 0, 7, len(payload)) + payload


# -- the encoders build the same bytes --------------------------------------------------------

def test_encoders_build_the_spec_bytes():
    assert encode_ping(guid=GUID) == PING_RAW
    assert encode_ping(guid=GUID, ttl=1, ggep=PING_GGEP) == PING_GGEP_RAW
    assert encode_pong(GUID, 6346, "192.168.1.2", 300, 70000, ggep=PONG_PAYLOAD[14:], ttl=6,
                       hops=1) == PONG_RAW
    assert encode_query("free music", flags=QueryFlags.XML | QueryFlags.GGEP_H
                        | QueryFlags.OOB_REPLY, extensions=QUERY_PAYLOAD[13:], guid=GUID,
                        ttl=5, hops=2) == QUERY_RAW
    assert encode_query_hit(GUID, 6346, "10.0.0.7", 1000,
                            [Result(42, 1_000_000, "song.mp3", RESULT_EXT),
                             Result(7, 1024, "café.txt")],
                            SERVENT, trailer=QHD_BYTES, ttl=4, hops=3) == HIT_RAW
    assert encode_push(SERVENT, 5, "127.0.0.1", 6346, ggep=PUSH_PAYLOAD[26:], guid=GUID, ttl=3,
                       hops=4) == PUSH_RAW
    assert encode(0x31, b"abc", guid=GUID, ttl=1) == header(0x31, 1, 0, 3) + b"abc"


def test_encode_bye_as_the_receiver_insists():
    raw = encode_bye(200, "Servent shutdown")
    d = parse_one(raw)
    assert (d.code, d.message, d.ttl, d.hops) == (200, "Servent shutdown", 1, 0)
    assert raw[23:] == b"\xc8\x00Servent shutdown\x00"


def test_encode_query_legacy_speed():
    raw = encode_query(b"linux", min_speed=100, guid=GUID)
    assert raw == header(QUERY, 7, 0, 8) + b"\x64\x00linux\x00"
    with pytest.raises(ValueError):
        encode_query("x", flags=QueryFlags.XML, min_speed=5)


def test_encoders_check_id_sizes():
    with pytest.raises(ValueError):
        encode_ping(guid=b"short")
    with pytest.raises(ValueError):
        encode_push(b"short", 1, "1.2.3.4", 1)
    with pytest.raises(ValueError):
        encode_query_hit(GUID, 1, "1.2.3.4", 1, [], b"short")


def test_new_guid_is_marked_modern():
    a, b = new_guid(), new_guid()
    assert len(a) == 16 and a != b
    assert a[8] == 0xFF and a[15] == 0x00


# -- forwarding --------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [PING_GGEP_RAW, PONG_RAW, QUERY_RAW, HIT_RAW, PUSH_RAW])
def test_forward_changes_ttl_and_hops_only(raw):
    d = parse_one(raw)
    out = d.forward(d.ttl - 1, d.hops + 1)
    assert out[:17] == raw[:17] and out[19:] == raw[19:]
    assert (out[17], out[18]) == (d.ttl - 1, d.hops + 1)
    again = parse_one(bytes(out))
    assert type(again) is type(d) and again.payload == d.payload
    assert d.raw == raw                          # the original is untouched


def test_equality_is_by_bytes():
    assert parse_one(QUERY_RAW) == parse_one(QUERY_RAW)
    assert len({parse_one(QUERY_RAW), parse_one(QUERY_RAW), parse_one(PONG_RAW)}) == 2
    assert parse_one(QUERY_RAW) != parse_one(PONG_RAW)
    assert "Query(guid=101112" in repr(parse_one(QUERY_RAW))


# -- payloads that are wrong past their fixed fields fail when read ------------------------------

def test_query_without_nul_fails_when_read():
    payload = b"\x00\x00abc"
    d = parse_one(header(QUERY, 7, 0, len(payload)) + payload)
    with pytest.raises(ProtocolError, match="NUL-terminated"):
        d.search  # noqa: B018


def test_query_hit_with_a_result_past_the_end_fails_when_read():
    payload = b"\x02\xca\x18\x0a\x00\x00\x07\x00\x00\x00\x00" + b"\x01\x00\x00\x00" * 2 \
        + b"a\x00\x00" + SERVENT
    d = parse_one(header(QUERY_HIT, 7, 0, len(payload)) + payload)
    with pytest.raises(ProtocolError, match="result 2 of 2"):
        d.results  # noqa: B018
    assert d.servent_id == SERVENT                # routing still works


def test_query_hit_with_a_short_trailer_has_no_qhd():
    payload = b"\x00\xca\x18\x0a\x00\x00\x07\x00\x00\x00\x00" + b"LIM" + SERVENT
    d = parse_one(header(QUERY_HIT, 7, 0, len(payload)) + payload)
    assert d.trailer == b"LIM"
    with pytest.raises(ProtocolError, match="no QHD"):
        d.qhd  # noqa: B018


# -- every type round-tripped through the encoders, with arbitrary field values ------------------

IPS = st.builds(lambda *b: ".".join(map(str, b)), *[st.integers(0, 255)] * 4)
U16, U32 = st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF)
IDS = st.binary(min_size=16, max_size=16)
NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))
AREAS = st.binary().map(lambda b: b.replace(b"\0", b""))   # NULs end an extension area
TTLS = st.integers(0, 255)


@given(IDS, U16, IPS, U32, U32, st.binary(), TTLS, TTLS)
def test_pong_round_trip(guid, port, ip, files, kbytes, ggep, ttl, hops):
    d = parse_one(encode_pong(guid, port, ip, files, kbytes, ggep=ggep, ttl=ttl, hops=hops))
    assert (d.guid, d.ttl, d.hops) == (guid, ttl, hops)
    assert (d.port, d.ip, d.files, d.kbytes, d.ggep) == (port, ip, files, kbytes, ggep)


@given(NAMES, st.sampled_from(QueryFlags), st.binary(), IDS)
def test_query_round_trip(search, flags, extensions, guid):
    d = parse_one(encode_query(search, flags=flags, extensions=extensions, guid=guid))
    assert d.search == search and d.extensions == extensions
    assert d.flags == (flags | QueryFlags.MARK if flags else QueryFlags(0))
    assert d.min_speed == 0


@given(st.lists(st.builds(Result, U32, U32, NAMES, AREAS), max_size=10), IDS, IDS, U16, IPS,
       U32, st.binary())
def test_query_hit_round_trip(results, guid, servent, port, ip, speed, private):
    trailer = b"LIME\x02\x1c\x01" + private
    d = parse_one(encode_query_hit(guid, port, ip, speed, results, servent, trailer=trailer))
    assert (d.count, d.port, d.ip, d.speed, d.servent_id) == (len(results), port, ip, speed,
                                                              servent)
    assert d.results == results and d.trailer == trailer
    assert d.qhd == QHD("LIME", b"\x1c\x01", private)


@given(IDS, U32, IPS, U16, st.binary())
def test_push_round_trip(servent, index, ip, port, ggep):
    d = parse_one(encode_push(servent, index, ip, port, ggep=ggep))
    assert (d.servent_id, d.file_index, d.ip, d.port, d.ggep) == (servent, index, ip, port, ggep)
