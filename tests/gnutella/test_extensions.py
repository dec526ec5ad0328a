"""GGEP blocks (GGEP 0.51) and extension areas (HUGE 0.94, section 3) against hand-built
bytes."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnutella.errors import ProtocolError
from gnutella.extensions import GGEPExtension, encode_ggep, parse_ggep, split_extensions

# Three extensions: "DU" with 2 bytes, "VC" with 70 bytes (a 2-byte length: 0x81 0x46 is
# 1 << 6 | 6), and "UP" with none, the last.
BLOCK = (b"\xc3"
         + b"\x02DU" + b"\x42" + b"\x10\x01"
         + b"\x02VC" + b"\x81\x46" + bytes(range(70))
         + b"\x82UP" + b"\x40")


def test_parse_block():
    exts, end = parse_ggep(BLOCK + b"after", 0)
    assert exts == [GGEPExtension("DU", b"\x10\x01"), GGEPExtension("VC", bytes(range(70))),
                    GGEPExtension("UP", b"")]
    assert end == len(BLOCK)


def test_parse_block_at_an_offset():
    assert parse_ggep(b"xx" + BLOCK, 2)[1] == 2 + len(BLOCK)


def test_three_byte_length():
    data = bytes(5000)                            # 5000 = 1 << 12 | 14 << 6 | 8
    block = b"\xc3\x81X" + b"\x81\x8e\x48" + data
    assert parse_ggep(block)[0] == [GGEPExtension("X", data)]


def test_encode_is_the_inverse():
    exts = parse_ggep(BLOCK)[0]
    assert encode_ggep(exts) == BLOCK


@given(st.lists(st.tuples(st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=15),
                          st.binary(max_size=5000), st.booleans(), st.booleans()),
                min_size=1, max_size=5))
def test_round_trip(items):
    exts = [GGEPExtension(*item) for item in items]
    block = encode_ggep(exts)
    assert parse_ggep(block) == (exts, len(block))


@pytest.mark.parametrize(("length", "encoded"), [
    (0, b"\x40"), (63, b"\x7f"), (64, b"\x81\x40"), (4095, b"\xbf\x7f"),
    (4096, b"\x81\x80\x40"), ((1 << 18) - 1, b"\xbf\xbf\x7f")])
def test_length_encoding(length, encoded):
    assert encode_ggep([GGEPExtension("Z", bytes(length))])[3:3 + len(encoded)] == encoded


def test_encode_refuses_what_cannot_be_written():
    with pytest.raises(ValueError):
        encode_ggep([])
    with pytest.raises(ValueError):
        encode_ggep([GGEPExtension("SIXTEEN-BYTES-ID", b"")])
    with pytest.raises(ValueError):
        encode_ggep([GGEPExtension("X", bytes(1 << 18))])


def test_cobs_value():
    # 01 00 00 00 01, COBS-encoded so that it holds no NUL
    ext = parse_ggep(b"\xc3\xc2LF\x46\x02\x01\x01\x01\x02\x01")[0][0]
    assert ext.cobs and ext.value() == b"\x01\x00\x00\x00\x01"
    assert GGEPExtension("X", b"\x03ab\x02c", cobs=True).value() == b"ab\x00c"
    assert GGEPExtension("X", b"\xff" + bytes(range(1, 255)) + b"\x01",
                         cobs=True).value() == bytes(range(1, 255))


def test_deflated_value():
    text = b"<audios><audio title='x'/></audios>" * 20
    block = encode_ggep([GGEPExtension("XM", zlib.compress(text), deflate=True)])
    [ext] = parse_ggep(block)[0]
    assert ext.deflate and ext.value() == text
    with pytest.raises(ProtocolError, match="inflates past 100 bytes"):
        ext.value(limit=100)
    with pytest.raises(ProtocolError, match="bad deflate data"):
        GGEPExtension("XM", b"not deflate", deflate=True).value()


@pytest.mark.parametrize(("block", "fault"), [
    (b"", "no GGEP block"),
    (b"\x00\x81X\x40", "no GGEP block"),
    (b"\xc3", "ends before its last extension"),
    (b"\xc3\x91X\x40", "header 0x91 is invalid"),          # reserved bit
    (b"\xc3\x80\x40", "header 0x80 is invalid"),           # no ID
    (b"\xc3\x83X", "cut short"),
    (b"\xc3\x82X\x00\x40", "holds a NUL"),
    (b"\xc3\x81X", "inside a data length"),
    (b"\xc3\x81X\x01", "length byte 0x01 is invalid"),     # neither flag
    (b"\xc3\x81X\xc1", "length byte 0xc1 is invalid"),     # both flags
    (b"\xc3\x81X\x81\x81\x81\x41", "past three bytes"),
    (b"\xc3\x81X\x45abc", "claims 5 bytes past the end"),
    (b"\xc3\x01X\x40", "ends before its last extension"),  # no extension marked last
])
def test_malformed_blocks(block, fault):
    with pytest.raises(ProtocolError, match=fault):
        parse_ggep(block)


def test_bad_cobs():
    with pytest.raises(ProtocolError, match="not valid COBS"):
        GGEPExtension("X", b"\x05ab", cobs=True).value()
    with pytest.raises(ProtocolError, match="not valid COBS"):
        GGEPExtension("X", b"\x02a\x00", cobs=True).value()


def test_split_an_extension_area():
    ggep = b"\xc3\x81H\x43\x1c\x1c\x1c"               # binary data full of 0x1C
    area = b"urn:sha1:ABC\x1c" + ggep + b"\x1c<xml/>\x1curn:\x00ignored"
    assert split_extensions(area) == [b"urn:sha1:ABC", ggep, b"<xml/>", b"urn:"]


def test_split_skips_empty_items_and_stops_at_nul():
    assert split_extensions(b"") == []
    assert split_extensions(b"\x00urn:") == []
    assert split_extensions(b"\x1c\x1curn:\x1c") == [b"urn:"]
    ggep = encode_ggep([GGEPExtension("H", b"\x01abc")])
    assert split_extensions(ggep + b"urn:x") == [ggep, b"urn:x"]


def test_split_refuses_a_broken_ggep_block():
    with pytest.raises(ProtocolError):
        split_extensions(b"urn:x\x1c\xc3\x81H\x45ab")
