"""Deflate on a Gnutella connection, without I/O: one endless zlib stream per direction, from
the first byte after the handshake (negotiated in ``handshake.py``, per the GDF's compression
proposal as LimeWire and gtk-gnutella implement it).

Each write is flushed with ``Z_SYNC_FLUSH`` so that the peer can decode every descriptor sent so
far without waiting for more; compress a whole batch of descriptors in one call, since each
flush costs a few bytes. Reading is bounded: a few bytes of deflate can stand for megabytes, so
inflated data comes out in pieces of at most ``piece`` bytes, each produced only when the caller
asks for it (feed each to the ``DescriptorParser`` before taking the next).

API:
  ``Deflater(level=zlib.Z_DEFAULT_COMPRESSION, wbits=15, mem_level=8).compress(data) -> bytes``:
  a smaller window and memory level cost some ratio and save most of zlib's ~270 kB per
  connection (any peer's inflater reads a stream with a smaller window)
  ``Inflater(piece=65536).decompress(data) -> Iterator[bytes]``: iterate it to the end; a
  corrupt stream raises ProtocolError
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from .errors import ProtocolError


class Deflater:
    """What we send on a connection whose peer accepts deflate."""

    def __init__(self, level: int = zlib.Z_DEFAULT_COMPRESSION, *, wbits: int = 15,
                 mem_level: int = 8) -> None:
        self._z = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level)

    def compress(self, data: bytes) -> bytes:
        z = self._z
        return z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)


class Inflater:
    """What we receive on a connection whose peer sends deflate."""

    def __init__(self, piece: int = 65536) -> None:
        self._z = zlib.decompressobj()
        self.piece = piece

    def decompress(self, data: bytes) -> Iterator[bytes]:
        z, piece = self._z, self.piece
        try:
            out = z.decompress(data, piece)
            while out:
                yield out
                # A full piece may leave output inside zlib even when all input was taken.
                if not z.unconsumed_tail and len(out) < piece:
                    break
                out = z.decompress(z.unconsumed_tail, piece)
        except zlib.error as e:
            raise ProtocolError(f"corrupt deflate stream ({e})") from None
        if z.eof:
            raise ProtocolError("the peer ended its deflate stream, which never ends")
