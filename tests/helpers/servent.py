"""What the end-to-end tests talk to the router with: a Gnutella servent made of the codec
(handshake, parser, deflate) over a blocking loopback socket, and the router itself running in
this process (``running``).

Nothing here sleeps to wait: every read has a timeout, and ``join`` returns only once the
router has registered the servent (it has answered the servent's ping of TTL 1, which no one
else sees). A leaf joins as real leaves do, with its query routing table first: an ultrapeer
sends queries only to leaves that sent one.
"""

from __future__ import annotations

import contextlib
import socket
from collections import deque
from collections.abc import Iterator

import seda
from gnutella.compression import Deflater, Inflater
from gnutella.descriptors import PONG, Descriptor, encode_ping
from gnutella.handshake import Acceptor, Connector, Established, Refused, Request, Send, Settings
from gnutella.options import Options
from gnutella.parser import DescriptorParser
from gnutella.service import Service, build

from tests.helpers import qrp

WAIT = 10.0                   # the longest any test waits for anything; normally milliseconds


class Servent:
    """One end of a Gnutella connection. Make one with ``connect`` (to the router) or
    ``accept`` (the router dialed us); then ``handshake``, ``send`` and ``next``."""

    def __init__(self, sock: socket.socket, handshake: Connector | Acceptor | None,
                 leaf: bool = False) -> None:
        self.sock = sock
        self.handshaking = handshake
        self.leaf = leaf
        self.parser = DescriptorParser()
        self.inflater: Inflater | None = None
        self.deflater: Deflater | None = None
        self.received: deque[Descriptor] = deque()
        self.done: Established | Refused | None = None

    @classmethod
    def connect(cls, address: tuple, *, version: str = "0.6", leaf: bool = False,
                deflate: bool = False, listen: tuple[str, int] | None = None,
                rcvbuf: int | None = None) -> Servent:
        sock = socket.socket()
        if rcvbuf is not None:            # before connecting, so that the window stays small
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(WAIT)
        sock.connect(address)
        settings = Settings(user_agent="test-servent/1", ultrapeer=not leaf, deflate=deflate,
                            listen_ip=listen)
        return cls(sock, Connector(settings, version=version), leaf=leaf)

    @classmethod
    def shaken(cls, sock: socket.socket, *, deflate_in: bool, deflate_out: bool,
               extra: bytes = b"", leaf: bool = False) -> Servent:
        """A servent on ``sock`` whose handshake was made by hand, byte for byte (the client
        profiles of ``tests/helpers/gtk_gnutella.py`` and ``limewire.py``); ``extra``: what
        came after it."""
        servent = cls(sock, None, leaf=leaf)
        servent.inflater = Inflater() if deflate_in else None
        servent.deflater = Deflater() if deflate_out else None
        servent._feed(extra)
        return servent

    @classmethod
    def accept(cls, listener: socket.socket, *, deflate: bool = False) -> Servent:
        listener.settimeout(WAIT)
        sock, _ = listener.accept()
        sock.settimeout(WAIT)
        return cls(sock, Acceptor(Settings(user_agent="test-servent/1", deflate=deflate)))

    def handshake(self, refuse: list[tuple[str, int]] | None = None
                  ) -> Established | Refused:
        """Run the handshake to its end; as the accepting side, ``refuse`` answers 503 with
        these hosts in X-Try instead of accepting."""
        hs = self.handshaking
        assert hs is not None, "this servent's handshake was made by hand"
        events = deque(hs.start() if isinstance(hs, Connector) else [])
        while True:
            while events:
                ev = events.popleft()
                if isinstance(ev, Send):
                    self.sock.sendall(ev.data)
                elif isinstance(ev, Request):
                    decided = hs.accept() if refuse is None else hs.refuse(x_try=refuse)
                    events.extendleft(reversed(decided))
                elif isinstance(ev, Established):
                    self.inflater = Inflater() if ev.deflate_in else None
                    self.deflater = Deflater() if ev.deflate_out else None
                    self.done = ev
                    self._feed(ev.extra)
                    return ev
                else:
                    self.done = ev
                    return ev
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed during the handshake")
            events.extend(hs.receive(data))

    def join(self) -> Established:
        """Handshake, then wait until the router routes for us: it answers a ping of TTL 1
        (which goes no further) once we are its neighbour."""
        done = self.handshake()
        assert isinstance(done, Established), done
        if self.leaf:
            self.send(qrp.reset(), qrp.patch())
        ping = encode_ping(ttl=1)
        self.send(ping)
        pong = self.next()
        assert pong.payload_type == PONG and pong.guid == ping[:16], pong
        return done

    def send(self, *raws: bytes) -> None:
        data = b"".join(raws)
        self.sock.sendall(self.deflater.compress(data) if self.deflater else data)

    def next(self, timeout: float = WAIT) -> Descriptor:
        """The next descriptor the router sends us; TimeoutError if none comes in time."""
        self.sock.settimeout(timeout)
        while not self.received:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the router closed the connection")
            self._feed(data)
        return self.received.popleft()

    def _feed(self, data: bytes) -> None:
        pieces = self.inflater.decompress(data) if self.inflater else [data]
        for piece in pieces:
            self.received.extend(self.parser.feed(piece))

    def closed_by_router(self, timeout: float = WAIT) -> bool:
        """Read (and drop) until the router closes the connection: True, or False if it is
        still open after ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except ConnectionResetError:
            pass
        return True

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Servent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def running(**options) -> Iterator[tuple[seda.Runtime, Service]]:
    """The router on a free loopback port, with ``options`` (``gnutella.options.Options``);
    by default it dials no one and routes on one thread, so descriptors from one servent are
    routed in the order sent."""
    settings = {"port": 0, "outgoing": 0, "router_threads": 1, **options}
    rt = seda.Runtime()
    service = build(rt, Options(**settings))
    rt.start()
    try:
        yield rt, service
    finally:
        rt.stop(timeout=WAIT)


def handler_stats(rt: seda.Runtime, stage: str) -> dict:
    """What a stage's handler counts (``EventHandler.stats``), as the status page shows it."""
    return rt.stats()[stage]["handler"]


def handshake_lines(sock: socket.socket) -> tuple[str, list[str], bytes]:
    """One handshake step read whole from ``sock``: its first line, its header lines
    unparsed (each servent parses them its own way), and what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"closed after {data!r}"
        data += chunk
    block, rest = data.split(b"\r\n\r\n", 1)
    line, *lines = block.decode("latin-1").split("\r\n")
    return line, lines, rest
