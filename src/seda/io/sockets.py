"""Asynchronous sockets (thesis 5.6.1, Fig. 33): listen, read and write stages on the shared loop.

The owner of a connection names a sink; ``Connected``, ``Packet``, ``WriteDone``, ``Closed`` and
``Failed`` events arrive there. A ``Connection`` is itself a sink for outgoing data. Everything
that touches a socket runs on the event-loop thread, so there are no locks here: other threads
reach a connection through the write stage's queue.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from .._signals import Stopping
from .._sink import RejectedError, SinkError, StageClosedError
from .._stage import EventHandler
from ..control import TokenBucket
from .bind import bind_socket
from .events import Closed, Connected, Failed, FileSegment, Packet, Send, WriteDone
from .tls import TLSSession

if TYPE_CHECKING:
    from .._abc import DoneSink
    from .._runtime import Runtime
    from .._sink import Sink
    from .._stage import StageContext

log = logging.getLogger("seda")

READ_SIZE = 65536            # one recv per readiness, at most this much
SEND_SIZE = 262144           # chunks are sent once they add up to this much
ACCEPT_BATCH = 256           # connections accepted per readiness; more wait for the next round
MAX_PENDING = 4 * 2**20      # default per-connection outgoing threshold, bytes (thesis 6.2.2)
EMFILE_PAUSE = 0.1           # seconds a listener rests after running out of descriptors
LINGER = 2.0                 # seconds a closing connection keeps draining the peer's input

_CLOSE = object()            # queued by Connection.close(): close once what is before it is sent
_BYTES = (bytes, bytearray, memoryview)
#: Data in memory, as a connection takes it and hands it to one send.
_Chunk: TypeAlias = "bytes | bytearray | memoryview"


def _joined(chunks: list[_Chunk]) -> bytes:
    """One send's worth of chunks as one buffer."""
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # type: ignore[return-value]


def _size(item: Any) -> int:
    """What an item weighs in memory: a file segment is on disk, and weighs nothing."""
    if isinstance(item, _BYTES):
        return len(item)
    if isinstance(item, Send):
        return len(item.data)
    if isinstance(item, FileSegment):
        return 0
    raise TypeError(f"a connection sends bytes, memoryview, Send or FileSegment, not {item!r}")


