"""Asynchronous files (thesis 5.6.2): blocking file calls wrapped in a stage of their own.

Operating systems offer no readiness for files, so the file stage runs the blocking calls on a
private pool sized by the thread pool controller, one thread per file at a time (keyed
dispatch), and reports each result as a ``FileDone`` event. Reads try the page cache first:
``read_nowait`` (``preadv`` with ``RWF_NOWAIT``) returns cached data without blocking, so only
real disk reads cross to the file stage: Flash's mincore trick, done by the kernel. Opens can
try the kernel's caches first too: ``open_nowait`` (``openat2`` with ``RESOLVE_CACHED``) opens
a file whose path the kernel resolves without reading the disk.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from typing import TYPE_CHECKING, Any, cast

from .._stage import EventHandler
from ..control import ThreadPoolController

if TYPE_CHECKING:
    from .._abc import DoneSink
    from .._runtime import Runtime
    from .._threads import ThreadPool

_NOWAIT = getattr(os, "RWF_NOWAIT", None)
_CANNOT_WAIT = {errno.EAGAIN, errno.EWOULDBLOCK}
_UNSUPPORTED = {errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


def read_nowait(fd: int, size: int, offset: int) -> bytes | None:
    """``size`` bytes at ``offset`` if the page cache has them all; None if reading would block
    (or the platform cannot tell), in which case use the file stage."""
    if _NOWAIT is None or size <= 0:
        return None if size > 0 else b""
    buf = bytearray(size)
    try:
        n = os.preadv(fd, [buf], offset, _NOWAIT)
    except OSError as exc:
        if exc.errno in _CANNOT_WAIT or exc.errno in _UNSUPPORTED:
            return None
        raise
    if n < size:
        if offset + n < os.fstat(fd).st_size:
            return None                    # partly cached: let the stage read the rest
        return bytes(memoryview(buf)[:n])
    return bytes(buf)                      # (one copy: a slice first would make two)


class _OpenHow(ctypes.Structure):
    """``struct open_how``, openat2's arguments (linux/openat2.h)."""

    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


