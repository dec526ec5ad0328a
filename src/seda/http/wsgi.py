"""WSGI (PEP 3333): an application runs in a stage of its own, with its own thread pool and
admission predicate, fed HttpRequest events by the HTTP server stage.

A body known to be whole (a list, or one piece as long as the declared Content-Length) goes out
as one ``bytes``; any other body streams (``StreamBody``), each piece sent as soon as the
application produces it, so a server-sent event is not held back and a large body never sits in
memory whole. ``wsgi.file_wrapper`` files go out with ``sendfile``.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import stat
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from .._stage import EventHandler
from . import response as responses
from .body import BodyError
from .forwarded import Proxies
from .kept import KeptHeads
from .request import HttpRequest
from .response import AnswerHead, CloseDescriptor, FileBody, Headers, Response, StreamBody

if TYPE_CHECKING:
    from wsgiref.types import WSGIApplication, WSGIEnvironment

    from .._abc import Controller
    from .._runtime import Runtime
    from .._sink import Sink

log = logging.getLogger("seda.wsgi")

_SPECIAL = {b"content-type": "CONTENT_TYPE", b"content-length": "CONTENT_LENGTH"}
# Hop-by-hop fields are the server's to send (PEP 3333); an application's Connection: close is
# kept as the wish to close.
_HOP_BY_HOP = frozenset({"keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                         "upgrade"})
_KEYS_KEPT = 512
_PROTOCOLS = {"1.1": "HTTP/1.1", "1.0": "HTTP/1.0"}   # SERVER_PROTOCOL, by request version
_LENGTH, _HOP, _SPECIAL_FIELD = 0, 1, 2
_SERVER_FIELDS = {"content-length": _LENGTH, "connection": _SPECIAL_FIELD, "date": _SPECIAL_FIELD,
                  **dict.fromkeys(_HOP_BY_HOP, _HOP)}
# status lines as applications write them, with the server's phrase: taken as they are
_STANDARD = {f"{code} {phrase}": code for code, phrase in responses.PHRASES.items()
             if code >= 200}


def _status_code(status: str) -> int:
    """The code of a WSGI status line other than a standard one ("299 Fine", "404 Gone").
    A response's status is final, 200 to 599 (RFC 9110 15): a 1xx sent as one would leave
    the client waiting for the response it announces, and WSGI has no interim responses."""
    code = status[:3]
    if (len(status) > 3 and status[3] != " ") or not (code.isascii() and code.isdigit()) \
            or len(code) != 3 or not 200 <= int(code) <= 599 or "\n" in status or "\r" in status:
        raise ValueError(f"bad WSGI status {status!r}: a response's status is 200 to 599")
    return int(code)


@functools.cache
def server_software() -> str:
    """``SERVER_SOFTWARE`` (CGI, RFC 3875 4.1.17): the package and its version, as gunicorn
    says ``gunicorn/23.0.0``; the name alone where the package is not installed."""
    try:
        return f"pyseda/{metadata.version('pyseda')}"
    except metadata.PackageNotFoundError:
        return "pyseda"


def _read_head(headers: tuple[Any, ...]) -> AnswerHead:
    """Check start_response's header fields and make their header lines: TypeError for a field
    not (str, str), ValueError for one that cannot be sent (a line break, a Content-Length
    not a number, a character latin-1 lacks)."""
    length, dropped, special = None, False, False
    for name, value in headers:
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"WSGI headers are (str, str), got {(name, value)!r}")
        role = _SERVER_FIELDS.get(name.lower())
        if role is None:
            continue
        if role is _LENGTH:
            digits = value.strip()
            if not (digits.isascii() and digits.isdigit()):   # (isdigit alone takes "²")
                raise ValueError(f"bad Content-Length {value[:32]!r}")
            if length is not None:             # said twice: once, or a client could misread
                if int(digits) != length:
                    raise ValueError(f"two Content-Lengths, {length} and {int(digits)}")
                dropped = True
            length = int(digits)
        elif role is _HOP:
            dropped = True
        else:
            special = True
    kept = responses.fields_to_send(headers, _HOP_BY_HOP) if dropped else headers
    return AnswerHead(kept, responses.prepare_head(kept), length, special)


class _Errors:
    """``wsgi.errors``: what the application writes there goes to the log."""

    def write(self, text: str) -> int:
        if text.strip():
            log.error("%s", text.rstrip())
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass


class FileWrapper:
    """``wsgi.file_wrapper``: a file the server sends with ``sendfile`` when it is a regular
    file, and reads in blocks otherwise."""

    def __init__(self, filelike: Any, block_size: int = 65536) -> None:
        self.filelike, self.block_size = filelike, block_size

    def __iter__(self) -> Iterator[bytes]:
        read = self.filelike.read
        while block := read(self.block_size):
            yield block

    def close(self) -> None:
        close = getattr(self.filelike, "close", None)
        if close is not None:
            close()


class WsgiHandler(EventHandler):
    """Runs ``app`` for each HttpRequest. Use it in a blocking stage: applications block.

    ``url_scheme`` overrides the scheme of the connection (``https`` under TLS). Header names
    with ``_`` are dropped unless ``underscore_headers``: ``X_Forwarded_For`` would otherwise
    reach the application as the ``X-Forwarded-For`` a proxy vouched for (as gunicorn and
    waitress do). ``proxies``: the peers whose X-Forwarded-Proto gives ``wsgi.url_scheme``
    (forwarded.py; None: nobody's); ``REMOTE_ADDR`` stays the peer, as on gunicorn, for the
    application's own reading of X-Forwarded-For (Werkzeug's ProxyFix, Django's settings)."""

    # An application waits on the loop thread only through its body's reader and its streamed
    # body, which wake the loop at once: its answers may wake it once per burst while the
    # pool's controller sees it compute.
    waits_on_loop = False

    def __init__(self, app: WSGIApplication, *, script_name: str = "",
                 url_scheme: str | None = None,
                 server_name: str = "localhost", server_port: int = 80,
                 underscore_headers: bool = False, proxies: Proxies | None = None,
                 multiprocess: bool = False) -> None:
        self.app, self.script_name, self.url_scheme = app, script_name.rstrip("/"), url_scheme
        self.proxies = proxies
        self.server_name, self.server_port = server_name, str(server_port)
        self.underscore_headers = underscore_headers
        self._errors = _Errors()
        self._keys: dict[bytes, str] = {}       # header field name -> environ key (_key)
        # what reading an application's start_response fields gave, for equal fields, and
        # the environ entries of a request's fields, for equal fields (kept.py; any of the
        # pool's threads)
        self.heads = KeptHeads(_read_head, str)
        self.fields = KeptHeads(self._entries, bytes)
        # every environ begins as a copy of this: the entries alike for every request, and
        # places for the others (set by environ), so that the copy never grows its table;
        # copying costs a third of making the dict entry by entry
        self._base: WSGIEnvironment = {
            "REQUEST_METHOD": "", "SCRIPT_NAME": self.script_name, "PATH_INFO": "",
            "QUERY_STRING": "", "SERVER_NAME": self.server_name, "SERVER_PORT": self.server_port,
            "SERVER_PROTOCOL": "", "SERVER_SOFTWARE": server_software(),
            "REMOTE_ADDR": "", "REMOTE_PORT": "",
            "wsgi.version": (1, 0), "wsgi.url_scheme": "", "wsgi.input": None,
            "wsgi.input_terminated": True, "wsgi.errors": self._errors,
            "wsgi.file_wrapper": FileWrapper, "wsgi.multithread": True,
            # (True when other processes run the same application: a server's workers)
            "wsgi.multiprocess": multiprocess, "wsgi.run_once": False,
        }

    def environ(self, req: HttpRequest) -> WSGIEnvironment:
        path = req.path
        if "%" in path:                        # (most paths have nothing to unquote)
            path = unquote_to_bytes(path).decode("latin-1")
        if self.script_name and path.startswith(self.script_name):
            path = path[len(self.script_name):]
        peer = req.peer or ("", 0)
        env = self._base.copy()
        env["REQUEST_METHOD"] = req.method
        env["PATH_INFO"] = path
        env["QUERY_STRING"] = req.query
        env["SERVER_PROTOCOL"] = _PROTOCOLS.get(req.version) or f"HTTP/{req.version}"
        env["REMOTE_ADDR"] = str(peer[0])
        env["REMOTE_PORT"] = str(peer[1]) if len(peer) > 1 else ""
        scheme = None
        if req.proxied and self.proxies is not None:
            scheme = self.proxies.forwarded(peer, req.headers)[0]
        env["wsgi.url_scheme"] = scheme or self.url_scheme or req.scheme
        env["wsgi.input"] = req.stream if req.stream is not None else io.BytesIO(req.body)
        env.update(self.fields.get(tuple(req.headers)))
        return env

    def _entries(self, fields: tuple[Any, ...]) -> dict[str, str]:
        """The environ entries of a request's header fields: CONTENT_TYPE, CONTENT_LENGTH and
        HTTP_*, a field sent twice joined (cookies with "; ")."""
        entries: dict[str, str] = {}
        keys = self._keys
        for name, value in fields:
            key = keys.get(name)
            if key is None:
                key = self._key(name)
            if not key:
                continue
            text = value.decode("latin-1")
            if key in entries and key.startswith("HTTP_"):
                text = entries[key] + ("; " if key == "HTTP_COOKIE" else ",") + text
            entries[key] = text
        return entries

    def _key(self, name: bytes) -> str:
        """The environ key of a header field name, "" to drop it; the first few hundred names
        seen are remembered (clients send the same few). Names come in lower case."""
        key = _SPECIAL.get(name)
        if key is None:
            # (find, not "in": CPython's bytes.__contains__ first tries the needle as an int,
            # and the TypeError it raises and clears costs more than the rest of this)
            if not self.underscore_headers and name.find(b"_") >= 0:
                key = ""
            else:
                key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
        if len(self._keys) < _KEYS_KEPT:
            self._keys[name] = key
        return key

    def handle_event(self, req: HttpRequest) -> None:
        _Exchange(self, req).run()


class _Exchange:
    """One request through the application: start_response, write(), the iterable."""

    __slots__ = ("counted", "handler", "head", "head_only", "pieces", "reason", "req", "status",
                 "stream")

    def __init__(self, handler: WsgiHandler, req: HttpRequest) -> None:
        self.handler, self.req = handler, req
        self.status: int | None = None
        self.reason: str | None = None
        self.head = responses.NO_HEAD              # the application's fields, once started
        self.stream: StreamBody | None = None      # once the head has gone out
        self.pieces: list[bytes] = []              # body held back: known to be whole
        self.head_only = req.method == "HEAD"
        self.counted = 0                           # body bytes of a HEAD, not sent

    def start_response(self, status: str, headers: Headers,
                       exc_info: Any = None) -> Callable[[bytes], None]:
        if exc_info is not None:
            try:
                if self.stream is not None:        # too late to change the status: re-raise
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
            self.pieces = []                       # the body of the answer being replaced
        elif self.status is not None:
            raise AssertionError("start_response called twice without exc_info")
        code = _STANDARD.get(status)               # "200 OK": nothing to check or keep
        if code is not None:
            self.reason = None
        else:
            code = _status_code(status)
            # the server's phrase comes from a table; only another one is sent as given (an
            # older one too: "413 Request Entity Too Large" is the application's to say)
            reason = status.partition(" ")[2]
            self.reason = None if responses.PHRASES.get(code) == reason else reason
        # (taken as they are now: fields added to the list later are not sent, as gunicorn and
        # waitress copy them; an iterator of fields is taken whole)
        self.head = self.handler.heads.get(tuple(headers))
        self.status = code
        return self.written

    def written(self, data: bytes) -> None:
        """The write() callable: as ``write``, but its first call sends the head even with no
        bytes, as PEP 3333 has it ("upon the application's first invocation of the write()
        callable"), so that an application can flush its head before a long wait."""
        if not data and self.stream is None and not self.head_only and not self.pieces \
                and self.status is not None:
            self.stream = StreamBody()
            self.req.respond(Response(self.status, self.stream, self.head.headers(),
                                      reason=self.reason))
            return
        self.write(data)

    def write(self, data: bytes) -> None:
        """Body bytes from the application (the iterable's pieces come here too)."""
        if self.status is None:
            raise AssertionError("write() before start_response()")
        if not data:
            return
        if self.head_only:
            self.counted += len(data)
        elif self.stream is not None:
            self.stream.write(data)
        elif not self.pieces and self.head.length == len(data):
            self.pieces.append(bytes(data))        # whole: one bytes at the end
        else:                                      # more may come, later: stream from here
            self.stream = StreamBody()
            self.req.respond(Response(self.status, self.stream, self.head.headers(),
                                      reason=self.reason))
            for piece in (*self.pieces, data):
                self.stream.write(piece)
            self.pieces = []

    def run(self) -> None:
        env = self.handler.environ(self.req)
        result: Any = None
        try:
            result = self.handler.app(env, self.start_response)
            kind = type(result)
            whole = kind is list or kind is tuple
            if whole and self.stream is None and not self.head_only:
                self.pieces += result              # whole: joined once, in _finish
                self._finish()
            elif kind is not FileWrapper or not self._send_file(result):
                for piece in result:
                    self.write(piece)
                    if self.head_only and self.counted and not whole:
                        # A body made piece by piece may take long or never end (an event
                        # stream), and a GET's would go chunked from its first piece: so
                        # does a HEAD's head, without a length (RFC 9110 9.3.2), and the
                        # rest is not asked for (the iterable is closed below). 0: no length.
                        self.counted = 0
                        break
                self._finish()
        except ConnectionError:
            if self.stream is None or not self.stream.gone:
                self.failed()
            # else: the client left while we streamed; nothing to answer
        except Exception:
            self.failed()
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    log.exception("wsgi: close() of the response iterable raised")

    def _finish(self) -> None:
        if self.status is None:
            raise AssertionError("the application returned without calling start_response")
        if self.stream is not None:
            self.stream.finish()
            return
        head, status = self.head, self.status
        if self.head_only:
            self.req.respond(head.head_only(status, self.counted, self.reason))
        else:
            # (one bytes piece is joined as itself, no copy)
            self.req.respond(head.whole(status, b"".join(self.pieces), self.reason))

    def _send_file(self, result: FileWrapper) -> bool:
        """A ``wsgi.file_wrapper`` of a regular file: answer with sendfile (a duplicate
        descriptor, so the application may close its file at once)."""
        if self.status is None or self.head_only:
            return False
        try:
            fd = result.filelike.fileno()
            offset = result.filelike.tell()
            info = os.fstat(fd)
        except (AttributeError, OSError, io.UnsupportedOperation):
            return False
        if not stat.S_ISREG(info.st_mode):
            return False
        count = max(0, info.st_size - offset)
        length = self.head.length
        if length is not None:
            if length > count:
                return False                       # short: let the iterable path deal with it
            count = length
        dup = os.dup(fd)
        self.req.respond(Response(self.status, FileBody(dup, offset, count, CloseDescriptor, dup),
                                  self.head.headers(), reason=self.reason))
        return True

    def failed(self) -> None:
        error = _body_error()
        if error is None:
            log.error("wsgi: %s %s raised\n%s", self.req.method, self.req.target,
                      traceback.format_exc().rstrip())
        if self.stream is None:
            self.req.respond(responses.server_error() if error is None
                             else responses.error(error.status, str(error)))
        else:                                       # the head is out: all we can do is cut it
            self.stream.fail()


def _body_error() -> BodyError | None:
    """The BodyError behind the exception being handled, if reading the request body is what
    failed: the client is answered with the status it deserves, not a 500."""
    exc: BaseException | None = sys.exc_info()[1]
    while exc is not None:
        if isinstance(exc, BodyError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def mount(rt: Runtime, app: WSGIApplication, *, name: str = "wsgi",
          threads: int | Controller = 8, predicate: Any = None, **options: Any) -> Sink:
    """Add a stage running ``app`` on its own thread pool; returns its sink, which an HTTP
    server (or a router in front of several applications) sends HttpRequest events to.
    ``options`` go to ``WsgiHandler``."""
    return rt.add_stage(name, WsgiHandler(app, **options), threads=threads, batch=1,
                        predicate=predicate).sink
