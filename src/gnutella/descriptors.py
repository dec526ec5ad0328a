"""Gnutella descriptors (messages): the 23-byte header, the five payloads, and their encoders.

Spec: "The Gnutella Protocol Specification v0.6" (Klingberg and Manfredi, 2002), section 2.2.
Integers are little-endian, IPv4 addresses in network order; the query flags that took over the
minimum-speed field are big-endian (the GDF's "New Interpretation of the MinSpeed field").

A descriptor keeps the bytes it arrived in, header included (``raw``), and decodes a payload
field only when it is read: a router that routes on the header pays for the header alone, and
forwards every extension it does not understand byte for byte (``forward``).

API (``DescriptorParser`` in ``parser.py`` makes these from a byte stream):
  ``Descriptor``: ``raw``, ``guid``, ``ttl``, ``hops``, ``payload_type``, ``payload``,
  ``forward(ttl, hops) -> bytearray`` (the raw bytes with a new TTL and hops)
  ``Ping.ggep``; ``Pong.port/ip/files/kbytes/ggep``; ``Query.flags/min_speed/search/extensions``;
  ``QueryHit.count/port/ip/speed/servent_id/results/trailer/qhd``;
  ``Push.servent_id/file_index/ip/port/ggep``; ``Bye.code/message`` (0x02, a servent saying
  why it closes); ``UnknownDescriptor`` (vendor messages, QRP route table updates, HSEP and
  whatever comes next: passed on, never an error); ``BYE``, ``ROUTE_TABLE_UPDATE``
  ``QueryFlags`` (``NO_FLAGS``), ``Result``, ``QHD``; ``CLASSES`` (payload type -> class)
  ``new_guid()``, ``encode()``, ``encode_ping()``, ``encode_pong()``, ``encode_query()``,
  ``encode_query_hit()``, ``encode_push()``, ``encode_bye()``: wire bytes
Fields that cannot be read from a malformed payload raise ``ProtocolError``; the parser already
refused payloads too short for their fixed fields.
"""

from __future__ import annotations

import enum
import functools
import os
import socket
import struct
from collections.abc import Iterable
from typing import ClassVar, NamedTuple

from .errors import ProtocolError

# Payload types (2.2.1); anything else is an UnknownDescriptor
PING, PONG, PUSH, QUERY, QUERY_HIT = 0x00, 0x01, 0x40, 0x80, 0x81
# Between two neighbours only, never routed: the GDF's Bye (a servent closing says why) and the
# QRP route table update (a leaf's RESET and PATCH messages, LimeWire's Query Routing v0.1)
BYE, ROUTE_TABLE_UPDATE = 0x02, 0x30

HEADER = struct.Struct("<16sBBBI")     # GUID, payload type, TTL, hops, payload length
HEADER_SIZE = HEADER.size              # 23
GUID_SIZE = 16

_PONG = struct.Struct("<H4sII")        # port, IPv4, files shared, kilobytes shared
_HIT = struct.Struct("<BH4sI")         # hits, port, IPv4, speed (kb/s)
_RESULT = struct.Struct("<II")         # file index, file size
_PUSH = struct.Struct("<I4sH")         # file index, IPv4, port (after the servent id)
_HIT_FIXED = _HIT.size                 # 11
_PUSH_FIXED = GUID_SIZE + _PUSH.size   # 26


class QueryFlags(enum.IntFlag):
    """The minimum-speed field of a query read as flags, big-endian, when ``MARK`` is set (the
    GDF's MinSpeed proposal; the bit names are the LimeWire-era ones, as in gtk-gnutella)."""

    MARK = 0x8000          # the field holds flags, not a speed
    FIREWALLED = 0x4000    # the querier cannot accept connections: firewalled hosts stay quiet
    XML = 0x2000           # XML metadata wanted in the hits
    LEAF_GUIDED = 0x1000   # a leaf guides this dynamic query
    GGEP_H = 0x0800        # the querier reads GGEP "H" hashes in hits
    OOB_REPLY = 0x0400     # hits may come out of band (UDP)
    FW_TO_FW = 0x0200      # the querier can do firewall-to-firewall transfers


NO_FLAGS = QueryFlags(0)
# Making an IntFlag costs a microsecond; the few combinations servents send are made once.
_flags = functools.lru_cache(maxsize=256)(QueryFlags)


