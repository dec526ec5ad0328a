"""Query routing tables as leaves send them to their ultrapeer: the RESET and PATCH route table
updates (payload type 0x30) of LimeWire's "Query Routing for the Gnutella Network" v0.1,
written out field by field so that tests send what gtk-gnutella and LimeWire send.

RESET: variant 0, the table length (32 bits, little-endian), the infinity value.
PATCH: variant 1, the sequence number and count (a table goes in up to 255 pieces), the
compressor (1: zlib), the bits per entry (4 or 8; gtk-gnutella also 1), then the piece of the
(compressed) patch: one signed delta per slot from the previous table, all slots "infinity"
after a RESET. Both travel with TTL 1 and hops 0: they are for the ultrapeer alone.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from gnutella.descriptors import ROUTE_TABLE_UPDATE, encode

SLOTS = 65536                 # gtk-gnutella's smallest table (qrp.c, MIN_TABLE_BITS 16)


def reset(slots: int = SLOTS, infinity: int = 7, guid: bytes | None = None) -> bytes:
    return encode(ROUTE_TABLE_UPDATE, b"\x00" + slots.to_bytes(4, "little") + bytes([infinity]),
                  guid=guid, ttl=1)


def patch(present: Iterable[int] = (), slots: int = SLOTS, infinity: int = 7,
          guid: bytes | None = None) -> bytes:
    """One zlib-compressed 4-bit PATCH, sequence 1 of 1, that marks the ``present`` slots one
    hop away (delta 1 - infinity) and leaves the others as they were."""
    delta = (1 - infinity) & 0x0F
    nibbles = bytearray(slots // 2)
    for slot in present:
        nibbles[slot // 2] |= delta << 4 if slot % 2 == 0 else delta
    body = b"\x01" + b"\x01\x01" + b"\x01" + b"\x04" + zlib.compress(bytes(nibbles))
    return encode(ROUTE_TABLE_UPDATE, body, guid=guid, ttl=1)
