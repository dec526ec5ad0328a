"""What an HTTP client may send and how long it may take: the server's limits, checked once."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Limits:
    """Sizes in bytes, times in seconds. Each limit answers with its own status and closes the
    connection (after answering every request received before it)."""

    max_request_line: int = 8192       # 414 past it
    max_header_bytes: int = 65536      # 431 past it (and a trailer section past as much)
    max_headers: int = 100             # 431 past it (and trailer fields past as many)
    max_body: int = 2**30              # 413 past it (1 GiB, as waitress)
    stream_body_over: int = 65536      # larger bodies reach the application as they arrive
    #                                    (wsgi.input blocks), and so do chunked ones not ended
    #                                    in their head's packet; smaller ones whole
    max_discard: int = 2**20           # a body the application did not read is drained up to
    #                                    this many bytes so the connection stays open; past it the
    #                                    connection closes after the response
    header_timeout: float = 10.0       # 408: from a request's first byte to its last header
    body_timeout: float = 60.0         # 408: the body stalls this long between two reads
    keepalive_timeout: float = 15.0    # an idle keep-alive connection is closed after this
    response_timeout: float = 60.0     # a request the application never answers gets 500
    max_connections: int = 16384       # past it a new connection gets 503 and is closed
    max_pipelined: int = 32            # unanswered requests before reading pauses

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{f.name} must be a number > 0, got {value!r}")
