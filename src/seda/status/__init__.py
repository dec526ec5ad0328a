"""``/_seda/``: what a service is doing, for operators (a page: traffic and errors over the
last minute, the workers, the stage graph and every stage), programs (JSON, DOT) and
Prometheus (``/_seda/metrics``). Any service serves it: ``add_status(rt, "name")``, then route
``PREFIX`` to ``status.sink`` or ``status.serve(address)``.
"""

from .share import forget_worker, publish_supervisor
from .stage import PREFIX, Status, add_status, served_at

__all__ = ["PREFIX", "Status", "add_status", "forget_worker", "publish_supervisor", "served_at"]
