"""Extensions inside descriptor payloads: GGEP blocks and the HUGE/GGEP/XML extension areas.

A router forwards extensions byte for byte and never needs to read them; these functions are for
the parts of the service that do (the host cache reading a pong's GGEP, tests, our own
descriptors). Specs: "GGEP, the Gnutella Generic Extension Protocol" v0.51, summarised in
section 2.3 of "The Gnutella Protocol Specification v0.6"; "HUGE" v0.94 (Mohr), section 3 (the
General Extension Mechanism), for ``urn:`` items and the 0x1C between items.

API:
  ``parse_ggep(data, offset=0) -> (list[GGEPExtension], end)``: the GGEP block at ``offset``
  ``encode_ggep(extensions) -> bytes``: a GGEP block, each extension's flags and data as given
  ``GGEPExtension(id, data, cobs=False, deflate=False)``; ``.value() -> bytes`` decoded
  ``split_extensions(area) -> list[bytes]``: the items of an extension area, GGEP blocks whole
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import NamedTuple

from .errors import ProtocolError

GGEP_MAGIC = 0xC3            # first byte of every GGEP block
EXTENSION_SEPARATOR = 0x1C   # between items of an extension area (HUGE 0.94, section 3)

# The flags byte of an extension header (GGEP 0.51, "Extension Header")
_LAST = 0x80                 # the last extension of the block
_COBS = 0x40                 # the data is COBS-encoded (so that it holds no NUL)
_DEFLATE = 0x20              # the data is deflated (zlib)
_RESERVED = 0x10             # must be zero
_ID_LENGTH = 0x0F            # 1..15 bytes of ID follow
# The bytes of a data length: 6 value bits each, most significant first, 1 to 3 bytes
_MORE = 0x80                 # another length byte follows
_FINAL = 0x40                # the last length byte
_VALUE = 0x3F
_MAX_DATA = (1 << 18) - 1    # what three length bytes hold


class GGEPExtension(NamedTuple):
    """One extension of a GGEP block. ``data`` is as on the wire: still COBS-encoded and
    deflated when the flags say so; ``value()`` undoes both."""

    id: str
    data: bytes
    cobs: bool = False
    deflate: bool = False

    def value(self, limit: int = 65536) -> bytes:
        """The data with COBS and deflate undone, refusing more than ``limit`` bytes inflated
        (a few bytes of deflate can claim megabytes)."""
        data = _cobs_decode(self.data) if self.cobs else self.data
        if not self.deflate:
            return data
        inflater = zlib.decompressobj()
        try:
            out = inflater.decompress(data, limit)
        except zlib.error as e:
            raise ProtocolError(f"GGEP extension {self.id!r}: bad deflate data ({e})") from None
        if inflater.unconsumed_tail:
            raise ProtocolError(f"GGEP extension {self.id!r} inflates past {limit} bytes")
        return out


def parse_ggep(data: bytes, offset: int = 0) -> tuple[list[GGEPExtension], int]:
    """The extensions of the GGEP block that starts at ``data[offset]``, and the offset just
    past the block (where a HUGE item or the end of the payload may follow)."""
    n = len(data)
    if offset >= n or data[offset] != GGEP_MAGIC:
        raise ProtocolError(f"no GGEP block at offset {offset} (it starts with 0xC3)")
    pos = offset + 1
    extensions: list[GGEPExtension] = []
    while True:
        if pos >= n:
            raise ProtocolError("GGEP block ends before its last extension")
        flags = data[pos]
        id_length = flags & _ID_LENGTH
        if flags & _RESERVED or not id_length:
            raise ProtocolError(f"GGEP extension header 0x{flags:02x} is invalid")
        ident = data[pos + 1:pos + 1 + id_length]
        pos += 1 + id_length
        if len(ident) < id_length or 0 in ident:
            raise ProtocolError("GGEP extension ID is cut short or holds a NUL")
        length = 0
        for _ in range(3):
            if pos >= n:
                raise ProtocolError("GGEP block ends inside a data length")
            b = data[pos]
            pos += 1
            if bool(b & _MORE) == bool(b & _FINAL):
                raise ProtocolError(f"GGEP data length byte 0x{b:02x} is invalid")
            length = length << 6 | (b & _VALUE)
            if b & _FINAL:
                break
        else:
            raise ProtocolError("GGEP data length runs past three bytes")
        if pos + length > n:
            raise ProtocolError(f"GGEP extension {ident!r} claims {length} bytes past the end")
        extensions.append(GGEPExtension(ident.decode("latin-1"), bytes(data[pos:pos + length]),
                                        bool(flags & _COBS), bool(flags & _DEFLATE)))
        pos += length
        if flags & _LAST:
            return extensions, pos


def encode_ggep(extensions: Iterable[GGEPExtension]) -> bytes:
    """A GGEP block holding ``extensions`` in order, their data written as given (encode with
    COBS or deflate first and set the flag to match)."""
    items = list(extensions)
    if not items:
        raise ValueError("a GGEP block holds at least one extension")
    out = bytearray([GGEP_MAGIC])
    for k, ext in enumerate(items):
        ident = ext.id.encode("latin-1")
        if not 1 <= len(ident) <= _ID_LENGTH:
            raise ValueError(f"GGEP extension ID {ext.id!r} must be 1 to 15 bytes")
        if len(ext.data) > _MAX_DATA:
            raise ValueError(f"GGEP extension {ext.id!r} data over {_MAX_DATA} bytes")
        flags = len(ident) | (_LAST if k == len(items) - 1 else 0)
        flags |= (_COBS if ext.cobs else 0) | (_DEFLATE if ext.deflate else 0)
        out.append(flags)
        out += ident
        out += _encode_length(len(ext.data))
        out += ext.data
    return bytes(out)


def split_extensions(area: bytes) -> list[bytes]:
    """The items of an extension area (a query's bytes after its search criteria, a query hit
    result's bytes between its two NULs): ``urn:`` items, XML and other text separated by 0x1C,
    and GGEP blocks taken whole, since their binary data may hold 0x1C. A NUL ends the area."""
    items: list[bytes] = []
    pos, n = 0, len(area)
    while pos < n:
        first = area[pos]
        if first == 0:
            break
        if first == GGEP_MAGIC:
            end = parse_ggep(area, pos)[1]
        else:
            end = n
            for stop in (EXTENSION_SEPARATOR, 0):
                found = area.find(stop, pos)
                if 0 <= found < end:
                    end = found
        if end > pos:
            items.append(area[pos:end])
        pos = end + 1 if end < n and area[end] == EXTENSION_SEPARATOR else end
    return items


def _encode_length(length: int) -> bytes:
    """1 to 3 length bytes, 6 bits each, the last one marked (GGEP 0.51, "Data Length")."""
    groups = [length & _VALUE]
    length >>= 6
    while length:
        groups.append(length & _VALUE)
        length >>= 6
    groups.reverse()
    return bytes([g | _MORE for g in groups[:-1]] + [groups[-1] | _FINAL])


def _cobs_decode(data: bytes) -> bytes:
    """Consistent Overhead Byte Stuffing undone (GGEP 0.51, "Encoding"): each code byte ``c``
    is followed by ``c - 1`` data bytes and stands for a NUL after them, unless ``c`` is 0xFF
    or the data ends there."""
    out = bytearray()
    pos, n = 0, len(data)
    while pos < n:
        code = data[pos]
        end = pos + code
        if not code or end > n:
            raise ProtocolError("GGEP data is not valid COBS")
        out += data[pos + 1:end]
        pos = end
        if code < 0xFF and pos < n:
            out.append(0)
    return bytes(out)
