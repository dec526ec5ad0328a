"""The delivery stage says 250 only after the commit: a server killed before it leaves nothing
half-stored, one killed after it has lost nothing (SMTP delivers at least once: the client,
without its 250, sends again)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from arashi.delivery import Delivery
from arashi.events import Job
from arashi.smtp import Mail

from tests.helpers import WAIT
from tests.helpers.arashi_env import add_users, new_store, store_args
from tests.helpers.postgres import BACKENDS, database_url

CRASH = Path(__file__).resolve().parents[1] / "helpers" / "arashi_crash.py"


def reply(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_crash_around_the_commit(tmp_path, moment, backend):
    url = database_url(backend, tmp_path / "data")
    ids = add_users(tmp_path / "data", url, alice="pw", bob="pw")
    proc = subprocess.Popen([sys.executable, str(CRASH), moment,
                             *store_args(tmp_path / "data", url), "--smtp-bind", "127.0.0.1:0",
                             "--bind", "127.0.0.1:0", "--domain", "example.org"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        host, port = line.split()[4].rsplit(":", 1)
        assert proc.stdout.readline().startswith("arashi serving web mail on ")
        with socket.create_connection((host, int(port)), WAIT) as sock:
            sock.settimeout(WAIT)
            assert reply(sock).startswith(b"220")
            for command in (b"HELO c", b"MAIL FROM:<x@else.test>", b"RCPT TO:<alice@example.org>",
                            b"RCPT TO:<bob@example.org>", b"DATA"):
                sock.sendall(command + b"\r\n")
                assert reply(sock)[:1] in (b"2", b"3")
            sock.sendall(b"Subject: crash\r\n\r\nbody\r\n.\r\n")
            assert proc.stdout.readline().strip() in ("inside the transaction", "committed")
            proc.send_signal(signal.SIGKILL)
            proc.wait(WAIT)
            assert reply(sock) == b""             # no 250 was said
    finally:
        proc.kill()
        proc.communicate(timeout=WAIT)
    store = new_store(tmp_path / "data", url)
    try:
        with store.pool.transaction() as tx:
            rows = tx.execute("SELECT user_id, subject FROM messages ORDER BY user_id").fetchall()
    finally:
        store.pool.close()
    if moment == "before":
        assert rows == []                         # nothing half-stored, for neither user
    else:
        assert rows == [(ids["alice"], "crash"), (ids["bob"], "crash")]


class Collect:
    def __init__(self):
        self.got = []

    def enqueue_lossy(self, ev):
        self.got.append(ev)
        return True


class Failing:
    def deliver(self, users, raw, sender):
        raise RuntimeError("a bug, not the database")


def test_any_failure_is_answered_451_never_left_waiting():
    """A question the stage fails on for any reason is still answered (451: the client keeps
    the message and tries later); an unanswered one would leave the connection hanging."""
    delivery = Delivery(Failing())
    delivery.receiver = Collect()
    delivery.handle_event(Job("session", Mail("x@else.test", [1], b"Subject: x\r\n\r\n")))
    (answer,) = delivery.receiver.got
    assert answer.session == "session" and not answer.stored
    assert answer.failure[0] == 451 and delivery.stats()["failed"] == 1
