"""``/_seda/metrics``: the status in Prometheus's text format, read when scraped. Stage metrics
are ``seda_stage_*``; the service's own are prefixed with its name (``haboob_http_*``). What a
handler counts itself (``EventHandler.stats``) is ``seda_stage_handler{stage, name}``, one
series per number, nested names joined by dots (``routed.query``): untyped, since only the
handler knows which of its numbers are counters.

With several workers every series carries a ``worker`` label (the process id) and every scrape,
whichever worker answers it, has every live worker's series. Summed counters would go down
when a worker is replaced, which Prometheus takes for a reset; per-worker counters only ever
go up, and ``sum without (worker) (rate(...))`` is the whole server's rate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

_STAGE = {                  # rt.stats() key -> (metric, help, is a counter)
    "queue": ("seda_stage_queue", "Events waiting", False),
    "threads": ("seda_stage_threads", "Threads", False),
    "batch": ("seda_stage_batch", "Batch size", False),
    "processed": ("seda_stage_processed", "Events handled", True),
    "rejected": ("seda_stage_rejected", "Events refused", True),
    "errors": ("seda_stage_errors", "Handler errors", True),
    "p90_ms": ("seda_stage_service_p90_seconds", "90th percentile handler time per event",
               False),
}


def handler_values(stats: Any, prefix: str = "") -> list[tuple[str, float]]:
    """The numbers in a handler's ``stats()``, flat: ``{"routed": {"query": 3}}`` ->
    ``[("routed.query", 3)]``; anything that is not a number is left out."""
    if isinstance(stats, dict):
        return [pair for key, value in stats.items()
                for pair in handler_values(value, f"{prefix}{key}.")]
    if isinstance(stats, int | float) and not isinstance(stats, bool):
        return [(prefix[:-1], stats)]
    return []


class Metrics:
    """A Prometheus collector over worker snapshots (``workers()``: the live ones, each with
    ``pid``, ``started``, ``stages`` and ``traffic``); ``service`` prefixes the service's own
    metrics, ``http`` says whether it has HTTP traffic to show; with ``labelled``, a worker
    label."""

    def __init__(self, workers: Callable[[], list[dict[str, Any]]], service: str, http: bool,
                 labelled: bool) -> None:
        self.workers, self.service, self.http, self.labelled = workers, service, http, labelled

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            UnknownMetricFamily,
        )

        worker = ["worker"] if self.labelled else []

        def family(name: str, text: str, counter: bool,
                   labels: list[str]) -> CounterMetricFamily | GaugeMetricFamily:
            kind = CounterMetricFamily if counter else GaugeMetricFamily
            return kind(name, text, labels=[*worker, *labels])

        stage = {key: family(name, text, counter, ["stage"])
                 for key, (name, text, counter) in _STAGE.items()}
        rate = family("seda_stage_admission_rate", "Admission rate, events/s", False, ["stage"])
        own = UnknownMetricFamily("seda_stage_handler", "What a stage's handler counts itself",
                                  labels=[*worker, "stage", "name"])
        cluster = UnknownMetricFamily("seda_stage_cluster", "A cluster stage's stream (backlog, "
                                      "pending, dead_letters, ...) and this node's redeliveries",
                                      labels=[*worker, "stage", "name"])
        started = family(f"{self.service}_start_time_seconds",
                         "When the process started (Unix time)", False, [])
        conns = family(f"{self.service}_http_connections", "Open connections", False, [])
        responses = family(f"{self.service}_http_responses", "Responses by status code", True,
                           ["code"])
        failed = family(f"{self.service}_http_requests_failed",
                        "Requests that went wrong: shed (503 at once), timeouts, refused "
                        "connections, dropped (the connection went before the response)",
                        True, ["reason"])
        for snap in self.workers():
            who = [str(snap["pid"])] if self.labelled else []
            for name, s in snap["stages"].items():
                for key, fam in stage.items():
                    fam.add_metric([*who, name], s[key] / 1000 if key == "p90_ms" else s[key])
                admission = s.get("control", {}).get("admission", {})
                if "rate" in admission:
                    rate.add_metric([*who, name], admission["rate"])
                for key, value in handler_values(s.get("handler")):
                    own.add_metric([*who, name, key], value)
                for key, value in handler_values(s.get("cluster")):
                    cluster.add_metric([*who, name, key], value)
            traffic = snap["traffic"]
            started.add_metric(who, snap["started"])
            conns.add_metric(who, traffic["connections"])
            for code, n in traffic["total"]["responses"].items():
                responses.add_metric([*who, code], n)
            for reason, n in traffic["total"]["counts"].items():
                failed.add_metric([*who, reason], n)
        yield from stage.values()
        yield from (rate, own, cluster, started)
        if self.http:
            yield from (conns, responses, failed)


def exposition(workers: Callable[[], list[dict[str, Any]]], service: str, http: bool, labelled: bool
               ) -> Callable[[], tuple[bytes, str]] | None:
    """A function returning the metrics text and its content type (see ``Metrics``); None
    without prometheus-client (an extra: pip install pyseda[status])."""
    try:
        from prometheus_client import CollectorRegistry
        from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
    except ImportError:
        return None
    registry = CollectorRegistry()
    registry.register(Metrics(workers, service, http, labelled))
    return lambda: (generate_latest(registry), CONTENT_TYPE_LATEST)
