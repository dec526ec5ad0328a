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
        ssl.SSLError on a bad record and ConnectionResetError on the peer's close_notify."""
        self._in.write(data)
        if not self.handshaken:
            self._handshake()
            if not self.handshaken:
                return b""
        parts = []
        while True:
            try:
                chunk = self._obj.read(65536)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                raise ConnectionResetError("TLS close_notify from the peer") from None
            if not chunk:
                break
            parts.append(chunk)
        return b"".join(parts)

    def send(self, data: bytes | bytearray | memoryview) -> bytes:
        """Encrypt ``data`` (may be empty) and return all ciphertext waiting to go out."""
        view = memoryview(data)
        while view:
            n = self._obj.write(view)
            view = view[n:]
        return self._out.read()

    def outgoing(self) -> bool:
        """True if records are waiting to be sent (a handshake step, an alert)."""
        return self._out.pending > 0
