"""The Gnutella connection handshake in both roles, as state machines without I/O (h11's shape).

"The Gnutella Protocol Specification v0.6", 2.1: the servent that connects sends
``GNUTELLA CONNECT/0.6`` and its headers; the one that accepts answers ``GNUTELLA/0.6 200 OK``
and its headers, or a refusal such as ``GNUTELLA/0.6 503 Full`` with hosts to try instead
(X-Try, X-Try-Ultrapeers); the connecting one confirms with ``GNUTELLA/0.6 200 OK`` (3-step),
and descriptors follow. A 0.4 servent sends ``GNUTELLA CONNECT/0.4\\n\\n`` and is answered
``GNUTELLA OK\\n\\n``. Deflate applies to each direction on its own: a side compresses what it
sends when the other offered ``Accept-Encoding: deflate`` and it answered
``Content-Encoding: deflate`` (the GDF's compression proposal, LimeWire and gtk-gnutella).

We are an ultrapeer (``X-Ultrapeer: True`` unless told otherwise); the peer says whether it is
a leaf. Nothing here reads the clock: a handshake that never ends is the connection layer's
timeout.

API (every call returns the events that follow, in order):
  ``Settings(user_agent, ultrapeer=True, deflate=True, listen_ip=None, headers=(),
  max_header_bytes=16384)``: our side
  ``Acceptor(settings)``: ``receive(data)``; on ``Request`` the caller decides with
  ``accept(x_try_ultrapeers=(), headers=())`` or ``refuse(code=503, reason="Full", x_try=(),
  x_try_ultrapeers=(), headers=())``
  ``Connector(settings, version="0.6")``: ``start()``, then ``receive(data)``
  Events: ``Send(data)`` to write; ``Request(peer)`` asks for a decision; ``Established(peer,
  deflate_in, deflate_out, extra)``, where ``extra`` is what arrived after the handshake (the
  start of the descriptor stream, compressed if ``deflate_in``); ``Refused(code, reason, peer,
  by_peer)``: write what was sent and close. Input that is no handshake raises ProtocolError.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from .errors import ProtocolError
from .headers import PeerInfo, block_end, format_block, parse_block

HostList = Iterable[tuple[str, int]]
HeaderList = Iterable[tuple[str, str]]

_CONNECT = re.compile(r"GNUTELLA CONNECT/(\d+)\.(\d+)")
_STATUS = re.compile(r"GNUTELLA/(\d+)\.(\d+)\s+(\d{3})\s*(.*)")
_OK_04 = "GNUTELLA OK"
_OK = "GNUTELLA/0.6 200 OK"
_MAGIC = b"GNUTELLA"       # every step starts so: anything else is refused at its first bytes


@dataclass(frozen=True)
class Settings:
    """What we say about ourselves. ``headers`` are sent in every step that carries ours
    (for instance ``("X-Query-Routing", "0.1")``)."""

    user_agent: str = "pyseda-gnutella/0.1"
    ultrapeer: bool = True
    deflate: bool = True
    listen_ip: tuple[str, int] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    max_header_bytes: int = 16 * 1024


class Send(NamedTuple):
    data: bytes


class Request(NamedTuple):
    """A peer asks to connect: call ``accept`` or ``refuse``."""

    peer: PeerInfo


class Established(NamedTuple):
    peer: PeerInfo
    deflate_in: bool       # the peer compresses what it sends us
    deflate_out: bool      # we compress what we send
    extra: bytes           # received after the handshake: the descriptor stream begins here


class Refused(NamedTuple):
    code: int
    reason: str
    peer: PeerInfo
    by_peer: bool          # the peer refused (its X-Try hosts are in ``peer``), or we did


Event = Send | Request | Established | Refused

_READING, _DECIDING, _CONFIRMING, _DONE = "reading", "deciding", "confirming", "done"


class _Handshake:
    """Reads one header block at a time, within ``max_header_bytes``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.state = _READING
        self._buf = bytearray()
        self._searched = 0

    def _take_block(self, data: bytes) -> bytes | None:
        if self.state == _DONE:
            raise RuntimeError("the handshake is over")
        buf = self._buf
        buf += data
        if buf[:len(_MAGIC)] != _MAGIC[:len(buf)]:
            # an HTTP request, a TLS hello, a port scan: said at once, not at the deadline
            raise ProtocolError(f"not a Gnutella {self._expected()}: {bytes(buf[:40])!r}")
        end = block_end(buf, max(0, self._searched - 2))
        limit = self.settings.max_header_bytes
        if end < 0 or end > limit:
            if len(buf) > limit:
                raise ProtocolError(f"handshake header block over {limit} bytes")
            self._searched = len(buf)
            return None
        block = bytes(buf[:end])
        del buf[:end]
        self._searched = 0
        return block

    def _expected(self) -> str:
        return "handshake answer"

    def _rest(self) -> bytes:
        rest = bytes(self._buf)
        self._buf.clear()
        self.state = _DONE
        return rest

    def _our_headers(self) -> list[tuple[str, str]]:
        s = self.settings
        headers = [("User-Agent", s.user_agent), ("X-Ultrapeer", str(s.ultrapeer))]
        if s.listen_ip is not None:
            headers.append(("Listen-IP", f"{s.listen_ip[0]}:{s.listen_ip[1]}"))
        if s.deflate:
            headers.append(("Accept-Encoding", "deflate"))
        return headers


