"""What the socket layer tells the owner of a connection, as events on the owner's sink."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from .._abc import DoneSink
    from .sockets import Connection


class Connected:
    """A connection was accepted by a listener, or an outgoing connect succeeded."""

    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def __repr__(self) -> str:
        return f"Connected({self.conn!r})"


class Packet:
    """Bytes received on a connection (at most one read's worth)."""

    __slots__ = ("conn", "data")

    def __init__(self, conn: Connection, data: bytes) -> None:
        self.conn, self.data = conn, data

    def __repr__(self) -> str:
        return f"Packet({self.conn!r}, {len(self.data)} bytes)"


class WriteDone:
    """Everything up to and including a ``Send`` item was handed to the kernel."""

    __slots__ = ("conn", "tag")

    def __init__(self, conn: Connection, tag: Any) -> None:
        self.conn, self.tag = conn, tag


class Closed:
    """The connection is closed: by the peer, by us, or on an error (``error`` is then set)."""

    __slots__ = ("conn", "error")

    def __init__(self, conn: Connection, error: BaseException | None = None) -> None:
        self.conn, self.error = conn, error

    def __repr__(self) -> str:
        return f"Closed({self.conn!r}, {self.error!r})"


class Failed:
    """An outgoing connection (or a TLS handshake) could not be established."""

    __slots__ = ("conn", "error")

    def __init__(self, conn: Connection, error: BaseException) -> None:
        self.conn, self.error = conn, error

    def __repr__(self) -> str:
        return f"Failed({self.conn!r}, {self.error!r})"


class Send:
    """Outgoing data whose transmission should be confirmed with a ``WriteDone(conn, tag)``
    event on ``done`` (sent, or abandoned because the connection closed)."""

    __slots__ = ("data", "done", "tag")

    def __init__(self, data: bytes | memoryview, done: DoneSink, tag: Any = None) -> None:
        self.data, self.done, self.tag = data, done, tag


@final        # told apart by ``type(item) is FileSegment``: a subclass would not be
class FileSegment:
    """``count`` bytes of an open file from ``offset``, sent with ``os.sendfile`` (no copy
    through Python). The file must stay open until the connection is done with it: give a
    ``done`` sink to get ``WriteDone(conn, tag)`` then (also if the connection closes first)."""

    __slots__ = ("count", "done", "fd", "offset", "tag")

    def __init__(self, fd: int, offset: int, count: int, done: DoneSink | None = None,
                 tag: Any = None) -> None:
        self.fd, self.offset, self.count, self.done, self.tag = fd, offset, count, done, tag
