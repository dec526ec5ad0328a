"""``/_seda/``: what the server is doing, for operators (a page: traffic and errors over the
last minute, the workers, the stage graph and every stage), programs (JSON, DOT) and
Prometheus (``/_seda/metrics``)."""

from .stage import NAME, PREFIX, Status, add_status, served_at

__all__ = ["NAME", "PREFIX", "Status", "add_status", "served_at"]
