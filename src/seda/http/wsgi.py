"""WSGI (PEP 3333): an application runs in a stage of its own, with its own thread pool and
admission predicate, fed HttpRequest events by the HTTP server stage.

A response is buffered only until the application produces a second piece of body; from then
on it streams (``StreamBody``), so a large or endless response never sits in memory whole.
"""

from __future__ import annotations

import io
import logging
import traceback
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from ..stage import EventHandler
from . import response as responses
from .request import HttpRequest
from .response import Response, StreamBody

log = logging.getLogger("seda.wsgi")

_SPECIAL = {b"content-type": "CONTENT_TYPE", b"content-length": "CONTENT_LENGTH"}


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


class WsgiHandler(EventHandler):
    """Runs ``app`` for each HttpRequest. Use it in a blocking stage: applications block."""

    def __init__(self, app: Callable, *, script_name: str = "", url_scheme: str = "http",
                 server_name: str = "localhost", server_port: int = 80) -> None:
        self.app, self.script_name, self.url_scheme = app, script_name.rstrip("/"), url_scheme
        self.server_name, self.server_port = server_name, str(server_port)
        self._errors = _Errors()

    def environ(self, req: HttpRequest) -> dict:
        path = unquote_to_bytes(req.path).decode("latin-1")
        if self.script_name and path.startswith(self.script_name):
            path = path[len(self.script_name):]
        peer = getattr(req.connection.conn, "peer", None) or ("", 0)
        env = {
            "REQUEST_METHOD": req.method,
            "SCRIPT_NAME": self.script_name,
            "PATH_INFO": path,
            "QUERY_STRING": req.query,
            "SERVER_NAME": self.server_name,
            "SERVER_PORT": self.server_port,
            "SERVER_PROTOCOL": f"HTTP/{req.version}",
            "REMOTE_ADDR": str(peer[0]),
            "REMOTE_PORT": str(peer[1]),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": self.url_scheme,
            "wsgi.input": req.stream if req.stream is not None else io.BytesIO(req.body),
            "wsgi.input_terminated": True,
            "wsgi.errors": self._errors,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in req.headers:
            lower = name.lower()
            key = _SPECIAL.get(lower) or "HTTP_" + lower.decode("latin-1").upper().replace("-", "_")
            text = value.decode("latin-1")
            env[key] = f"{env[key]},{text}" if key in env and key.startswith("HTTP_") else text
        return env

    def handle_event(self, req: HttpRequest) -> None:
        _Exchange(self, req).run()


class _Exchange:
    """One request through the application: start_response, write(), the iterable."""

    def __init__(self, handler: WsgiHandler, req: HttpRequest) -> None:
        self.handler, self.req = handler, req
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.stream: StreamBody | None = None      # once the head has gone out
        self.first: bytes | None = None            # body held back until we know if it streams
        self.head_only = req.method == "HEAD"

    def start_response(self, status: str, headers: list, exc_info: Any = None) -> Callable:
        if exc_info is not None:
            try:
                if self.stream is not None:        # too late to change the status: re-raise
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
        elif self.status is not None:
            raise AssertionError("start_response called twice without exc_info")
        code = status.split(" ", 1)[0]
        if len(code) != 3 or not code.isdigit():
            raise ValueError(f"bad WSGI status {status!r}")
        for name, value in headers:
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(f"WSGI headers are (str, str), got {(name, value)!r}")
        self.status, self.headers = int(code), list(headers)
        return self.write

    def write(self, data: bytes) -> None:
        """Body bytes from the application (the iterable's pieces come here too)."""
        if self.status is None:
            raise AssertionError("write() before start_response()")
        if not data or self.head_only:
            return
        if self.stream is not None:
            self.stream.write(data)
        elif self.first is None:
            self.first = bytes(data)
        else:                                      # a second piece: stream from now on
            self.stream = StreamBody()
            self.req.respond(Response(self.status, self.stream, self.headers))
            self.stream.write(self.first)
            self.stream.write(data)
            self.first = None

    def run(self) -> None:
        env = self.handler.environ(self.req)
        result: Any = None
        try:
            result = self.handler.app(env, self.start_response)
            for piece in result:
                self.write(piece)
            if self.status is None:
                raise AssertionError("the application returned without calling start_response")
        except ConnectionError:
            return                                 # the client left while we streamed
        except Exception:
            self.failed()
            return
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    log.exception("wsgi: close() of the response iterable raised")
        if self.stream is not None:
            self.stream.finish()
        else:
            self.req.respond(Response(self.status, self.first or b"", self.headers))

    def failed(self) -> None:
        log.error("wsgi: %s %s raised\n%s", self.req.method, self.req.target,
                  traceback.format_exc().rstrip())
        if self.stream is None:
            self.req.respond(responses.server_error())
        else:                                       # the head is out: all we can do is cut it
            self.stream.broken()
            self.req.connection.conn.abort(RuntimeError("the WSGI application failed"))


def mount(rt: Any, app: Callable, *, name: str = "wsgi", threads: Any = 8, predicate: Any = None,
          **options: Any) -> Any:
    """Add a stage running ``app`` on its own thread pool; returns its sink, which an HTTP
    server (or a router in front of several applications) sends HttpRequest events to."""
    return rt.add_stage(name, WsgiHandler(app, **options), threads=threads, batch=1,
                        predicate=predicate).sink

