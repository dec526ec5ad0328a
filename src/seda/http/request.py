"""The event an HTTP server stage emits for each request."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .body import BodyReader

if TYPE_CHECKING:
    from .response import Answer


class ClientDisconnected(OSError):
    """Sending to a client that has gone (ASGI 2.4: ``send()`` after ``http.disconnect``)."""


class Responder(Protocol):
    """Where a request's answer goes: the connection it came on (the HTTP server's)."""

    def respond(self, request: HttpRequest, response: Answer) -> None: ...

    def watch(self, request: HttpRequest, callback: Callable[[], None] | None) -> None: ...


class HttpRequest:
    """One parsed request. ``headers`` keeps the (name, value) byte pairs in arrival order,
    names in lower case and values without surrounding whitespace; a list of the request's
    own. ``header(name)`` finds one case-insensitively.
    ``respond(response)`` may be called from any thread; responses go out in request order even
    when answered out of order. A large body (or a chunked one still coming after its head)
    arrives as ``stream`` (a BodyReader) while ``body`` stays empty; trailer fields of a
    chunked body are in ``trailers`` once the body is complete, never among the headers.
    ``scheme`` is "https" on a TLS connection; ``peer`` is the client's address.
    ``upgrade``: an HTTP/1.1 head with an Upgrade field that its Connection names (the
    client asks to switch protocols), noted as it was parsed; ``proxied``: an X-Forwarded-*
    field is among the headers (for a ``seda.http.Proxies`` to read, if it believes the peer).
    The server answers 500 itself if the application has not answered within
    ``Limits.response_timeout`` of ``owed_since`` (the server's ``time.monotonic()`` when the
    request was handed over, or when its streamed body ended), unless the request is
    ``patient``: an application that answers in its own time, as an ASGI one may (a long
    poll), sets that."""

    __slots__ = ("body", "connection", "headers", "keep_alive", "method", "owed_since", "path",
                 "patient", "peer", "proxied", "query", "scheme", "seq", "stream", "target",
                 "trailers", "upgrade", "version")
    owed_since: float                  # set by the protocol as it hands the request over

    def __init__(self, method: str, target: str, path: str, query: str,
                 headers: list[tuple[bytes, bytes]], body: bytes, version: str,
                 connection: Responder, seq: int, keep_alive: bool, peer: Any = None,
                 scheme: str = "http", upgrade: bool = False, proxied: bool = False) -> None:
        self.method, self.target, self.path, self.query = method, target, path, query
        self.headers, self.body, self.version = headers, body, version
        self.connection, self.seq, self.keep_alive = connection, seq, keep_alive
        self.peer, self.scheme, self.upgrade = peer, scheme, upgrade
        self.proxied = proxied
        self.stream: BodyReader | None = None
        self.trailers: list[tuple[bytes, bytes]] | tuple[()] = ()
        self.patient = False

    def __repr__(self) -> str:
        return f"<HttpRequest {self.method} {self.target} HTTP/{self.version}>"

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), decoded as latin-1; None if absent."""
        key = name.lower().encode("latin-1")
        for k, v in self.headers:
            if k.lower() == key:               # (lower already, unless made elsewhere)
                return v.decode("latin-1")
        return None

    def respond(self, response: Answer) -> None:
        self.connection.respond(self, response)

    def on_gone(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback()`` if the client goes away (closes the connection or stops sending)
        while this request is being answered: at once if it has, else from the server's loop
        thread, perhaps twice. ``None`` stops watching; a watcher must stop once answered.
        For applications that can stop work nobody waits for (ASGI's ``http.disconnect``)."""
        self.connection.watch(self, callback)
