"""Request rate, responses by status and errors over the last minute, from the HTTP stage's
cumulative counters sampled once a second: no work per request, and a rate is the difference
between now and the oldest sample of the minute.

Errors are what an operator must look at: 5xx answers, responses that never reached the
client (``dropped``: the connection went first; ``aborted``), and exceptions in any stage's
handler. A dropped response is counted under its status too (it was encoded, then lost).
"""

from __future__ import annotations

from collections import deque
from typing import Any

WINDOW = 60.0           # seconds of history
EVERY = 1.0             # seconds between samples
GAUGES = frozenset({"connections"})     # HTTP stage counters that are not cumulative
LOST = ("dropped", "aborted")           # responses that never went out: errors
HANDLER_ERRORS = "handler errors"


def counters(stats: dict[str, Any], http: str | None) -> dict[str, float]:
    """The cumulative counters followed, flat: responses by status (``"200"``), the HTTP
    stage's other counts (``shed``, ``dropped``..., whatever ``HttpServer.stats`` adds later),
    and the handler exceptions of every stage. ``http`` None: a service without HTTP."""
    own = _http_counts(stats, http)
    flat: dict[str, float] = {str(code): n for code, n in (own.get("responses") or {}).items()}
    for key, value in own.items():
        if key not in GAUGES and isinstance(value, int | float) and not isinstance(value, bool):
            flat[key] = value
    flat[HANDLER_ERRORS] = sum(s.get("errors", 0) for s in stats.values())
    return flat


def connections(stats: dict[str, Any], http: str | None) -> int:
    open_now: int = _http_counts(stats, http).get("connections", 0)
    return open_now


def _http_counts(stats: dict[str, Any], http: str | None) -> dict[str, Any]:
    """The HTTP stage's own counters (its handler's stats); none without an HTTP stage."""
    if http is None:
        return {}
    counts: dict[str, Any] = stats.get(http, {}).get("handler") or {}
    return counts


class Traffic:
    """The last minute of samples; ``summary`` compares the counters now with the oldest."""

    def __init__(self, window: float = WINDOW, every: float = EVERY) -> None:
        self.window = window
        self.samples: deque[tuple[float, dict[str, float]]] = deque(
            maxlen=int(window / every) + 2)

    def sample(self, now: float, counts: dict[str, float]) -> None:
        self.samples.append((now, counts))

    def summary(self, now: float, counts: dict[str, float],
                open_connections: int) -> dict[str, Any]:
        """``connections`` open now, ``window_s`` the seconds looked back (less than a minute
        just after the start), ``requests_per_s`` over them, and under ``recent`` and
        ``total`` the counts (see ``tally``) over the window and since the start."""
        then, base = now, counts
        for t, sample in self.samples:
            if now - t <= self.window:                 # the oldest sample in the window
                then, base = t, sample
                break
        recent = {k: max(0.0, v - base.get(k, 0)) for k, v in counts.items()}
        span = now - then
        low = tally(recent)
        return {"connections": open_connections, "window_s": span,
                "requests_per_s": low["requests"] / span if span > 0 else 0.0,
                "recent": low, "total": tally(counts)}


def tally(flat: dict[str, float]) -> dict[str, Any]:
    """``requests`` (responses of any status), ``responses`` by code, ``classes`` (2xx...),
    ``errors`` (5xx, lost responses, handler exceptions, and their ``total``) and ``counts``:
    the HTTP stage's other counters (shed, timeouts, refused...)."""
    responses = {k: v for k, v in sorted(flat.items()) if k.isdigit()}
    classes: dict[str, float] = {}
    for code, n in responses.items():
        classes[f"{code[0]}xx"] = classes.get(f"{code[0]}xx", 0) + n
    counts = {k: v for k, v in flat.items() if not k.isdigit() and k != HANDLER_ERRORS}
    errors = {"5xx": classes.get("5xx", 0), **{k: counts[k] for k in LOST if k in counts},
              "handler": flat.get(HANDLER_ERRORS, 0)}
    errors["total"] = sum(errors.values())
    return {"requests": sum(responses.values()), "responses": responses, "classes": classes,
            "errors": errors, "counts": counts}
