"""Asynchronous I/O as stages (thesis 5.6): sockets on the shared event loop, and files."""

from .bind import bind_socket
from .events import Closed, Connected, Failed, FileSegment, Packet, Send, WriteDone
from .files import FileDone, FileLayer, open_nowait, read_nowait
from .sockets import Connection, Listener, SocketLayer
from .tls import TLSSession

__all__ = [
    "Closed",
    "Connected",
    "Connection",
    "Failed",
    "FileDone",
    "FileLayer",
    "FileSegment",
    "Listener",
    "Packet",
    "Send",
    "SocketLayer",
    "TLSSession",
    "WriteDone",
    "bind_socket",
    "open_nowait",
    "read_nowait",
]