def _openat2() -> Any:
    """libc's ``syscall``, for openat2 (Linux 5.12 for RESOLVE_CACHED), which Python's os
    module does not wrap; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_long
    # (declared, so that ctypes converts plain ints without a c_long made per call)
    call.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_char_p, ctypes.c_void_p,
                     ctypes.c_size_t]
    return call


_syscall = _openat2()
_SYS_OPENAT2 = 437           # the same number on every architecture (the unified table)
_AT_FDCWD = -100
_RESOLVE_BENEATH = 0x08
_RESOLVE_CACHED = 0x20
# would have to wait for the disk; or this kernel, or a sandbox's filter, does not offer it
_NO_OPEN_NOWAIT = {errno.EAGAIN, errno.ENOSYS, errno.EINVAL, errno.E2BIG, errno.EPERM}


# Opens a file to read that nothing named in its place can hold up: O_NONBLOCK, as opening a
# FIFO to read would wait for a writer (a regular file's reads are unchanged); O_NOCTTY, as a
# terminal would become the process's.
OPEN_TO_READ = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


# openat2's arguments for OPEN_TO_READ, anywhere and beneath a directory, made once: the page
# cache opens with them on every miss and every recheck (the kernel only reads them)
_TO_READ = _OpenHow(OPEN_TO_READ | os.O_CLOEXEC, 0, _RESOLVE_CACHED)
_TO_READ_BENEATH = _OpenHow(OPEN_TO_READ | os.O_CLOEXEC, 0, _RESOLVE_CACHED | _RESOLVE_BENEATH)


def open_nowait(path: str, flags: int = OPEN_TO_READ, *, beneath: int | None = None
                ) -> int | None:
    """A descriptor for ``path`` (``flags`` | O_CLOEXEC) if the kernel resolves the path from
    its caches alone, without reading the disk; None if it would have to (or cannot tell), in
    which case open it where blocking is allowed (the file stage). Other errors raise, as
    ``os.open`` would (FileNotFoundError...). With ``beneath``, a directory's descriptor,
    ``path`` is relative to it and the kernel keeps the whole resolution inside it
    (RESOLVE_BENEATH): a path that would leave it, by ``..`` or a link, or an absolute link
    even to inside it, opens nothing (OSError EXDEV, or None where the cached lookup gives up
    first)."""
    if _syscall is None:
        return None
    if flags == OPEN_TO_READ:
        how = _TO_READ if beneath is None else _TO_READ_BENEATH
    else:
        how = _OpenHow(flags | os.O_CLOEXEC, 0,
                       _RESOLVE_CACHED | (0 if beneath is None else _RESOLVE_BENEATH))
    fd = _syscall(_SYS_OPENAT2, _AT_FDCWD if beneath is None else beneath, os.fsencode(path),
                  ctypes.addressof(how), ctypes.sizeof(how))
    if fd >= 0:
        return int(fd)
    code = ctypes.get_errno()
    if code in _NO_OPEN_NOWAIT:
        return None
    raise OSError(code, os.strerror(code), path)


class FileDone:
    """Completion of a file operation: ``result`` (fd, bytes, count, stat or None) or ``error``."""

    __slots__ = ("error", "op", "result", "tag")

    def __init__(self, op: str, tag: Any, result: Any = None, error: OSError | None = None):
        self.op, self.tag, self.result, self.error = op, tag, result, error

    def __repr__(self) -> str:
        return f"FileDone({self.op}, {self.tag!r}, error={self.error!r})"


class _Op:
    """A request to the file stage. ``key`` serialises operations on one file."""

    __slots__ = ("args", "done", "key", "op", "tag")

    def __init__(self, op: str, key: Any, args: tuple[Any, ...], done: DoneSink, tag: Any) -> None:
        self.op, self.key, self.args, self.done, self.tag = op, key, args, done, tag


def _run(op: str, args: tuple[Any, ...]) -> Any:
    if op == "open":
        return os.open(*args)
    if op == "read":
        fd, size, offset = args
        return os.pread(fd, size, offset)
    if op == "write":
        fd, data, offset = args
        return os.pwrite(fd, data, offset)
    if op == "stat":
        return os.stat(args[0])
    if op == "close":
        return os.close(args[0])
    raise ValueError(f"unknown file operation {op!r}")


class _FileStage(EventHandler):
    def __init__(self, layer: FileLayer) -> None:
        self.layer = layer

    def handle_events(self, ops: list[_Op]) -> None:
        for req in ops:
            try:
                done = FileDone(req.op, req.tag, _run(req.op, req.args))
            except OSError as exc:
                done = FileDone(req.op, req.tag, error=exc)
            req.done.enqueue_lossy(done)


class FileLayer:
    """The runtime's file stage. Every call returns at once; a ``FileDone`` with ``tag`` arrives
    on ``done``. ``FileLayer.of(rt)`` returns the runtime's layer, creating it on first use."""

    STAGE = "seda.io.file"

    @classmethod
    def of(cls, rt: Runtime, max_threads: int = 16) -> FileLayer:
        try:
            layer: FileLayer = rt.stage(cls.STAGE).handler.layer
        except KeyError:
            return cls(rt, max_threads)
        return layer

    def __init__(self, rt: Runtime, max_threads: int = 16) -> None:
        threads = ThreadPoolController(min=1, max=max_threads, queue_threshold=4)
        self.stage = rt.add_stage(self.STAGE, _FileStage(self), threads=threads, batch=8,
                                  key=lambda req: req.key)
        self.put = self.stage.sink.enqueue
        pool = cast("ThreadPool", self.stage.manager)     # a blocking stage: a thread pool
        self.busy_with = pool.busy_with
        self.fast_reads = 0                # served from the page cache without the stage

    def open(self, path: str | os.PathLike[str], done: DoneSink, tag: Any = None,
             flags: int = os.O_RDONLY, mode: int = 0o644) -> None:
        self.put(_Op("open", os.fspath(path), (os.fspath(path), flags | os.O_CLOEXEC, mode),
                     done, tag))

    def read(self, fd: int, size: int, offset: int, done: DoneSink, tag: Any = None) -> None:
        """Read ``size`` bytes at ``offset``: from the page cache at once if it has them and
        nothing else is under way on this file (order is kept), else on the file stage."""
        if self.busy_with(fd):
            self.put(_Op("read", fd, (fd, size, offset), done, tag))
            return
        try:
            data = read_nowait(fd, size, offset)
        except OSError as exc:
            done.enqueue_lossy(FileDone("read", tag, error=exc))
            return
        if data is not None:
            self.fast_reads += 1
            done.enqueue_lossy(FileDone("read", tag, data))
            return
        self.put(_Op("read", fd, (fd, size, offset), done, tag))

    def write(self, fd: int, data: bytes, offset: int, done: DoneSink, tag: Any = None) -> None:
        self.put(_Op("write", fd, (fd, bytes(data), offset), done, tag))

    def stat(self, path: str | os.PathLike[str], done: DoneSink, tag: Any = None) -> None:
        self.put(_Op("stat", os.fspath(path), (os.fspath(path),), done, tag))

    def close(self, fd: int, done: DoneSink, tag: Any = None) -> None:
        self.put(_Op("close", fd, (fd,), done, tag))
