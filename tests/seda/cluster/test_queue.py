"""RedisQueue's settings are checked when it is made, and it fits add_stage's rules."""

from __future__ import annotations

import pytest

import seda
from seda.cluster import RedisQueue
from seda.control import ThreadPoolController


@pytest.mark.parametrize("options", [
    {"claim_idle": 0}, {"max_deliveries": 0}, {"partitions": 0}, {"refresh": -1},
    {"block": 1.0, "timeout": 0.5},
])
def test_bad_settings_are_refused(options):
    with pytest.raises(ValueError):
        RedisQueue(**options)


class Nothing(seda.EventHandler):
    def handle_event(self, ev):
        pass


@pytest.mark.parametrize("options", [{"blocking": False}, {"processes": 2},
                                     {"threads": ThreadPoolController()}])
def test_a_cluster_stage_runs_on_threads_of_its_own(options):
    rt = seda.Runtime()
    with pytest.raises(ValueError, match=r"threads|queue="):
        rt.add_stage("s", Nothing(), queue=RedisQueue(), **options)
    rt.stop()


def test_no_connection_is_made_before_start():
    rt = seda.Runtime()
    stage = rt.add_stage("s", Nothing(), queue=RedisQueue("redis://127.0.0.1:1/0"))
    assert stage.manager.kind == "cluster" and rt.stats()["s"]["cluster"]["backlog"] == 0
    rt.stop()


def test_partitions_need_a_key():
    rt = seda.Runtime()
    with pytest.raises(ValueError, match="give key="):
        rt.add_stage("s", Nothing(), queue=RedisQueue(partitions=4))
    rt.stop()
