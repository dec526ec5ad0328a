"""What a static-file request means, apart from I/O scheduling: a safe path under the root (and
the file opened at once when the kernel resolves it from its caches),
the file's validators, and the HTTP rules for conditional and partial responses."""

from __future__ import annotations

import functools
import mimetypes
import os
import stat
from email.utils import formatdate, parsedate_to_datetime
from urllib.parse import unquote

from seda.io import open_nowait


class Refused(Exception):
    """The request cannot be served from the root: ``status`` says why (403 or 404)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def resolve(root: str, url_path: str, *, allow_outside: bool = False) -> tuple[str, str]:
    """Map a URL path to ``("file", filesystem path)`` or ``("redirect", location)``.

    Refuses with 403 anything that could leave the root: ``..`` segments in any encoding,
    backslashes, NUL, and symbolic links pointing outside (unless ``allow_outside``); 404 for
    what does not exist. A directory without its trailing slash redirects to it (with one
    leading slash); with one it serves its index.html."""
    decoded, relative = _relative(url_path)
    base = _real_root(root)
    real, mode = _followed(os.path.join(base, relative))
    if stat.S_ISDIR(mode):
        if not decoded.endswith("/"):
            _inside(real, base, allow_outside)
            # One leading slash, however many came: "//dir/" would be a network-path
            # reference, which a browser takes to host "dir" (an open redirect).
            return "redirect", "/" + url_path.lstrip("/") + "/"
        real, mode = _followed(os.path.join(real, "index.html"))
        if not stat.S_ISREG(mode):
            raise Refused(404, "no index.html in the directory")
    _inside(real, base, allow_outside)
    if not stat.S_ISREG(mode):
        raise Refused(403, "not a regular file")
    return "file", real


def open_cached(root: str, url_path: str, *, allow_outside: bool = False,
                root_fd: int | None = None) -> tuple[int, os.stat_result, str] | None:
    """The regular file under ``root`` that ``url_path`` names, opened for reading, if the
    kernel finds its path in its caches (``open_nowait``): (descriptor, stat, the path opened,
    its links not followed), the caller closes the descriptor. None for anything else (a lookup
    that would read the disk, a directory, a path refused, no ``openat2``): ``resolve``
    answers those where blocking is allowed. Nothing here waits for the disk. Unless links
    may lead outside the root, ``root_fd`` (``RootDir.at``) is the root the kernel keeps the
    lookup beneath; without it, None."""
    try:
        _, relative = _relative(url_path)
    except Refused:
        return None
    base = _real_root(root)
    try:
        # (a FIFO does not hold it up.) Beneath the root's descriptor the kernel itself keeps
        # the lookup inside: no reading back where the links led (a readlink of /proc/self/fd,
        # as dear as the open). An absolute link, even to inside the root, is left to resolve.
        if allow_outside:
            fd = open_nowait(os.path.join(base, relative))
        elif root_fd is not None:
            fd = open_nowait(relative or ".", beneath=root_fd)
        else:
            return None
    except OSError:
        return None
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            return fd, st, os.path.join(base, relative)
    except OSError:
        pass
    os.close(fd)
    return None


class RootDir:
    """The root directory held open for ``open_cached`` to look beneath, and made sure of:
    a deploy may rename another directory into the root's place, or move this one away, and
    files must then come from what the root's path names, not from the directory held."""

    def __init__(self, root: str) -> None:
        self.path = _real_root(root)
        self.fd: int | None = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.file = identity(os.fstat(self.fd))
        self.looked: float | None = None

    def at(self, now: float) -> int | None:
        """The descriptor, if the root's path still names it; looked at once per ``now`` (a
        batch of lookups), without waiting for the disk. None: look the slow way (resolve)."""
        if now != self.looked:
            self.looked = now
            self._look()
        return self.fd

    def _look(self) -> None:
        try:
            fd = open_nowait(self.path, os.O_PATH | os.O_DIRECTORY)
        except OSError:                        # gone, or no longer a directory
            fd = None
        if fd is None:
            self.close()
            return
        file = identity(os.fstat(fd))
        if self.fd is not None and file == self.file:
            os.close(fd)
            return
        self.close()
        self.fd, self.file = fd, file          # another directory in its place: this one

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def identity(st: os.stat_result) -> tuple[int, int]:
    """Which file ``st`` is: another put at the same path (a rename) is told apart."""
    return st.st_dev, st.st_ino


