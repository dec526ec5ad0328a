"""The status page and metrics of a service with a cluster stage show the stream's state."""

from __future__ import annotations

import seda
from seda.cluster import RedisQueue
from seda.status import add_status

from tests.helpers import redis_server
from tests.helpers.net import fetch, until


class Nothing(seda.EventHandler):
    def handle_event(self, ev):
        pass


def test_the_page_and_metrics_show_a_cluster_queue():
    url = redis_server.server().url
    rt = seda.Runtime()
    try:
        status = add_status(rt, "mailer", http=None)
        rt.add_stage("deliver", Nothing(), queue=RedisQueue(url))
        status.serve(("127.0.0.1", 0))
        rt.start()
        rt.sink("deliver").enqueue("x")
        until(lambda: rt.stats()["deliver"]["processed"], lambda n: n == 1)
        page = fetch(status.address, "/_seda/")[1]
        assert b"<h2>Cluster queues</h2>" in page and b"<td>seda:deliver</td>" in page
        metrics = fetch(status.address, "/_seda/metrics")[1]
        assert b'seda_stage_cluster{name="dead_letters",stage="deliver"} 0.0' in metrics
        assert b'seda_stage_cluster{name="consumers",stage="deliver"} 1.0' in metrics
    finally:
        rt.stop()
