"""serve --redis: mail accepted by a node is stored through the cluster stage, once; a node
that died after its 250 loses nothing; Redis out of reach answers 451, never a lost message."""

from __future__ import annotations

import signal
import smtplib
import subprocess
import sys
from pathlib import Path

import pytest

from arashi.events import STORE_TYPES, Accepted
from arashi.store import INBOX
from seda.cluster import Codec

from tests.helpers import WAIT, redis_server
from tests.helpers.arashi_env import new_store, running, store_args
from tests.helpers.net import until
from tests.helpers.postgres import BACKENDS, database_url


@pytest.fixture(params=BACKENDS)
def where(request, tmp_path):
    """(data directory, database URL or None) with users alice and bob."""
    data = tmp_path / "data"
    url = database_url(request.param, data)
    store = new_store(data, url)
    store.add_user("alice", "pw")
    store.add_user("bob", "pw")
    store.pool.close()
    return data, (url if request.param == "postgresql" else None)


def count(service, user: str) -> int:
    store = service.store
    uid = store.user_id(user)
    return next(f.count for f in store.folders(uid) if f.name == INBOX)


def test_mail_accepted_here_is_stored_through_the_cluster_stage_once(where):
    server = redis_server.server()
    client = server.client()
    with running(*where, redis=server.url) as service, \
            smtplib.SMTP(*service.smtp, timeout=WAIT) as smtp:
        smtp.sendmail("x@else.test", ["alice@example.org", "bob@example.org"],
                      b"Subject: hi\r\n\r\nbody\r\n")
        until(lambda: (count(service, "alice"), count(service, "bob")), lambda c: c == (1, 1))
        until(lambda: client.xlen("arashi:store"), lambda n: n == 0)   # acknowledged
        with service.store.pool.transaction() as tx:
            assert tx.execute("SELECT count(*) FROM deliveries").fetchone()[0] == 1


def test_a_node_that_died_after_its_250_loses_no_mail(where):
    """Two messages a dead node had taken from the stream: one it had stored (not yet
    acknowledged), one it had not. This node takes both over: each is stored once."""
    server = redis_server.server()
    client = server.client()
    client.xgroup_create("arashi:store", "arashi", "0", mkstream=True)
    codec = Codec(*STORE_TYPES)
    with running(*where) as plain:                      # the dead node's store, same database
        alice = plain.store.user_id("alice")
        ids = [client.xadd("arashi:store", {b"d": codec.encode(
            Accepted([alice], f"Subject: {n}\r\n\r\nbody\r\n".encode(), "x@else.test"))})
            for n in ("stored", "not stored")]
        plain.store.deliver([alice], b"Subject: stored\r\n\r\nbody\r\n", "x@else.test",
                            key=f"arashi:store/{ids[0].decode()}")
    assert len(client.xreadgroup("arashi", "dead-node", {"arashi:store": ">"})[0][1]) == 2
    with running(*where, redis=server.url, claim_idle=0.3) as service:
        until(lambda: client.xlen("arashi:store"), lambda n: n == 0)    # both handled
        assert count(service, "alice") == 2                               # each once
        assert client.xpending("arashi:store", "arashi")["pending"] == 0


CRASH = Path(__file__).resolve().parents[1] / "helpers" / "arashi_crash.py"


def test_a_node_killed_after_its_250_loses_no_mail(where):
    """A real node, killed with SIGKILL while it holds a message it said 250 for and has not
    stored: another node stores it, once."""
    data, url = where
    server = redis_server.server()
    proc = subprocess.Popen([sys.executable, str(CRASH), "holding", *store_args(data, url),
                             "--smtp-bind", "127.0.0.1:0", "--bind", "127.0.0.1:0",
                             "--domain", "example.org", "--redis", server.url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        host, port = proc.stdout.readline().split()[4].rsplit(":", 1)
        assert proc.stdout.readline().startswith("arashi serving web mail on ")
        with smtplib.SMTP(host, int(port), timeout=WAIT) as smtp:
            smtp.sendmail("x@else.test", ["alice@example.org"], b"Subject: kept\r\n\r\nb\r\n")
        assert proc.stdout.readline().strip() == "holding"       # the 250 came before
        proc.send_signal(signal.SIGKILL)
        proc.wait(WAIT)
    finally:
        proc.kill()
        proc.wait(WAIT)
    with running(data, url, redis=server.url, claim_idle=0.3) as service:
        until(lambda: count(service, "alice"), lambda n: n == 1)
        client = server.client()
        until(lambda: client.xlen("arashi:store"), lambda n: n == 0)
        assert count(service, "alice") == 1


def test_redis_out_of_reach_answers_451(tmp_path):
    data = tmp_path / "data"
    store = new_store(data)
    store.add_user("alice", "pw")
    store.pool.close()
    server = redis_server.own_server()
    try:
        with running(data, redis=server.url) as service, \
                smtplib.SMTP(*service.smtp, timeout=WAIT) as smtp:
            server.kill()
            with pytest.raises(smtplib.SMTPDataError) as refused:
                smtp.sendmail("x@else.test", ["alice@example.org"], b"Subject: x\r\n\r\nb\r\n")
            assert refused.value.smtp_code == 451
            assert count(service, "alice") == 0
    finally:
        server.stop()
