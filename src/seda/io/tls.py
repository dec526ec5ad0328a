"""TLS without blocking (ssl.MemoryBIO / SSLObject): the socket layer moves ciphertext, this
turns it into plaintext and back, so code above sees the same events with or without TLS."""

from __future__ import annotations

import ssl


class TLSSession:
    """One connection's TLS state. ``receive`` takes ciphertext and returns plaintext;
    ``send`` takes plaintext and returns the ciphertext to put on the wire, including any
    handshake or alert records the session has produced meanwhile."""

    __slots__ = ("_in", "_obj", "_out", "handshaken")

    def __init__(self, context: ssl.SSLContext, server_side: bool,
                 server_hostname: str | None = None) -> None:
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._in, self._out, server_side=server_side,
                                     server_hostname=server_hostname)
        self.handshaken = False

    def start(self) -> None:
        """Client side: produce the first handshake record."""
        self._handshake()

    def _handshake(self) -> None:
        try:
            self._obj.do_handshake()
        except ssl.SSLWantReadError:
            return
        self.handshaken = True

    def receive(self, data: bytes) -> bytes:
        """Feed ciphertext; return whatever plaintext it completes (maybe nothing). Raises
        ssl.SSLError on a bad record. The peer's close_notify completes no plaintext: what was
        sent to it still goes (TLS 1.3 lets a peer close only its sending side), and the
        connection ends with the TCP close that follows."""
        self._in.write(data)
        if not self.handshaken:
            self._handshake()
            if not self.handshaken:
                return b""
        obj, incoming = self._obj, self._in
        parts = []
        while True:
            try:
                chunk = obj.read(65536)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                raise ConnectionResetError("TLS close_notify from the peer") from None
            if not chunk:
                break
            parts.append(chunk)
            # Nothing left to decrypt: stop here rather than ask once more and be told so by
            # an SSLWantReadError, which the ssl module builds with its message and attributes
            # at a cost of a tenth of a small request's work. (Without read-ahead, which Python
            # does not turn on, a record not yet whole stays in the BIO and counts as pending.)
            if not incoming.pending and not obj.pending():
                break
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def send(self, data: bytes | bytearray | memoryview) -> bytes:
        """Encrypt ``data`` (may be empty) and return all ciphertext waiting to go out."""
        written = self._obj.write(data) if data else 0
        if written < len(data):                # (a memory BIO takes it all: never, in practice)
            view = memoryview(data)[written:]
            while view:
                view = view[self._obj.write(view):]
        return self._out.read()

    def outgoing(self) -> bool:
        """True if records are waiting to be sent (a handshake step, an alert)."""
        return self._out.pending > 0
