"""Ready answers: responses an application publishes by request target, so that the HTTP stage
answers a plain GET while parsing it, without the hops through the application's stages.

This is the hot path of a static web server (nginx's open_file_cache plays the same part): the
answer to a cached file depends on its target alone until the file may have changed. The
application owns the table and keeps it true; the HTTP stage only reads it, on the loop thread.
"""

from __future__ import annotations

from collections.abc import Callable

from .response import Prepared


class ReadyAnswer:
    """The answer to a plain GET of one target (no body, no conditional or range header), good
    until ``fresh_until`` (``time.monotonic()``). ``hits`` counts the requests the HTTP stage
    answered with it, for the application's bookkeeping.

    With ``renew``, the answer goes on for ``grace`` seconds past ``fresh_until`` while its
    owner renews it: the first request that finds it due calls ``renew()`` (on the loop
    thread, once) and, with every request until the owner publishes a renewed answer, still
    gets this one. The requests for a file in use then never leave the HTTP stage, where
    without it each would go to the application until one of them had renewed it."""

    __slots__ = ("fresh_until", "hits", "renew", "response", "stale_until")

    def __init__(self, response: Prepared, fresh_until: float,
                 renew: Callable[[], object] | None = None, grace: float = 0.0) -> None:
        self.response, self.fresh_until = response, fresh_until
        self.renew = renew
        self.stale_until = fresh_until + grace if renew is not None else fresh_until
        self.hits = 0

    def lapsed(self, now: float) -> bool:
        """Past ``fresh_until``: whether the answer may no longer be given (past its grace);
        the first call within it asks the owner to renew it."""
        if now >= self.stale_until:
            return True
        renew, self.renew = self.renew, None
        if renew is not None:
            renew()
        return False