def _relative(url_path: str) -> tuple[str, str]:
    """The URL path decoded, and the path below the root it names; refuses what could leave
    the root by its spelling (``..`` in any encoding, backslashes, NUL)."""
    if "\\" in url_path or "\x00" in url_path:
        raise Refused(403, "backslash or NUL in the path")
    try:
        decoded = unquote(url_path, errors="strict")
    except UnicodeDecodeError:
        raise Refused(404, "the path is not UTF-8") from None
    if "\\" in decoded or "\x00" in decoded:
        raise Refused(403, "backslash or NUL in the decoded path")
    segments = decoded.split("/")
    if ".." in segments:
        raise Refused(403, "'..' in the path")
    relative = "/".join(s for s in segments if s and s != ".")
    if relative and segments[-1] in ("", "."):
        # Kept, so that the kernel asks for a directory there: "/a.txt/" is no file (404).
        relative += "/"
    return decoded, relative


@functools.lru_cache(maxsize=8)
def _real_root(root: str) -> str:
    """The root with its symbolic links followed, once (as nginx reads its configuration)."""
    return os.path.realpath(root)


def _followed(path: str) -> tuple[str, int]:
    """``path`` with every symbolic link followed, and its file mode: what the kernel found
    opening it (``O_PATH``: no permission to read it needed), read back from /proc. Three
    system calls, where ``os.path.realpath`` lstats each component in Python: the dearest
    part of a cache miss."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise Refused(404, "no such file") from None
    except PermissionError:
        raise Refused(403, "not readable") from None
    except OSError:                          # a loop of links, a name too long
        raise Refused(404, "cannot be opened") from None
    try:
        mode = os.fstat(fd).st_mode
        try:
            return os.readlink(f"/proc/self/fd/{fd}"), mode
        except OSError:                      # no /proc: ask the slow way
            return os.path.realpath(path), mode
    finally:
        os.close(fd)


def _inside(real: str, base: str, allow_outside: bool) -> None:
    if not allow_outside and real != base and not real.startswith(base + os.sep):
        raise Refused(403, "the path leads outside the root")


# The types browsers need, as nginx's own mime.types has them (and what came since): taken
# before Python's mimetypes, whose answer depends on the machine's /etc/mime.types (a slim
# container has none: fonts, WebP and Ogg were application/octet-stream; Debian's calls an
# HLS segment, .ts, a Qt translation file)
WEB_TYPES = {
    ".html": "text/html", ".htm": "text/html", ".css": "text/css", ".txt": "text/plain",
    ".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json",
    ".map": "application/json", ".webmanifest": "application/manifest+json",
    ".wasm": "application/wasm", ".xml": "application/xml", ".pdf": "application/pdf",
    ".md": "text/markdown", ".csv": "text/csv", ".vtt": "text/vtt",
    ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
    ".gif": "image/gif", ".webp": "image/webp", ".avif": "image/avif", ".apng": "image/apng",
    ".jxl": "image/jxl", ".ico": "image/vnd.microsoft.icon", ".bmp": "image/bmp",
    ".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf",
    ".mp4": "video/mp4", ".m4v": "video/mp4", ".webm": "video/webm", ".ogv": "video/ogg",
    ".mov": "video/quicktime", ".ts": "video/mp2t", ".m3u8": "application/vnd.apple.mpegurl",
    ".mp3": "audio/mpeg", ".m4a": "audio/mp4", ".ogg": "audio/ogg", ".oga": "audio/ogg",
    ".opus": "audio/ogg", ".flac": "audio/flac", ".wav": "audio/wav", ".zip": "application/zip",
}


# a compressed file (data.json.gz) is sent as it is, without a Content-Encoding, so its type
# is the compression's: as application/json, a browser showed the gzip bytes as text
COMPRESSED_TYPES = {"gzip": "application/gzip", "bzip2": "application/x-bzip2",
                    "xz": "application/x-xz", "compress": "application/x-compress"}


def content_type(path: str) -> str:
    guessed, encoding = mimetypes.guess_type(path)
    if encoding is not None:
        return COMPRESSED_TYPES.get(encoding, "application/octet-stream")
    kind = (WEB_TYPES.get(os.path.splitext(path)[1].lower()) or guessed
            or "application/octet-stream")
    if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
        kind += "; charset=utf-8"
    return kind


def etag(st: os.stat_result) -> str:
    return f'"{st.st_mtime_ns:x}-{st.st_size:x}"'


def last_modified(st: os.stat_result) -> str:
    return _http_date(int(st.st_mtime))


@functools.lru_cache(maxsize=1024)
def _http_date(seconds: int) -> str:
    """Files written together share their second: formatted once (each miss needs one)."""
    return formatdate(seconds, usegmt=True)


def _date(text: str) -> float | None:
    """An HTTP date as a timestamp; None for one that cannot be read (the header is ignored)."""
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def precondition_failed(if_match: str | None, if_unmodified_since: str | None, tag: str,
                        mtime: float) -> bool:
    """RFC 9110 13.2.2: 412 for a client that wants only the version it knows, once the file
    has changed. If-Match (strong comparison: a W/ tag never matches) wins over
    If-Unmodified-Since."""
    if if_match is not None:
        return if_match.strip() != "*" and all(t.strip() != tag for t in if_match.split(","))
    if if_unmodified_since is not None:
        since = _date(if_unmodified_since)
        return since is not None and int(mtime) > since
    return False


def not_modified(if_none_match: str | None, if_modified_since: str | None, tag: str,
                 mtime: float) -> bool:
    """RFC 9110 13.1: If-None-Match (weak comparison) wins over If-Modified-Since."""
    if if_none_match is not None:
        if if_none_match.strip() == "*":
            return True
        weak = tag.removeprefix("W/")
        return any(t.strip().removeprefix("W/") == weak for t in if_none_match.split(","))
    if if_modified_since is not None:
        since = _date(if_modified_since)
        return since is not None and int(mtime) <= since
    return False


UNSATISFIABLE = "unsatisfiable"


def byte_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """A single ``Range: bytes=`` as inclusive ``(first, last)``; None to send the whole file
    (no header, a malformed one, several ranges, which a server may ignore, or an empty
    file); UNSATISFIABLE for 416."""
    # (the unit is case-insensitive, RFC 9110 14.1: "Bytes=0-9" is a range too)
    if header is None or header[:6].lower() != "bytes=" or "," in header:
        return None
    if size == 0:
        # An empty file has no byte a range could name, so no range of it is satisfiable;
        # but a 416 would refuse the client a file it can simply have: send it whole
        # (nothing, with 200) as nginx does (RFC 9110 14.2 lets a server ignore Range).
        return None
    first, sep, last = header[6:].strip().partition("-")
    if not sep or not (first or last) or not _digits(first or "0") \
            or not _digits(last or "0"):
        return None
    if not first:                            # a suffix: the last n bytes
        n = int(last)
        return (max(0, size - n), size - 1) if n > 0 else UNSATISFIABLE
    start = int(first)
    if last and int(last) < start:
        return None                          # syntactically invalid: ignore the header
    if start >= size:
        return UNSATISFIABLE
    return start, min(int(last) if last else size - 1, size - 1)


def _digits(text: str) -> bool:
    """Whether ``text`` is a number of ASCII digits: ``str.isdigit`` alone takes the Latin-1
    superscripts ("²") too, which ``int`` refuses."""
    return text.isascii() and text.isdigit()
