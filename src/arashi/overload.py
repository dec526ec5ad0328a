"""How Arashi's web stages meet overload (thesis chapter 7): which admission predicate guards a
request type's stage (``arashi serve --admission NAME``), and where (``--admission-at``).

Every predicate is built from the same fact, the p90 target, as the synthetic experiments build
theirs (benchmarks/overload_spike.py), so a run can put each in the same place on the same load:

    bound         ResponseTimeBound: a queue bound from the measured capacity (the default)
    rtc           ResponseTimeController: the thesis's token bucket, Fig. 50 defaults
    queue-delay   QueueDelay (CoDel's standing queue): target/2 within an interval of target
    concurrency   AdaptiveConcurrency (Vegas's gradient): needs no target
    none          no admission control (the target may still drive degradation)

``bound`` and ``rtc`` have a multiclass form (classes 0-9 from a cookie, thesis 7.2.3); the
other two have none. At the front door (``--admission-at front``) one stage runs every request
type and one predicate sees the whole request, as a controller in front of the service would;
on each stage (the default), each request type has its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

# Haboob's public classifier, not a copy: the same rule (a class 0-9 from a cookie, anything
# else class 0) and the same once-per-Cookie-header parsing, for both services' experiments
from haboob import CLASSES, classifier
from seda.control import (
    AdaptiveConcurrency,
    MulticlassResponseTimeController,
    QueueDelay,
    ResponseTimeBound,
    ResponseTimeController,
)

POLICIES = ("bound", "rtc", "queue-delay", "concurrency", "none")
PLACES = ("stage", "front")
_CLASSED = ("bound", "rtc", "none")
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def check(policy: str, class_cookie: str | None, *, front: bool = False,
          degrade: bool = False) -> None:
    """ValueError, saying why, for what Arashi cannot build."""
    if policy not in POLICIES:
        raise ValueError(f"no admission policy {policy!r} (one of {', '.join(POLICIES)})")
    if class_cookie is not None and policy not in _CLASSED:
        raise ValueError(f"--admission {policy} has no request classes: use bound or rtc "
                         "with --class-cookie")
    if degrade and (front or class_cookie is not None):
        raise ValueError("--degrade works on each request type's stage, for one class of "
                         "requests")


def admission(target_p90: float | None, class_cookie: str | None = None,
              policy: str = "bound") -> Any:
    """A request type stage's predicate: None without a target (or for ``none``), else
    ``policy`` holding each stage's p90 near ``target_p90`` seconds; with ``class_cookie``
    one estimate per request class 0-9 from that cookie (under load the lower classes are
    refused first, as Haboob's ``--class-header cookie:NAME``)."""
    check(policy, class_cookie)
    if target_p90 is None or policy == "none":
        return None
    if class_cookie is not None:
        classify = classifier(f"cookie:{class_cookie}")
        targets = {c: target_p90 for c in CLASSES}
        if policy == "rtc":
            return MulticlassResponseTimeController(classify, targets)
        return ResponseTimeBound(classify=classify, targets=targets)
    if policy == "rtc":
        return ResponseTimeController(target_p90)
    if policy == "queue-delay":
        return QueueDelay(target=target_p90 / 2, interval=target_p90)
    if policy == "concurrency":
        return AdaptiveConcurrency()
    return ResponseTimeBound(target_p90)


def front_door(apps: Mapping[str, WSGIApp], kind_of: Callable[[str], str | None]) -> WSGIApp:
    """Every request type's application behind one, for the front door's single stage: each
    request goes to its type's application (``kind_of(path)``, as the router sends it)."""
    def application(environ: dict[str, Any], start_response: Callable[..., Any]
                    ) -> Iterable[bytes]:
        kind = kind_of(environ.get("PATH_INFO", "/"))
        assert kind is not None, "the router sends only paths it knows"
        return apps[kind](environ, start_response)
    return application
