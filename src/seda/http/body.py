"""A request body still arriving, read by the application on its own thread (``wsgi.input``).

The HTTP stage feeds it on the loop thread; the application reads it like a file. Reads block
until they can be satisfied, as PEP 3333 asks and every peer server does. Memory is bounded:
past ``limit`` unread bytes the stage stops reading the socket (TCP slows the client), unless a
reader is waiting for more than that; it reads again once the reader has taken what it needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator


class BodyError(ConnectionError):
    """The request body could not be read to its end: ``status`` is the answer it deserves
    (400 malformed, 408 too slow, 413 too large; 400 as well when the client went away)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class BodyReader:
    """File-like access to a body as it arrives: ``read``, ``readline``, ``readlines``,
    iteration; and for a reader on an event loop, which must not block, ``read_nowait`` and
    ``when_readable``. ``on_drained`` is called (from the reading thread) when the stage may
    read the socket again; the stage asks ``paused`` whether it should read now."""

    def __init__(self, on_drained: Callable[[], None], limit: int = 256 * 1024) -> None:
        self._on_drained, self.limit = on_drained, limit
        self._cond = threading.Condition(threading.Lock())
        self._buf = bytearray()
        self._want: float = 0           # bytes a blocked reader needs in the buffer
        self._done = False
        self._error: BodyError | None = None
        self._waiter: Callable[[], None] | None = None   # when_readable's callback
        self.paused = False             # over the limit: the stage should not read
        self.taken = 0                  # bytes the application has read

    # -- the HTTP stage (loop thread) -------------------------------------------------------

    def feed(self, data: bytes) -> None:
        with self._cond:
            buf = self._buf
            buf += data
            if len(buf) > self.limit and len(buf) >= self._want:
                self.paused = True
            if self._want and len(buf) >= self._want:
                self._cond.notify()
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter()

    def finish(self, error: BodyError | None = None) -> None:
        """The body is complete, or (``error``) it never will be."""
        with self._cond:
            self._done, self._error = True, error
            self.paused = False
            self._cond.notify()
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter()

    def abandon(self) -> None:
        """The application has answered without reading it all: drop what is buffered."""
        with self._cond:
            self._buf.clear()
            self._done = True
            self._error = self._error or BodyError(400, "the response was sent before the "
                                                        "request body was read")
            self.paused = False
            self._cond.notify()
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter()

    # -- the application (its own thread) ---------------------------------------------------

    def _wait_for(self, need: float) -> None:
        """Block (holding the lock) until ``need`` bytes are buffered or the body ends."""
        buf = self._buf
        while len(buf) < need and not self._done:
            self._want = need
            if self.paused:                # we need more than the limit lets in: read on
                self._unpause()
                continue
            self._cond.wait()
        self._want = 0

    def _unpause(self) -> None:
        """Let the stage read again (lock held; released while it is told)."""
        self.paused = False
        self._cond.release()
        try:
            self._on_drained()
        finally:
            self._cond.acquire()

    def _take(self, n: int, wanted: float) -> bytes:
        """Remove ``n`` buffered bytes (lock held); tell the stage if it may read again."""
        buf = self._buf
        if n < wanted and self._error is not None:
            raise self._error
        data = bytes(buf[:n])
        del buf[:n]
        self.taken += n
        if self.paused and len(buf) <= self.limit // 2:
            self._unpause()
        return data

    def read(self, size: int | None = -1) -> bytes:
        """``size`` bytes, fewer only at the end of the body; all that is left if negative."""
        with self._cond:
            want = float("inf") if size is None or size < 0 else size
            self._wait_for(want)
            return self._take(int(min(want, len(self._buf))), want)

    def readline(self, size: int | None = -1) -> bytes:
        """One line with its newline (the last may have none); at most ``size`` bytes."""
        limit = float("inf") if size is None or size < 0 else size
        with self._cond:
            buf, scanned = self._buf, 0
            while True:
                nl = buf.find(b"\n", scanned)
                if nl >= 0 or len(buf) >= limit or self._done:
                    break
                scanned = len(buf)
                self._wait_for(len(buf) + 1)
            if nl >= 0:
                return self._take(int(min(nl + 1, limit)), 0)
            return self._take(int(min(len(buf), limit)), limit)

    def read_nowait(self) -> tuple[bytes, bool]:
        """What has arrived and not been read, without waiting (``b""`` if nothing has), and
        whether the body ends there. Raises the BodyError once a failed body is read out."""
        with self._cond:
            if self._error is not None and not self._buf:
                raise self._error
            # (asked first: _take may let go of the lock, and more come meanwhile)
            done = self._done and self._error is None
            return self._take(len(self._buf), 0), done

    def when_readable(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once, at once or from the thread that feeds the body, when
        ``read_nowait`` has something to say: data, the end, or the error."""
        with self._cond:
            ready = bool(self._buf) or self._done
            if not ready:
                self._waiter = callback
        if ready:
            callback()

    def readlines(self, hint: int = -1) -> list[bytes]:
        """Lines until the end, or until they add up to ``hint`` bytes."""
        lines, total = [], 0
        while line := self.readline():
            lines.append(line)
            total += len(line)
            if 0 < hint <= total:
                break
        return lines

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")
