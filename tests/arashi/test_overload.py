"""Which admission controller guards Arashi's stages (``--admission``) and where
(``--admission-at``): each policy built from the target, the classes only where a policy has
them, and the front door's one stage answering every request type."""

from __future__ import annotations

import pytest
import requests

from arashi.overload import POLICIES, admission, check, front_door
from seda.control import (
    AdaptiveConcurrency,
    MulticlassResponseTimeController,
    QueueDelay,
    ResponseTimeBound,
    ResponseTimeController,
)

from tests.helpers import WAIT
from tests.helpers.arashi_env import arashi, new_store
from tests.helpers.arashi_web import get, log_in, serving


def test_each_policy_is_built_from_the_target():
    assert admission(0.5, policy="none") is None and admission(None, policy="rtc") is None
    assert type(admission(0.5)) is ResponseTimeBound
    rtc = admission(0.5, policy="rtc")
    assert type(rtc) is ResponseTimeController and rtc.target == 0.5
    delay = admission(0.5, policy="queue-delay")
    assert isinstance(delay, QueueDelay) and (delay.target, delay.interval) == (0.25, 0.5)
    assert isinstance(admission(0.5, policy="concurrency"), AdaptiveConcurrency)


def test_classes_only_where_a_policy_has_them():
    rtc = admission(0.5, "tier", "rtc")
    assert isinstance(rtc, MulticlassResponseTimeController) and rtc.classes == list(range(10))
    assert sorted(admission(0.5, "tier", "bound").classes) == list(range(10))
    for policy in ("queue-delay", "concurrency"):
        with pytest.raises(ValueError, match="has no request classes"):
            admission(0.5, "tier", policy)
    with pytest.raises(ValueError, match="no admission policy 'fast'"):
        check("fast", None)
    with pytest.raises(ValueError, match="--degrade works on each request type's stage"):
        check("bound", None, front=True, degrade=True)
    assert set(POLICIES) == {"bound", "rtc", "queue-delay", "concurrency", "none"}


def test_the_front_door_sends_each_request_to_its_type():
    def answering(kind):
        def app(environ, start_response):
            start_response("200 OK", [])
            return [kind.encode()]
        return app
    app = front_door({k: answering(k) for k in ("login", "show")},
                     {"/login": "login", "/message/1": "show"}.get)
    assert app({"PATH_INFO": "/message/1"}, lambda *a: None) == [b"show"]
    assert app({"PATH_INFO": "/login"}, lambda *a: None) == [b"login"]


def test_serve_with_one_controller_at_the_front_door(tmp_path):
    store = new_store(tmp_path)
    try:
        store.add_user("alice", "alice-pw")
    finally:
        store.pool.close()
    with serving(tmp_path, "--target-p90", "500", "--admission", "rtc",
                 "--admission-at", "front") as server:
        client = log_in(server, "alice", "alice-pw")
        assert get(client, server.url + "/folders").status_code == 200
        assert get(client, server.url + "/search?q=x").status_code == 200
        stages = requests.get(server.url + "/_seda/stats.json", timeout=WAIT).json()
    front = stages["arashi.front"]
    assert front["processed"] >= 3 and front["control"]["admission"]["target_ms"] == 500
    assert "rate" in front["control"]["admission"]              # the thesis's token bucket
    assert "arashi.login" not in stages and "arashi.search" not in stages


def test_serve_refuses_what_it_cannot_build(tmp_path):
    new_store(tmp_path).pool.close()
    bad = arashi("serve", "--data", str(tmp_path), "--admission", "rtc")
    assert bad.returncode == 1 and "--admission needs --target-p90" in bad.stderr
    bad = arashi("serve", "--data", str(tmp_path), "--admission-at", "front")
    assert bad.returncode == 1 and "--admission-at needs --target-p90" in bad.stderr
    bad = arashi("serve", "--data", str(tmp_path), "--target-p90", "50", "--admission",
                 "concurrency", "--class-cookie", "tier")
    assert bad.returncode == 1 and "has no request classes" in bad.stderr
    bad = arashi("serve", "--data", str(tmp_path), "--threads", "0")
    assert bad.returncode == 1 and "--threads 0: at least 1" in bad.stderr
