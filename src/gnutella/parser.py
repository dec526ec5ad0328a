"""One connection's byte stream cut into descriptors, without I/O (h11's shape).

Gnutella frames every descriptor by the payload length in its 23-byte header ("The Gnutella
Protocol Specification v0.6", 2.2.1), so a stream is parsed by reading headers and counting
bytes. The parser checks only what framing and routing need: the length against a limit (a
lying length must not make us buffer without bound) and that each known payload is long enough
for its fixed fields. Payload fields are decoded later, if ever, by the descriptor itself.

API:
  ``DescriptorParser(max_payload=65536)``
  ``parser.feed(data) -> list[Descriptor]``: the descriptors completed by ``data``, in order;
  a partial one is kept for the next call. Raises ``ProtocolError`` (with the descriptors that
  came before the fault in ``err.descriptors``); the connection is then beyond repair and every
  later ``feed`` raises too.
  ``parser.buffered``: bytes held for an incomplete descriptor
"""

from __future__ import annotations

from .descriptors import CLASSES, HEADER, HEADER_SIZE, Descriptor, UnknownDescriptor
from .errors import ProtocolError

#: The draft suggests dropping descriptors over 4 kB; servents send QRP patches and query hits
#: of up to 64 kB, and so does LimeWire's limit.
DEFAULT_MAX_PAYLOAD = 65536

_KINDS: dict[int, tuple[type[Descriptor], int]] = {
    t: (cls, cls.min_payload) for t, cls in CLASSES.items()}
_UNKNOWN = (UnknownDescriptor, 0)


class DescriptorParser:
    """Feed it what a connection received; it returns whole descriptors."""

    __slots__ = ("_failure", "_need", "_pending", "_pending_size", "max_payload")   # one per peer

    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        self.max_payload = max_payload
        self._pending: list[bytes] = []   # received bytes not yet parsed, in order
        self._pending_size = 0
        self._need = HEADER_SIZE          # bytes needed before parsing can make progress
        self._failure: str | None = None

    @property
    def buffered(self) -> int:
        return self._pending_size

    def feed(self, data: bytes | bytearray | memoryview) -> list[Descriptor]:
        if self._failure is not None:
            raise ProtocolError(self._failure)
        if type(data) is not bytes:
            data = bytes(data)            # the caller may reuse its buffer
        if self._pending_size + len(data) < self._need:
            # Joining only once enough has come keeps a byte-by-byte sender linear.
            if data:
                self._pending.append(data)
                self._pending_size += len(data)
            return []
        if self._pending:
            self._pending.append(data)
            data = b"".join(self._pending)
            self._pending.clear()
        return self._parse(data)

    def _parse(self, buf: bytes) -> list[Descriptor]:
        out: list[Descriptor] = []
        append, unpack, kinds, limit = out.append, HEADER.unpack_from, _KINDS, self.max_payload
        pos, n = 0, len(buf)
        need = HEADER_SIZE
        while n - pos >= HEADER_SIZE:
            guid, ptype, ttl, hops, length = unpack(buf, pos)
            cls, minimum = kinds.get(ptype, _UNKNOWN)
            if length > limit or length < minimum:
                self._fail(ptype, length, cls, minimum, out)
            end = pos + HEADER_SIZE + length
            if end > n:
                need = HEADER_SIZE + length
                break
            append(cls(buf[pos:end], guid, ttl, hops))
            pos = end
        self._need = need
        if pos < n:
            self._pending.append(buf[pos:] if pos else buf)
        self._pending_size = n - pos
        return out

    def _fail(self, ptype: int, length: int, cls: type[Descriptor], minimum: int,
              parsed: list[Descriptor]) -> None:
        if length > self.max_payload:
            message = (f"descriptor of type 0x{ptype:02x} claims a {length}-byte payload, over"
                       f" the limit of {self.max_payload} bytes")
        else:
            message = (f"{cls.__name__} payload of {length} bytes is shorter than the"
                       f" {minimum} bytes of its fixed fields")
        self._failure = message
        self._pending.clear()
        self._pending_size = 0
        raise ProtocolError(message, parsed)
