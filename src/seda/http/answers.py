"""Ready answers: responses an application publishes by request target, so that the HTTP stage
answers a plain GET while parsing it, without the hops through the application's stages.

This is the hot path of a static web server (nginx's open_file_cache plays the same part): the
answer to a cached file depends on its target alone until the file may have changed. The
application owns the table and keeps it true; the HTTP stage only reads it, on the loop thread.
"""

from __future__ import annotations

from .response import Prepared


class ReadyAnswer:
    """The answer to a plain GET of one target (no body, no conditional or range header), good
    until ``fresh_until`` (``time.monotonic()``). ``hits`` counts the requests the HTTP stage
    answered with it, for the application's bookkeeping."""

    __slots__ = ("fresh_until", "hits", "response")

    def __init__(self, response: Prepared, fresh_until: float) -> None:
        self.response, self.fresh_until = response, fresh_until
        self.hits = 0
