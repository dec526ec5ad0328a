"""Descriptors written out by hand, field by field, from "The Gnutella Protocol Specification
v0.6" (section 2.2), so that the tests of the parser do not depend on the encoders."""

from __future__ import annotations

from gnutella.descriptors import BYE, PING, PONG, PUSH, QUERY, QUERY_HIT

GUID = bytes(range(0x10, 0x20))
SERVENT = bytes(range(0xA0, 0xB0))
SHA1 = b"urn:sha1:PLSTHIPQGSSZTS5FJUPAKUZWUGYQYPFB"


def header(ptype: int, ttl: int, hops: int, length: int) -> bytes:
    """GUID, type, TTL, hops, then the payload length little-endian (2.2.1), by hand."""
    return GUID + bytes([ptype, ttl, hops]) + length.to_bytes(4, "little")


# The payloads, field by field (2.2.2 - 2.2.8)
PING_GGEP = b"\xc3" + b"\x83SCP" + b"\x41" + b"\x01"               # "SCP", 1 byte of data
PONG_PAYLOAD = (b"\xca\x18"             # port 6346, little-endian
                b"\xc0\xa8\x01\x02"     # 192.168.1.2, network order
                b"\x2c\x01\x00\x00"     # 300 files
                b"\x70\x11\x01\x00"     # 70000 kB
                b"\xc3\x82DU\x42\x10\x01")  # GGEP "DU": 2 bytes
H_DATA = b"\x01" + bytes(range(20))    # GGEP "H": SHA1 in binary
QUERY_PAYLOAD = (b"\xac\x00"            # MARK|XML|GGEP_H|OOB_REPLY, big-endian
                 b"free music\x00"
                 + SHA1 + b"\x1c"
                 + b"\xc3\x81H\x55" + H_DATA)   # one extension, last, 21 bytes
# HUGE, then GGEP "LF" (a 64-bit size), COBS-encoded since NULs end the area: 01 00 00 00 01
RESULT_EXT = SHA1 + b"\x1c\xc3\xc2LF\x46\x02\x01\x01\x01\x02\x01"
QHD_BYTES = b"GTKG" + b"\x02" + b"\x1c\x19" + b"\xc3\x82BH\x40"     # vendor, open, private
HIT_PAYLOAD = (b"\x02"                   # 2 results
               b"\xca\x18"               # port 6346
               b"\x0a\x00\x00\x07"       # 10.0.0.7
               b"\xe8\x03\x00\x00"       # 1000 kb/s
               b"\x2a\x00\x00\x00" b"\x40\x42\x0f\x00" b"song.mp3\x00" + RESULT_EXT + b"\x00"
               + b"\x07\x00\x00\x00" b"\x00\x04\x00\x00" b"caf\xc3\xa9.txt\x00\x00"
               + QHD_BYTES + SERVENT)
PUSH_PAYLOAD = (SERVENT + b"\x05\x00\x00\x00"   # file index 5
                b"\x7f\x00\x00\x01"             # 127.0.0.1
                b"\xca\x18"                     # port 6346
                b"\xc3\x83PSH\x40")             # GGEP "PSH", empty

# A Bye as gtk-gnutella sends one when it kicks a peer (nodes.c, node_bye_v): the code (403)
# little-endian, the reason, a CRLF and headers, the NUL
BYE_PAYLOAD = (b"\x93\x01" b"Relayed 12 high TTL (>10) messages\r\n"
               b"Server: gtk-gnutella/1.2.2 (2022-02-25)\r\n\r\n\x00")

PING_RAW = header(PING, 7, 0, 0)
PING_GGEP_RAW = header(PING, 1, 0, len(PING_GGEP)) + PING_GGEP
PONG_RAW = header(PONG, 6, 1, len(PONG_PAYLOAD)) + PONG_PAYLOAD
QUERY_RAW = header(QUERY, 5, 2, len(QUERY_PAYLOAD)) + QUERY_PAYLOAD
HIT_RAW = header(QUERY_HIT, 4, 3, len(HIT_PAYLOAD)) + HIT_PAYLOAD
PUSH_RAW = header(PUSH, 3, 4, len(PUSH_PAYLOAD)) + PUSH_PAYLOAD
BYE_RAW = header(BYE, 1, 0, len(BYE_PAYLOAD)) + BYE_PAYLOAD
