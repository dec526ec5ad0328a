"""One connection to another servent, as the stages see it: its handshake, then its descriptor
stream in (parser, inflater) and out (deflater).

The server stage creates and drives a ``Peer`` on the loop thread; router threads only call
``send``, ``leaf`` and ``alive``. There may be thousands, mostly idle, so it has slots and lets
go of everything but its connection when it closes (routing tables keep closed peers for a
while, as dead ends).
"""

from __future__ import annotations

import threading
from typing import Any

from seda import StageClosedError

from .addresses import Address, hostport
from .compression import Deflater, Inflater
from .parser import DescriptorParser

CONNECTING, HANDSHAKING, ESTABLISHED, CLOSED = "connecting", "handshaking", "established", "closed"

# A 4 kB window and small hash tables: ~15 kB of zlib state per compressed connection rather
# than ~270 kB, for a few per cent of ratio on small descriptors.
_WBITS, _MEM_LEVEL = 12, 4


class Peer:
    """A connection (``conn``, a ``seda.io.Connection``) and our state for it. ``dialed``: the
    address we dialed (an outgoing connection), else None."""

    __slots__ = ("bye", "conn", "deflater", "dialed", "handshake", "heard", "inflater", "leaf",
                 "listen", "local_ip", "lock", "parser", "reason", "slot", "state", "timer")

    def __init__(self, conn: Any, dialed: Address | None = None) -> None:
        self.conn = conn
        self.dialed = dialed
        self.state = CONNECTING if dialed else HANDSHAKING
        self.handshake: Any = None        # the Acceptor or Connector, until established
        self.timer: Any = None            # the handshake's deadline, until established
        self.slot = False                 # holds one of the --max-connections slots
        self.leaf = False                 # said X-Ultrapeer: False: no pings forwarded to it
        self.bye = False                  # said Bye-Packet: reads a Bye before we close
        self.heard = 0                    # the server's tick when it last sent us anything
        self.listen: Address | None = dialed   # where it accepts connections, if known
        self.local_ip = ""                # our address on this connection (for our pongs)
        self.parser: DescriptorParser | None = None
        self.inflater: Inflater | None = None
        self.deflater: Deflater | None = None
        # router threads take turns sending: one compressor, and the connection counts what
        # its producers queue without a lock of its own (seda.io.Connection)
        self.lock = threading.Lock()
        self.reason: str | None = None    # why we closed it, for the counters

    def __repr__(self) -> str:
        peer = self.conn.peer
        where = hostport(*peer[:2]) if isinstance(peer, tuple) else repr(peer)
        return f"<Peer {where} {self.state}>"

    def established(self, deflate_in: bool, deflate_out: bool, max_payload: int) -> None:
        self.state = ESTABLISHED
        self.handshake = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.parser = DescriptorParser(max_payload)
        if deflate_in:
            self.inflater = Inflater()
        if deflate_out:
            self.deflater = Deflater(wbits=_WBITS, mem_level=_MEM_LEVEL)

    def alive(self) -> bool:
        return not self.conn.closing

    def send(self, data: bytes) -> int:
        """Queue ``data`` (whole descriptors) on the connection; the bytes that go on the wire.
        Raises ``seda.SinkError`` when the connection is closed or has just been closed for
        having too much unsent (``overflow="close"``)."""
        with self.lock:                   # compress and queue in one order
            deflater = self.deflater
            if deflater is not None:
                data = deflater.compress(data)
            elif self.state == CLOSED:
                raise StageClosedError(f"{self!r} is closed")
            self.conn.enqueue(data)
        return len(data)

    def closed(self) -> None:
        """Let go of everything but the connection: a closed peer may sit in routing tables."""
        self.state = CLOSED
        if self.timer is not None:
            self.timer.cancel()
        self.handshake = self.timer = self.parser = self.inflater = None
        with self.lock:                   # a router thread may be compressing for it
            self.deflater = None