class Result(NamedTuple):
    """One file of a query hit's result set (2.2.6): ``extensions`` is the area between the two
    NULs (HUGE ``urn:`` items, GGEP), kept as sent."""

    file_index: int
    size: int
    name: str
    extensions: bytes = b""


class QHD(NamedTuple):
    """The optional query hit descriptor data between the results and the servent id (2.2.6):
    the vendor code, the open data (flag bytes) and the private data, all as sent."""

    vendor: str
    open_data: bytes
    private_data: bytes


class Descriptor:
    """One descriptor as received. ``raw`` is the whole message, header included; ``guid``,
    ``ttl`` and ``hops`` come from the header; the payload is decoded only when read."""

    __slots__ = ("guid", "hops", "raw", "ttl")
    #: the shortest payload that holds this type's fixed fields (the parser enforces it)
    min_payload: ClassVar[int] = 0

    def __init__(self, raw: bytes, guid: bytes, ttl: int, hops: int) -> None:
        self.raw, self.guid, self.ttl, self.hops = raw, guid, ttl, hops

    @property
    def payload_type(self) -> int:
        return self.raw[16]

    @property
    def payload(self) -> bytes:
        return self.raw[HEADER_SIZE:]

    def forward(self, ttl: int, hops: int) -> bytearray:
        """The message to send on: the same bytes, extensions and all, with a new TTL and hops.
        One copy, no re-encoding (a router forwards what it does not understand)."""
        out = bytearray(self.raw)
        out[17] = ttl
        out[18] = hops
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descriptor) and self.raw == other.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(guid={self.guid.hex()}, ttl={self.ttl}, hops={self.hops},"
                f" payload={len(self.raw) - HEADER_SIZE}B)")


class Ping(Descriptor):
    """Ping (0x00, 2.2.2): no payload, or a GGEP block (e.g. "SCP" asking for packed pongs)."""

    __slots__ = ()

    @property
    def ggep(self) -> bytes:
        return self.raw[HEADER_SIZE:]


class Pong(Descriptor):
    """Pong (0x01, 2.2.3): a host's address and what it shares, then an optional GGEP block
    (uptime, ultrapeer slots, packed IPs...)."""

    __slots__ = ()
    min_payload = _PONG.size   # 14

    @property
    def port(self) -> int:
        return _PONG.unpack_from(self.raw, HEADER_SIZE)[0]

    @property
    def ip(self) -> str:
        return socket.inet_ntoa(self.raw[25:29])

    @property
    def files(self) -> int:
        return _PONG.unpack_from(self.raw, HEADER_SIZE)[2]

    @property
    def kbytes(self) -> int:
        return _PONG.unpack_from(self.raw, HEADER_SIZE)[3]

    @property
    def ggep(self) -> bytes:
        return self.raw[HEADER_SIZE + _PONG.size:]


class Query(Descriptor):
    """Query (0x80, 2.2.5): the minimum-speed field (or flags), the NUL-terminated search
    criteria, and the extension area after them (HUGE ``urn:`` items, GGEP, XML), kept as
    sent."""

    __slots__ = ()
    min_payload = 3            # the speed field and the criteria's NUL

    @property
    def flags(self) -> QueryFlags:
        """The flags, ``NO_FLAGS`` when the field is a legacy speed (no ``MARK``)."""
        return _flags(self.raw[23] << 8 | self.raw[24]) if self.raw[23] & 0x80 else NO_FLAGS

    @property
    def min_speed(self) -> int:
        """The legacy minimum speed in kb/s (little-endian), 0 when the field holds flags."""
        field = self.raw[23] | self.raw[24] << 8
        return 0 if self.raw[23] & 0x80 else field

    @property
    def search(self) -> str:
        """The search criteria, UTF-8 (bytes that are not become U+FFFD)."""
        return self.raw[25:self._nul()].decode("utf-8", "replace")

    @property
    def extensions(self) -> bytes:
        """Everything after the criteria's NUL, as sent (see ``extensions.split_extensions``)."""
        return self.raw[self._nul() + 1:]

    def _nul(self) -> int:
        nul = self.raw.find(0, 25)
        if nul < 0:
            raise ProtocolError("query search criteria are not NUL-terminated")
        return nul