class Connection:
    """One TCP connection; ``enqueue`` data to send it, from any thread.

    The bytes waiting in memory (``pending``) are counted in two halves that no two threads
    write: ``queued``, added by the producers, and ``written``, what the write stage has handed
    to the kernel (net of file pieces it read into memory), on the loop thread. One shared
    count would lose updates when a producer thread and the loop thread change it at once (a
    ``+=`` is a read and a write), and drift until the bound closed a connection that was
    keeping up, or never closed one that was not. Producers that enqueue to one connection from
    several threads at once take turns (a lock of their own), since ``queued`` is theirs."""

    __slots__ = (
        "_buffer", "_completions", "_drained", "_layer", "_reader", "_writing", "closed",
        "closing", "connected", "data", "fd", "half_close", "linger", "lingering", "max_pending",
        "out", "overflow", "owner", "paused", "peer", "queued", "scheduled", "sock", "tls",
        "unsent", "written",
    )

    def __init__(self, layer: SocketLayer, sock: socket.socket, owner: Sink, peer: Any,
                 max_pending: int | None = MAX_PENDING, overflow: str = "reject") -> None:
        if overflow not in ("reject", "close"):
            raise ValueError(f"overflow is 'reject' or 'close', not {overflow!r}")
        self._layer = layer
        self.sock, self.fd, self.owner, self.peer = sock, sock.fileno(), owner, peer
        self.out: deque[Any] = deque()     # items waiting for the write stage
        self.scheduled = False             # queued at the write stage
        self.queued = 0                    # bytes enqueued (producers)
        self.written = 0                   # bytes of those the kernel took (loop thread)
        self.max_pending, self.overflow = max_pending, overflow
        # (callback, low water): when_drained
        self._drained: tuple[Callable[[], None], int] | None = None
        self.closing = False               # close() called: no more enqueues
        self.closed = False
        self.connected = False
        self.tls: TLSSession | None = None
        self.half_close = False            # on EOF: tell the owner, keep writing (see listen)
        self.linger = True                 # close(): drain the peer's input first (_linger)
        self.lingering = False             # sent everything, draining input before closing
        self.paused = False                # pause_reading: input may wait unread (see _end)
        self.data: Any = None              # for the owner: per-connection state of its own
        self.unsent = False                # closed with data still to send (the peer left)
        self._buffer: Any = None           # what a partial send left: memoryview or FileSegment
        self._writing = False              # watching for writability
        # the selector callback that queues us for reading
        self._reader: Callable[[], None] | None = None
        # (sink, tag) of Send items taken, not yet confirmed
        self._completions: list[tuple[DoneSink, Any]] = []

    def __repr__(self) -> str:
        return f"<Connection {self.peer!r}{' closed' if self.closed else ''}>"

    # -- the sink side, any thread -----------------------------------------------------------

    def enqueue(self, item: Any) -> None:
        """Send ``item`` (bytes, memoryview, ``Send`` or ``FileSegment``) after what is queued.
        Once more than ``max_pending`` bytes wait in memory (files being sent weigh nothing),
        further enqueues are refused (``overflow="reject"``, RejectedError) or the connection
        dropped (``overflow="close"``, StageClosedError); an item is never refused for its own
        size. ``max_pending=None``: the owner bounds what it queues (see ``when_drained``)."""
        if self.closing:
            raise StageClosedError(f"{self!r} is closed")
        size = len(item) if type(item) is bytes else _size(item)
        if self.max_pending is not None and self.queued - self.written > self.max_pending:
            self._overflow()
        self.queued += size
        self.out.append(item)
        if not self.scheduled:
            self.scheduled = True
            self._layer.write_put(self)

    def send(self, data: bytes) -> bool:
        """``enqueue(data)``, from the loop thread: with nothing queued before it, the usual
        case of an answer on a keep-alive connection, ``data`` goes to the kernel at once, as
        the write stage would send it after this round, without the hop. True if the kernel
        took all of it (nothing is ``pending`` then). Refused as ``enqueue`` refuses (a closed
        connection: StageClosedError)."""
        if self.out or self._buffer is not None or not self.connected or self.closing:
            self.enqueue(data)
            return False
        self.queued += len(data)
        self.written += len(data)              # (less what the kernel does not take: _keep)
        try:
            if self.tls is not None:
                return self._send(data)
            try:                               # (_send inlined: one call less per answer)
                n = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                n = 0
            return n == len(data) or self._keep(data, n)
        except OSError as exc:
            self._teardown(exc)
            return False

    def enqueue_many(self, items: Iterable[Any]) -> None:
        """All of ``items`` or none of them."""
        items = list(items)
        if self.closing:
            raise StageClosedError(f"{self!r} is closed")
        if self.max_pending is not None and self.queued - self.written > self.max_pending:
            self._overflow()
        self.queued += sum(map(_size, items))
        self.out.extend(items)
        self._schedule()

    def _overflow(self) -> None:
        if self.overflow == "close":
            self.abort(RejectedError("peer too slow: outgoing queue over its threshold"))
            raise StageClosedError(f"{self!r} closed: outgoing queue over its threshold")
        raise RejectedError(f"{self!r}: outgoing queue over its threshold")

    def enqueue_lossy(self, item: Any) -> bool:
        try:
            self.enqueue(item)
        except SinkError:
            return False
        return True

    def __len__(self) -> int:
        return len(self.out)

    @property
    def pending(self) -> int:
        """Bytes in memory not yet taken by the kernel (files being sent weigh nothing)."""
        return self.queued - self.written

    def when_drained(self, callback: Callable[[], None], low: int = 0) -> None:
        """Call ``callback()`` on the loop thread once no more than ``low`` bytes wait in memory
        (once; at once if that is so already). Loop thread only: how an owner that bounds its
        own output (``max_pending=None``) learns it may send more."""
        if self.pending <= low:
            callback()
        else:
            self._drained = (callback, low)

    def close(self, linger: bool = True) -> None:
        """Close once everything enqueued so far has been sent; then drain what the peer still
        sends until it closes too (``_linger``), unless ``linger`` is False: for an owner that
        knows the peer sends nothing more (one that did all the same is lingered for)."""
        if not self.closing:
            self.closing = True
            self.linger = linger
            self.out.append(_CLOSE)
            if not self.scheduled:
                self.scheduled = True
                self._layer.write_put(self)

    def finish(self, linger: bool = True) -> bool:
        """``close(linger)``, from the loop thread: with nothing queued (all was ``send``-ed),
        the usual case after a last answer, the close begins now, as the write stage would
        begin it after this round, without the hop. True if the connection closed there and
        then: the owner, told so, gets no ``Closed`` event for it (a connection per request
        saves an event's round); else the event comes once it has closed."""
        if self.out or self._buffer is not None or not self.connected or self.closing \
                or self.tls is not None:       # (TLS: its closing bytes go the write stage's way)
            self.close(linger)
            return False
        self.closing = True
        self.linger = linger
        return self._end(tell=False)

    def abort(self, error: BaseException | None = None) -> None:
        """Close now, dropping whatever is still queued."""
        self.closing = True
        self._layer.call(self._teardown, error)

    # -- read stage, loop thread ---------------------------------------------------------------

    def pause_reading(self) -> None:
        """Stop reading until ``resume_reading`` (loop thread): the owner is behind."""
        if not self.closed and self._reader is not None:
            self._layer.loop.remove_reader(self.fd)
            self.paused = True

    def resume_reading(self) -> None:
        if not self.closed and self._reader is not None:
            self._layer.loop.add_reader(self.fd, self._reader, edge=True)
            self.paused = False

    def _receive(self) -> bytes | None:
        """Read once: the bytes for the owner (``b""`` once a half-closing peer has stopped
        sending), or None if there is nothing for it. The read stage hands them over."""
        if self.closed:
            return None
        try:
            data = self.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:
            self._teardown(exc)
            return None
        if len(data) == READ_SIZE:
            # The reader is edge-triggered: told of new data, not of data left. One read per
            # turn keeps connections fair, so ask to be told again of what this one left.
            self._layer.loop.rearm(self.fd)
        if self.lingering:                     # input after our last byte: discard it
            if not data:
                self._teardown()
            return None
        if not data:
            if not self.half_close:
                self._teardown()
                return None
            self.pause_reading()               # the peer is done sending; we may not be
            self._reader = None
            return data
        if self.tls is not None:
            try:
                data = self._tls_receive(data)
            except (OSError, ssl.SSLError) as exc:
                self._teardown(exc)
                return None
            if not data:
                return None
        return data

    def _tls_receive(self, data: bytes) -> bytes:
        """Decrypt; during the handshake, answer it and announce the connection when done."""
        # _receive calls this only with self.tls set; an assert would cost every TLS packet
        tls: TLSSession = self.tls  # type: ignore[assignment]
        plain = tls.receive(data)
        if tls.outgoing():
            self._schedule()
        if tls.handshaken and not self.connected:
            self.connected = True
            self._schedule()                # data enqueued meanwhile can go now
            try:
                self.owner.enqueue(Connected(self))
            except SinkError as exc:        # the owner sheds load: this connection goes
                self._teardown(exc)
                return b""
        return plain

    # -- write stage, loop thread --------------------------------------------------------------

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            self._layer.write_put(self)

    def _flush(self) -> None:
        """Hand queued data to the kernel, one send for everything queued where possible; tell
        a waiting owner once it has drained."""
        self.scheduled = False
        if self.closed:
            return
        try:
            if self._buffer is not None and not self._send_buffer():
                return                      # the socket still cannot take what it had
            if self.tls is not None and self.tls.outgoing() and not self._send(b""):
                return                      # handshake or alert bytes still on their way
            if not self.connected:
                return
            chunks: list[_Chunk]
            out, chunks, size = self.out, [], 0
            while out:
                item = out.popleft()
                if type(item) is bytes:           # the usual: straight to the next send
                    pass
                elif item is _CLOSE:
                    if chunks and not self._send(_joined(chunks)):
                        out.appendleft(item)
                        return
                    self._end()
                    return
                elif isinstance(item, FileSegment):
                    if chunks and not self._send(_joined(chunks)):
                        out.appendleft(item)
                        return
                    chunks, size = [], 0
                    if self.tls is not None:      # no sendfile through TLS: piece by piece
                        segment, item = item, self._read_piece(item)
                        if len(item) == segment.count and segment.done is not None:
                            self._completions.append((segment.done, segment.tag))
                    else:
                        if item.done is not None:
                            self._completions.append((item.done, item.tag))
                        self._buffer = FileSegment(item.fd, item.offset, item.count)
                        if not self._send_buffer():
                            return
                        continue
                elif isinstance(item, Send):
                    self._completions.append((item.done, item.tag))
                    item = item.data
                self.written += len(item)
                chunks.append(item)
                size += len(item)
                if size >= SEND_SIZE:
                    if not self._send(_joined(chunks)):
                        return
                    chunks, size = [], 0
            if chunks and not self._send(_joined(chunks)):
                return
            if self._completions:
                self._confirm()
        except OSError as exc:
            self._teardown(exc)
        finally:
            drained = self._drained
            if drained is not None and self.pending <= drained[1]:
                self._drained = None
                drained[0]()

    def _read_piece(self, seg: FileSegment) -> bytes:
        """The next piece of a file segment (now in memory, so counted in ``pending``), leaving
        the rest, and its completion, at the head of the queue."""
        piece = os.pread(seg.fd, min(seg.count, READ_SIZE), seg.offset)
        if not piece:
            raise OSError(errno.EIO, "file ended before the segment did")
        self.written -= len(piece)
        if len(piece) < seg.count:
            self.out.appendleft(FileSegment(seg.fd, seg.offset + len(piece),
                                            seg.count - len(piece), seg.done, seg.tag))
        return piece

    def _send(self, data: bytes) -> bool:
        """Send ``data``; True if all went, else the rest waits for writability."""
        if self.tls is not None:
            data = self.tls.send(data)
        try:
            n = self.sock.send(data) if data else 0
        except (BlockingIOError, InterruptedError):
            n = 0
        return n == len(data) or self._keep(data, n)

    def _keep(self, data: bytes | memoryview, n: int) -> bool:
        """The kernel took ``n`` bytes of ``data``: the rest waits for writability. False."""
        self._buffer = memoryview(data)[n:]
        self.written -= len(data) - n
        self._watch_writes(True)
        return False

    def _send_buffer(self) -> bool:
        """Continue a partial send; True once nothing is left over."""
        buf = self._buffer
        try:
            if isinstance(buf, FileSegment):
                while buf.count:
                    n = os.sendfile(self.fd, buf.fd, buf.offset, buf.count)
                    if n == 0:
                        raise OSError(errno.EIO, "file ended before the segment did")
                    buf.offset += n
                    buf.count -= n
            else:
                n = self.sock.send(buf)
                self.written += n
                if n < len(buf):
                    self._buffer = buf[n:]
                    self._watch_writes(True)
                    return False
        except (BlockingIOError, InterruptedError):
            self._watch_writes(True)
            return False
        self._buffer = None
        self._watch_writes(False)
        return True

    def _end(self, tell: bool = True) -> bool:
        """All is sent: close, lingering (``_linger``) unless the owner said the peer sends
        nothing more (``close(linger=False)``) and it has indeed sent nothing left unread: a
        peer that said it was done and sent more all the same would have the close turned
        into a reset. Input waits unread while reading is paused (else it is read as it comes,
        but for what came since this round's reads), so only then is it looked for: a system
        call, and an exception when there is none, that a connection per request would
        otherwise pay each time. True if it closed now (with ``tell``, its owner is told)."""
        self._confirm()
        if self.linger or (self.paused and self._unread()):
            self._linger()
            return False
        self._teardown(tell=tell)
        return True

    def _unread(self) -> bool:
        """Whether the peer's input holds bytes not read yet (a look: nothing is taken)."""
        try:
            return bool(self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except OSError:                        # (BlockingIOError: there is nothing)
            return False

    def _linger(self) -> None:
        """Close without losing what was just sent. Closing a socket whose peer's input is
        still unread makes the kernel send a reset, which can destroy our last response; so
        send FIN, drain the peer's input until it closes or LINGER passes, then close."""
        if self._reader is None:               # the peer has already finished sending
            self._teardown()
            return
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._teardown()
            return
        self.lingering = True
        self.resume_reading()
        self._layer.linger(self)

    def _confirm(self) -> None:
        """Everything taken so far is in the kernel: confirm the Send items among it."""
        if self._completions:
            done, self._completions = self._completions, []
            for sink, tag in done:
                sink.enqueue_lossy(WriteDone(self, tag))

    def _watch_writes(self, on: bool) -> None:
        if on != self._writing:
            self._writing = on
            if on:
                self._layer.loop.add_writer(self.fd, self._schedule)
            else:
                self._layer.loop.remove_writer(self.fd)

    def _teardown(self, error: BaseException | None = None, tell: bool = True) -> None:
        """Close now; ``Closed`` (``Failed`` if it never connected) to the owner if ``tell``."""
        if self.closed:
            return
        self.closed = self.closing = True
        self._layer.forget(self)
        self._reader = None                    # it holds us: freed now, not by the collector
        try:  # noqa: SIM105  (not suppress(): three calls more, on every close)
            self.sock.close()
        except OSError:
            pass
        out = self.out
        self.unsent = self._buffer is not None
        if out:
            self.unsent = self.unsent or any(item is not _CLOSE for item in out)
            # what will never be sent is done with all the same: its owners may release it
            self._completions.extend((i.done, i.tag) for i in out
                                     if isinstance(i, (Send, FileSegment)) and i.done is not None)
            out.clear()
        self._buffer = None
        self._drained = None
        self._confirm()
        if tell:
            self.owner.enqueue_lossy(
                Closed(self, error) if self.connected else Failed(self, error or ConnectionError()))


class Listener:
    """A listening socket; its connections' events go to ``owner``."""

    def __init__(self, layer: SocketLayer, sock: socket.socket, owner: Sink,
                 options: dict[str, Any]) -> None:
        self._layer, self.sock, self.owner, self.options = layer, sock, owner, options
        self.address = sock.getsockname()
        self.accepted = 0
        self.emfile = 0                    # times the process ran out of descriptors
        self.closed = False

    def close(self) -> None:
        """Stop accepting; connections already accepted stay."""
        self.closed = True
        self._layer.call(self._layer.stop_listening, self)

    def __repr__(self) -> str:
        return f"<Listener {self.address!r}>"


class _ResumeReads:
    """Read-stage event: the rate limit has room again for the connections it held back."""


class _ReadStage(EventHandler):
    """Events: connections the selector found readable (and _ResumeReads under a rate limit)."""

    def __init__(self) -> None:
        self.limit: TokenBucket | None = None   # over packets read
        self.held: list[Connection] = []   # readable connections the limit held back
        self.own: Any = None
        # connections were queued while others still waited: one may be queued twice
        self.repeats = False

    def init(self, ctx: StageContext) -> None:
        self.own, self.timer = ctx.stage.sink, ctx.runtime.timer

    def handle_events(self, conns: list[Any]) -> None:
        if self.repeats:
            self.repeats = len(self.own) > 0   # (until all queued then have been read)
            if len(set(conns)) < len(conns):
                self._read_in_parts(conns)
                return
        self._read(conns)

    def _read_in_parts(self, conns: list[Any]) -> None:
        """A connection reported twice before this stage ran (rare): its second read may find
        the end, and the Closed its teardown sends at once must not pass the data of its
        first. So in parts, each holding a connection once, handed over in turn."""
        part: list[Any] = []
        for conn in conns:
            if conn in part:
                self._read(part)
                part = []
            part.append(conn)
        self._read(part)

    def _read(self, conns: list[Any]) -> None:
        limit = self.limit
        # what was read, by owner: handed over once per owner at the end of the batch
        read: dict[Sink, list[Packet]] = {}
        for conn in conns:
            if type(conn) is _ResumeReads:         # (also after the limit was lifted)
                held, self.held = self.held, []
                for waiting in held:
                    waiting.resume_reading()
                continue
            if limit is not None and not limit.accept():
                self._hold(conn, limit)
                continue
            data = conn._receive()
            if data is not None:
                packets = read.get(conn.owner)
                if packets is None:
                    packets = read[conn.owner] = []
                packets.append(Packet(conn, data))
        for owner, packets in read.items():
            _hand_over(owner, packets)

    def _hold(self, conn: Connection, limit: TokenBucket) -> None:
        """Over the rate limit: leave the data in the kernel, where TCP slows the sender down,
        until the bucket has room again."""
        if not conn.closed:
            conn.pause_reading()
            if not self.held:
                self.timer.schedule(1.0 / max(limit.rate, 1e-3), self.own, _ResumeReads())
            self.held.append(conn)


def _hand_over(owner: Sink, packets: list[Packet]) -> None:
    """Packets to their owner: in one enqueue, or one by one under a predicate (which judges
    each). A data packet refused (the owner sheds load) costs its connection; the end of input
    (``b""``) is told if the owner takes it."""
    if owner.predicate is None:
        try:
            owner.enqueue_many(packets)
            return
        except SinkError:                      # the owner is gone: each connection goes
            pass
    for packet in packets:
        if not packet.data:
            owner.enqueue_lossy(packet)
            continue
        try:
            owner.enqueue(packet)
        except SinkError as exc:               # the owner sheds load: this connection goes
            packet.conn._teardown(exc)


class _WriteStage(EventHandler):
    """Events: connections with something to send."""

    def handle_events(self, conns: list[Connection]) -> None:
        for conn in conns:
            conn._flush()


class _Resume:
    """Listen-stage event: watch a listener again after an EMFILE pause."""

    __slots__ = ("listener",)

    def __init__(self, listener: Listener) -> None:
        self.listener = listener


class _Sweep:
    """Listen-stage event: the oldest lingering connection's time is up."""


_SWEEP = _Sweep()


class _ListenStage(EventHandler):
    """Events: listeners the selector found readable (connections to accept), and resumes."""

    def __init__(self, layer: SocketLayer) -> None:
        self.layer = layer

    def handle_events(self, events: list[Any]) -> None:
        for ev in events:
            kind = type(ev)
            if kind is _Resume:
                self.layer._watch_listener(ev.listener)
            elif kind is _Sweep:
                self.layer.sweep()
            elif kind is Stopping:
                self.layer.quiet()
            else:
                self.layer.accept(ev)

    def destroy(self) -> None:
        self.layer.shutdown()


class SocketLayer:
    """The asynchronous socket layer of one runtime: three stages on its event loop.
    ``SocketLayer.of(rt)`` returns the runtime's layer, creating it on first use."""

    READ, WRITE, LISTEN = "seda.io.read", "seda.io.write", "seda.io.listen"

    @classmethod
    def of(cls, rt: Runtime) -> SocketLayer:
        try:
            listen: _ListenStage = rt.stage(cls.LISTEN).handler
            return listen.layer
        except KeyError:
            return cls(rt)

    def __init__(self, rt: Runtime) -> None:
        self.rt, self.loop = rt, rt.loop
        stage = rt.add_stage
        self._reads = _ReadStage()
        self._read_sink = stage(self.READ, self._reads, blocking=False, batch=256).sink
        # connections found readable in this round of the loop's poll, queued for the read
        # stage together once the round is over: one enqueue per round, not per socket
        self._readable: deque[Connection] = deque()
        rt.loop.after_poll(self._queue_reads)
        self.write_put = stage(self.WRITE, _WriteStage(), blocking=False, batch=256).sink.enqueue
        self.listen_sink = rt.add_stage(self.LISTEN, _ListenStage(self), blocking=False).sink
        rt.signals.subscribe(Stopping, self.listen_sink)
        self._spare: int | None = os.open(os.devnull, os.O_RDONLY)   # for EMFILE, see accept
        self.connections: set[Connection] = set()
        self.listeners: set[Listener] = set()
        # (deadline, connection), oldest first: all linger alike, so this is deadline order
        self._lingering: deque[tuple[float, Connection]] = deque()

    def limit_reads(self, rate: float | None, burst: int = 32) -> None:
        """Read at most ``rate`` packets per second across all connections (bursts of
        ``burst``); None lifts the limit. Load shedding at the edge (thesis 5.6.1)."""
        self._reads.limit = None if rate is None else TokenBucket(rate, burst)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop thread: now if this is it, else soon."""
        if self.loop.in_loop_thread() or not self.loop.running():
            fn(*args)
        else:
            self.loop.call_soon_threadsafe(fn, *args)

    # -- listening -------------------------------------------------------------------------------

    def listen(self, address: tuple[Any, ...], owner: Sink, *, backlog: int = 1024,
               ssl_context: ssl.SSLContext | None = None, reuse_port: bool = False,
               max_pending: int | None = MAX_PENDING, overflow: str = "reject",
               half_close: bool = False, sock: socket.socket | None = None) -> Listener:
        """Listen on ``address`` (or on an already bound ``sock``: ``bind_socket``'s accepts
        faster); ``Connected`` events for new connections, then their packets and closes, go
        to ``owner``. With ``half_close``, a peer that stops sending yields an empty
        ``Packet`` and the connection stays open for writing until the owner closes it;
        without, it is closed at once."""
        if sock is None:
            sock = bind_socket(address, reuse_port=reuse_port)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            # (Nagle off.) Accepted connections inherit it (Linux, the BSDs): one system call
            # for them all, not one each
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.listen(backlog)
        sock.setblocking(False)
        options = {"ssl": ssl_context, "max_pending": max_pending, "overflow": overflow,
                   "half_close": half_close}
        listener = Listener(self, sock, owner, options)
        self.listeners.add(listener)
        self.call(self._watch_listener, listener)
        return listener

    def _watch_listener(self, listener: Listener) -> None:
        if not listener.closed:
            put = self.listen_sink.enqueue
            self.loop.add_reader(listener.sock.fileno(), lambda: put(listener))

    def stop_listening(self, listener: Listener) -> None:
        self.listeners.discard(listener)
        with contextlib.suppress(OSError):
            self.loop.remove_reader(listener.sock.fileno())
        listener.sock.close()

    def quiet(self) -> None:
        """The runtime is stopping (loop thread): accept nothing more. Connections stay as they
        are while the stages drain: their owners know what they still need to read (the HTTP
        stage finishes the request being read, then closes)."""
        for listener in list(self.listeners):
            listener.closed = True
            self.stop_listening(listener)

    def _queue_reads(self) -> None:
        """After a round of the loop's poll: the connections found readable go to the read
        stage, in one enqueue."""
        readable = self._readable
        if readable:
            conns = list(readable)
            readable.clear()
            sink = self._read_sink
            if sink.length():                # (the read stage dedupes its next batches)
                self._reads.repeats = True
            try:
                sink.enqueue_many(conns)
            except SinkError:                # refused whole (a predicate): ask for each
                for conn in conns:
                    try:
                        sink.enqueue(conn)
                    except SinkError:        # the read stage is gone or sheds: stop asking
                        conn.pause_reading()

    def shutdown(self) -> None:
        """The runtime is stopping: close every listener and connection, on the loop thread."""
        def close_all() -> None:
            for listener in list(self.listeners):
                listener.closed = True
                self.stop_listening(listener)
            for conn in list(self.connections):
                conn._teardown()
            self._lingering.clear()
            if self._spare is not None:
                os.close(self._spare)
                self._spare = None
            done.set()

        done = threading.Event()
        self.call(close_all)
        done.wait(1.0)

    def accept(self, listener: Listener) -> None:
        """Drain the accept backlog (up to ACCEPT_BATCH); never stall, never spin. What was
        accepted is read in this round, not after the next poll: a client sends its request
        as soon as it is connected, so it is usually there already (and if not, the poll
        reports it when it comes; one it finds read already it does not report)."""
        if listener.closed:
            return
        try:
            self._accept_batch(listener)
        finally:
            self._queue_reads()

    def _accept_batch(self, listener: Listener) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                sock, peer = listener.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    self._out_of_descriptors(listener)
                    return
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue
                if listener.closed or exc.errno == errno.EBADF:
                    return
                log.error("listener %r: accept failed: %s", listener, exc)
                return
            listener.accepted += 1
            self._adopt(sock, peer, listener.owner, listener.options, server_side=True)

    def _out_of_descriptors(self, listener: Listener) -> None:
        """EMFILE: accept the waiting connection with the spare descriptor and close it at once
        (the client sees a close, not a hang), then rest the listener briefly so the loop does
        not spin on a backlog it cannot take."""
        listener.emfile += 1
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None
            with contextlib.suppress(OSError):
                listener.sock.accept()[0].close()
            with contextlib.suppress(OSError):
                self._spare = os.open(os.devnull, os.O_RDONLY)
        with contextlib.suppress(OSError):
            self.loop.remove_reader(listener.sock.fileno())
        self.rt.timer.schedule(EMFILE_PAUSE, self.listen_sink, _Resume(listener))

    # -- connections -----------------------------------------------------------------------------

    def connect(self, address: tuple[Any, ...], owner: Sink, *,
                ssl_context: ssl.SSLContext | None = None,
                server_hostname: str | None = None, max_pending: int | None = MAX_PENDING,
                overflow: str = "reject") -> Connection:
        """Connect to ``address``; ``Connected`` or ``Failed`` arrives at ``owner``. Data may be
        enqueued on the returned connection at once; it goes out once connected."""
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        options = {"ssl": ssl_context, "max_pending": max_pending, "overflow": overflow,
                   "server_hostname": server_hostname}
        conn = Connection(self, sock, owner, address, max_pending, overflow)
        self.call(self._start_connect, conn, address, options)
        return conn

    def _start_connect(self, conn: Connection, address: tuple[Any, ...],
                       options: dict[str, Any]) -> None:
        code = conn.sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            conn._teardown(OSError(code, os.strerror(code)))
            return
        self.connections.add(conn)

        def writable() -> None:
            self.loop.remove_writer(conn.fd)
            code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                conn._teardown(OSError(code, os.strerror(code)))
            else:
                self._established(conn, options, server_side=False)

        self.loop.add_writer(conn.fd, writable)

    def _adopt(self, sock: socket.socket, peer: Any, owner: Sink, options: dict[str, Any],
               server_side: bool) -> None:
        sock.setblocking(False)
        conn = Connection(self, sock, owner, peer, options["max_pending"], options["overflow"])
        conn.half_close = options["half_close"]
        self.connections.add(conn)
        self._established(conn, options, server_side)
        if not conn.closed:
            self._readable.append(conn)          # read at once (see accept)

    def _established(self, conn: Connection, options: dict[str, Any],
                     server_side: bool) -> None:
        """TCP is up: watch for reads, and announce it (after the handshake, with TLS)."""
        # the loop's readiness callback: a C append, no Python frame (see _queue_reads)
        conn._reader = functools.partial(self._readable.append, conn)
        self.loop.add_reader(conn.fd, conn._reader, edge=True)   # (see _receive)
        if options.get("ssl") is not None:
            conn.tls = TLSSession(options["ssl"], server_side, options.get("server_hostname"))
            if not server_side:
                conn.tls.start()
                conn._schedule()            # send the ClientHello
            return
        conn.connected = True
        try:
            conn.owner.enqueue(Connected(conn))
        except SinkError as exc:
            conn._teardown(exc)
            return
        if conn.out:
            conn._schedule()

    def linger(self, conn: Connection) -> None:
        """Close ``conn`` once LINGER has passed, unless its peer closes first (loop thread).
        One queue and one timer event at a time for all of them, not one per connection."""
        self._lingering.append((time.monotonic() + LINGER, conn))
        if len(self._lingering) == 1:
            self.rt.timer.schedule(LINGER, self.listen_sink, _SWEEP)

    def sweep(self) -> None:
        """Close the lingering connections whose time is up; wake again for the next one."""
        lingering, now = self._lingering, time.monotonic()
        while lingering and lingering[0][0] <= now:
            lingering.popleft()[1]._teardown()      # nothing, if the peer closed already
        if lingering:
            self.rt.timer.schedule(lingering[0][0] - now, self.listen_sink, _SWEEP)

    def forget(self, conn: Connection) -> None:
        """``conn`` is closing (its socket next): the layer and the loop let go of it."""
        self.connections.discard(conn)
        conn._writing = False
        self.loop.unwatch(conn.fd, closing=True)