class Acceptor(_Handshake):
    """Our side of a connection a peer opened."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings or Settings())
        self.peer: PeerInfo | None = None
        self._deflate_out = False

    def _expected(self) -> str:
        return "connection request" if self.state == _READING else "handshake answer"

    def receive(self, data: bytes) -> list[Event]:
        if self.state == _DECIDING:
            self._buf += data           # early bytes wait for the decision, within the limit
            if len(self._buf) > self.settings.max_header_bytes:
                raise ProtocolError("peer sent too much before the handshake answer")
            return []
        block = self._take_block(data)
        if block is None:
            return []
        line, headers = parse_block(block)
        if self.state == _READING:
            self.peer = PeerInfo(_connect_version(line), headers)
            self.state = _DECIDING
            return [Request(self.peer)]
        assert self.peer is not None
        self.peer = PeerInfo(self.peer.version, {**self.peer.headers, **headers})
        code, reason = _status(line)
        if code != 200:
            self.state = _DONE
            return [Refused(code, reason, self.peer, by_peer=True)]
        encoding = _content_encoding(self.peer)
        return [Established(self.peer, encoding, self._deflate_out, self._rest())]

    def accept(self, *, x_try_ultrapeers: HostList = (), headers: HeaderList = ()) -> list[Event]:
        """Answer 200 (or ``GNUTELLA OK`` to 0.4, which completes the handshake at once)."""
        peer = self._deciding()
        if peer.version == "0.4":
            return [Send(b"GNUTELLA OK\n\n"), Established(peer, False, False, self._rest())]
        ours = self._our_headers()
        self._deflate_out = self.settings.deflate and peer.accepts_deflate
        if self._deflate_out:
            ours.append(("Content-Encoding", "deflate"))
        ours += _try_headers((), x_try_ultrapeers)
        self.state = _CONFIRMING
        return [Send(format_block(_OK, [*ours, *self.settings.headers, *headers])),
                *self.receive(b"")]

    def refuse(self, code: int = 503, reason: str = "Full", *, x_try: HostList = (),
               x_try_ultrapeers: HostList = (), headers: HeaderList = ()) -> list[Event]:
        """Answer with a refusal and hosts to try instead; 0.4 has no refusal, only a close."""
        peer = self._deciding()
        self.state = _DONE
        refused = Refused(code, reason, peer, by_peer=False)
        if peer.version == "0.4":
            return [refused]
        ours = [*self._our_headers(), *_try_headers(x_try, x_try_ultrapeers),
                *self.settings.headers, *headers]
        return [Send(format_block(f"GNUTELLA/0.6 {code} {reason}", ours)), refused]

    def _deciding(self) -> PeerInfo:
        if self.state != _DECIDING or self.peer is None:
            raise RuntimeError(f"no connection request to answer (state: {self.state})")
        return self.peer


class Connector(_Handshake):
    """Our side of a connection we open. ``version="0.4"`` speaks the old one-line exchange."""

    def __init__(self, settings: Settings | None = None, *, version: str = "0.6") -> None:
        super().__init__(settings or Settings())
        if version not in ("0.4", "0.6"):
            raise ValueError(f"Gnutella handshake version 0.4 or 0.6, not {version!r}")
        self.version = version

    def start(self) -> list[Event]:
        if self.version == "0.4":
            return [Send(b"GNUTELLA CONNECT/0.4\n\n")]
        block = format_block("GNUTELLA CONNECT/0.6", [*self._our_headers(),
                                                      *self.settings.headers])
        return [Send(block)]

    def receive(self, data: bytes) -> list[Event]:
        block = self._take_block(data)
        if block is None:
            return []
        line, headers = parse_block(block)
        peer = PeerInfo(self.version, headers)
        if self.version == "0.4":
            if line != _OK_04:
                raise ProtocolError(f"0.4 handshake answered {line[:80]!r}")
            return [Established(peer, False, False, self._rest())]
        code, reason = _status(line)
        if code != 200:
            self.state = _DONE
            return [Refused(code, reason, peer, by_peer=True)]
        deflate_in = _content_encoding(peer)
        deflate_out = self.settings.deflate and peer.accepts_deflate
        ours = [("Content-Encoding", "deflate")] if deflate_out else []
        return [Send(format_block(_OK, ours)),
                Established(peer, deflate_in, deflate_out, self._rest())]


def _connect_version(line: str) -> str:
    """ "0.6" for ``GNUTELLA CONNECT/0.6`` and later versions, "0.4" for older ones."""
    found = _CONNECT.fullmatch(line)
    if not found:
        raise ProtocolError(f"not a Gnutella connection request: {line[:80]!r}")
    return "0.6" if (int(found[1]), int(found[2])) >= (0, 6) else "0.4"


def _status(line: str) -> tuple[int, str]:
    found = _STATUS.fullmatch(line)
    if not found:
        raise ProtocolError(f"not a Gnutella handshake answer: {line[:80]!r}")
    return int(found[3]), found[4]


def _content_encoding(peer: PeerInfo) -> bool:
    """Whether the peer's stream is deflated; an encoding we cannot read is refused."""
    encoding = peer.content_encoding
    if encoding not in (None, "deflate"):
        raise ProtocolError(f"unsupported Content-Encoding {encoding!r}")
    return encoding == "deflate"


def _try_headers(x_try: HostList, x_try_ultrapeers: HostList) -> list[tuple[str, str]]:
    headers = []
    for name, hosts in (("X-Try", x_try), ("X-Try-Ultrapeers", x_try_ultrapeers)):
        listed = ",".join(f"{host}:{port}" for host, port in hosts)
        if listed:
            headers.append((name, listed))
    return headers