class QueryHit(Descriptor):
    """Query hit (0x81, 2.2.6): the responder's address and speed, its results, an optional
    vendor trailer (QHD) and the 16-byte servent id that pushes are routed by."""

    __slots__ = ()
    min_payload = _HIT_FIXED + GUID_SIZE   # 27

    @property
    def count(self) -> int:
        return self.raw[23]

    @property
    def port(self) -> int:
        return _HIT.unpack_from(self.raw, HEADER_SIZE)[1]

    @property
    def ip(self) -> str:
        return socket.inet_ntoa(self.raw[26:30])

    @property
    def speed(self) -> int:
        return _HIT.unpack_from(self.raw, HEADER_SIZE)[3]

    @property
    def servent_id(self) -> bytes:
        return self.raw[-GUID_SIZE:]

    @property
    def results(self) -> list[Result]:
        return self._walk()[0]

    @property
    def trailer(self) -> bytes:
        """The bytes between the last result and the servent id, verbatim (QHD and beyond)."""
        return self.raw[self._walk()[1]:-GUID_SIZE]

    @property
    def qhd(self) -> QHD | None:
        """The trailer read as QHD data, ``None`` when there is no trailer."""
        trailer = self.trailer
        if not trailer:
            return None
        if len(trailer) < 5 or 5 + trailer[4] > len(trailer):
            raise ProtocolError(f"query hit trailer of {len(trailer)} bytes is no QHD")
        end = 5 + trailer[4]
        return QHD(trailer[:4].decode("latin-1"), trailer[5:end], trailer[end:])

    def _walk(self) -> tuple[list[Result], int]:
        """The results, and the offset in ``raw`` where the trailer begins."""
        raw = self.raw
        stop = len(raw) - GUID_SIZE
        pos = HEADER_SIZE + _HIT_FIXED
        results = []
        for k in range(raw[23]):
            name_end = raw.find(0, pos + _RESULT.size, stop)
            ext_end = raw.find(0, name_end + 1, stop) if name_end >= 0 else -1
            if ext_end < 0:
                raise ProtocolError(f"query hit result {k + 1} of {raw[23]} runs past the end")
            file_index, size = _RESULT.unpack_from(raw, pos)
            name = raw[pos + _RESULT.size:name_end].decode("utf-8", "replace")
            results.append(Result(file_index, size, name, raw[name_end + 1:ext_end]))
            pos = ext_end + 1
        return results, pos


class Push(Descriptor):
    """Push (0x40, 2.2.8): asks the servent ``servent_id`` (learnt from its query hit) to
    connect out to ``ip:port`` and send file ``file_index``; an optional GGEP block follows."""

    __slots__ = ()
    min_payload = _PUSH_FIXED   # 26

    @property
    def servent_id(self) -> bytes:
        return self.raw[HEADER_SIZE:HEADER_SIZE + GUID_SIZE]

    @property
    def file_index(self) -> int:
        return _PUSH.unpack_from(self.raw, HEADER_SIZE + GUID_SIZE)[0]

    @property
    def ip(self) -> str:
        return socket.inet_ntoa(self.raw[43:47])

    @property
    def port(self) -> int:
        return _PUSH.unpack_from(self.raw, HEADER_SIZE + GUID_SIZE)[2]

    @property
    def ggep(self) -> bytes:
        return self.raw[HEADER_SIZE + _PUSH_FIXED:]


class Bye(Descriptor):
    """Bye (0x02, the GDF's Bye-Packet 0.1): a 16-bit little-endian code (2xx, 4xx, 5xx, as in
    HTTP), then a reason, NUL-terminated; gtk-gnutella may add headers after a CRLF. Sent with
    TTL 1 and hops 0 just before the sender closes."""

    __slots__ = ()
    min_payload = 2

    @property
    def code(self) -> int:
        return self.raw[23] | self.raw[24] << 8

    @property
    def message(self) -> str:
        """The reason, up to its NUL or the first CRLF (what follows are headers)."""
        text = self.raw[25:].split(b"\0", 1)[0].split(b"\r\n", 1)[0]
        return text.decode("utf-8", "replace")


class UnknownDescriptor(Descriptor):
    """Any other payload type: vendor messages (0x31, 0x32), QRP (0x30), HSEP (0xCD)...
    Modern servents send them from the first second; they are not errors."""

    __slots__ = ()


