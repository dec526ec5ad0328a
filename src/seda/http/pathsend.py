"""ASGI's ``http.response.pathsend`` extension: the application names a file and the server
sends it as the response's body, with sendfile, as Haboob sends its static files. Starlette's
and FastAPI's ``FileResponse`` use it when it is offered, instead of reading the file into
body messages on the application's loop.

The file is opened by the application's stage (``send`` raises there, so the application sees
why it cannot be sent): on its loop when the kernel has the path in its caches, else in the
loop's executor, as Starlette reads a file without the extension. The descriptor travels with
the response to the connection, which closes it once the file has gone or the client has.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from ..io.files import OPEN_TO_READ, open_nowait
from .response import CloseDescriptor, FileBody, Headers, Response

EXTENSION = "http.response.pathsend"


def open_regular(path: Any) -> tuple[int, int]:
    """The file at ``path`` opened for reading, and its size. Raises OSError if it cannot be
    opened (FileNotFoundError, PermissionError), ValueError if it is not a regular file. It
    may wait for the disk: see ``open_cached``.

    The spec asks for an absolute path, but Starlette's FileResponse passes on whatever path
    it was given: a relative one is taken from the working directory, which is the
    application's own (one process), so it names the file the application would have read."""
    return _regular(os.open(path, OPEN_TO_READ), path)   # (a FIFO does not hold it up)


def open_cached(path: Any) -> tuple[int, int] | None:
    """``open_regular`` if the kernel can resolve ``path`` from its caches alone (without the
    disk: fit for an event loop); None if it cannot, or cannot tell."""
    fd = open_nowait(os.fspath(path))
    return None if fd is None else _regular(fd, path)


def _regular(fd: int, path: Any) -> tuple[int, int]:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{EXTENSION}: {path!r} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def file_response(status: int, headers: Headers, declared: int | None, fd: int,
                  size: int) -> Response:
    """The response that sends the open file ``fd`` of ``size`` bytes, and then closes it.

    A declared Content-Length that disagrees with the file is treated as a wrong length in any
    ASGI body: never a byte past it, and a file shorter than it goes with its own length on a
    connection that then closes, so that the client neither waits for bytes that will not
    come nor reads the next response out of this one."""
    count = size if declared is None else min(declared, size)
    if declared is not None and declared > size:
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        headers.append(("connection", "close"))
    if count == 0:                  # nothing to send: a FileSegment of 0 bytes fails under TLS
        os.close(fd)
        return Response(status, b"", headers)
    return Response(status, FileBody(fd, 0, count, CloseDescriptor, fd), headers)