CLASSES: dict[int, type[Descriptor]] = {
    PING: Ping, PONG: Pong, QUERY: Query, QUERY_HIT: QueryHit, PUSH: Push, BYE: Bye}


# -- encoders: our own descriptors (pongs, tests, the load generator) ---------------------------

def new_guid() -> bytes:
    """A fresh message id: random, byte 8 all ones (a "modern" servent) and byte 15 zero
    (reserved), as 2.2.1 asks."""
    guid = bytearray(os.urandom(GUID_SIZE))
    guid[8], guid[15] = 0xFF, 0x00
    return bytes(guid)


def encode(payload_type: int, payload: bytes, *, guid: bytes | None = None, ttl: int = 7,
           hops: int = 0) -> bytes:
    """One descriptor: the header (a new GUID unless given) and ``payload``."""
    guid = new_guid() if guid is None else guid
    if len(guid) != GUID_SIZE:
        raise ValueError(f"a GUID is {GUID_SIZE} bytes, not {len(guid)}")
    return HEADER.pack(guid, payload_type, ttl, hops, len(payload)) + payload


def encode_ping(*, ggep: bytes = b"", guid: bytes | None = None, ttl: int = 7,
                hops: int = 0) -> bytes:
    return encode(PING, ggep, guid=guid, ttl=ttl, hops=hops)


def encode_pong(guid: bytes, port: int, ip: str, files: int = 0, kbytes: int = 0, *,
                ggep: bytes = b"", ttl: int = 7, hops: int = 0) -> bytes:
    """A pong answering the ping ``guid`` (pongs are routed back by the ping's GUID)."""
    payload = _PONG.pack(port, socket.inet_aton(ip), files, kbytes) + ggep
    return encode(PONG, payload, guid=guid, ttl=ttl, hops=hops)


def encode_query(search: str | bytes, *, flags: QueryFlags = NO_FLAGS, min_speed: int = 0,
                 extensions: bytes = b"", guid: bytes | None = None, ttl: int = 7,
                 hops: int = 0) -> bytes:
    """A query. Non-empty ``flags`` fill the speed field big-endian with ``MARK`` set;
    otherwise it holds ``min_speed`` as a legacy little-endian speed."""
    if flags and min_speed:
        raise ValueError("the speed field holds either flags or a minimum speed")
    speed = ((flags | QueryFlags.MARK).to_bytes(2, "big") if flags
             else min_speed.to_bytes(2, "little"))
    criteria = search.encode() if isinstance(search, str) else search
    return encode(QUERY, speed + criteria + b"\0" + extensions, guid=guid, ttl=ttl, hops=hops)


def encode_query_hit(guid: bytes, port: int, ip: str, speed: int, results: Iterable[Result],
                     servent_id: bytes, *, trailer: bytes = b"", ttl: int = 7,
                     hops: int = 0) -> bytes:
    """A query hit answering the query ``guid``; ``trailer`` (QHD data) goes before the
    servent id as given."""
    if len(servent_id) != GUID_SIZE:
        raise ValueError(f"a servent id is {GUID_SIZE} bytes, not {len(servent_id)}")
    entries = [_RESULT.pack(r.file_index, r.size) + r.name.encode() + b"\0" + r.extensions + b"\0"
               for r in results]
    head = _HIT.pack(len(entries), port, socket.inet_aton(ip), speed)
    payload = b"".join((head, *entries, trailer, servent_id))
    return encode(QUERY_HIT, payload, guid=guid, ttl=ttl, hops=hops)


def encode_push(servent_id: bytes, file_index: int, ip: str, port: int, *, ggep: bytes = b"",
                guid: bytes | None = None, ttl: int = 7, hops: int = 0) -> bytes:
    if len(servent_id) != GUID_SIZE:
        raise ValueError(f"a servent id is {GUID_SIZE} bytes, not {len(servent_id)}")
    payload = servent_id + _PUSH.pack(file_index, socket.inet_aton(ip), port) + ggep
    return encode(PUSH, payload, guid=guid, ttl=ttl, hops=hops)


def encode_bye(code: int, message: str) -> bytes:
    """A Bye: TTL 1, hops 0, as the receiver insists (gtk-gnutella drops any other)."""
    payload = code.to_bytes(2, "little") + message.encode() + b"\0"
    return encode(BYE, payload, ttl=1)
