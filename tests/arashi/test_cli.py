"""The ``arashi`` command as a user runs it: init, adduser, import, serve until TERM or INT,
and one-line errors, never a traceback."""

from __future__ import annotations

import mailbox
import os
import signal
import smtplib
import subprocess
import sys
import time

import pytest
import requests

from arashi.migrations import LATEST
from arashi.store import INBOX

from tests.helpers import WAIT
from tests.helpers.arashi_env import arashi, count, new_store, store_args
from tests.helpers.postgres import BACKENDS, database_url


@pytest.mark.parametrize("backend", BACKENDS)
def test_init_adduser_and_import(tmp_path, backend):
    data = tmp_path / "mail"
    url = None if backend == "sqlite" else database_url(backend, data)
    where = store_args(data, url)          # --data DIR, or --db URL
    init = [str(data)] if url is None else ["--db", url]
    done = arashi("init", *init)
    assert done.returncode == 0 and f"initialised, schema version {LATEST}" in done.stdout, \
        done.stderr
    assert "up to date" in arashi("init", *init).stdout
    done = arashi("adduser", "Alice", *where, "--password-stdin", stdin="s3cret\n")
    assert done.returncode == 0, done.stderr
    again = arashi("adduser", "alice", *where, "--password-stdin", stdin="x\n")
    assert again.returncode == 1 and again.stderr == "arashi: there is a user alice already\n"
    box = mailbox.mbox(tmp_path / "old.mbox")
    box.add(b"Subject: imported\n\nx\n")
    box.close()
    done = arashi("import", "--user", "alice", *where, "--mbox", str(tmp_path / "old.mbox"))
    assert done.stdout == "imported 1 messages into alice's INBOX\n", done.stderr
    store = new_store(data, url)
    try:
        alice = store.authenticate("alice", "s3cret")
        assert alice is not None
        (m,) = store.messages(alice, store.folder(alice, INBOX))
        assert m.subject == "imported"
    finally:
        store.pool.close()


@pytest.mark.parametrize("args", [
    ["serve", "--data", "/nonexistent/arashi"],
    ["serve", "--data", "DATA", "--smtp-max-connections", "0"],
    ["adduser", "bad name", "--data", "DATA", "--password-stdin"],
    ["adduser", "bob", "--data", "DATA", "--password-stdin"],          # empty password
    ["import", "--user", "nobody", "--data", "DATA", "--mbox", "x"],
    ["import", "--user", "alice", "--data", "DATA", "--maildir", "/nonexistent"],
])
def test_bad_input_is_one_line(tmp_path, args):
    arashi("init", str(tmp_path))
    arashi("adduser", "alice", "--data", str(tmp_path), "--password-stdin", stdin="pw\n")
    done = arashi(*[str(tmp_path) if a == "DATA" else a for a in args], stdin="")
    assert done.returncode == 1
    assert done.stderr.startswith("arashi: ") and done.stderr.count("\n") == 1, done.stderr


def test_help_on_each_command():
    for command in ([], ["init"], ["adduser"], ["import"], ["serve"]):
        done = arashi(*command, "--help")
        assert done.returncode == 0 and "usage: arashi" in done.stdout
    serve = arashi("serve", "--help").stdout
    assert "--smtp-bind" in serve and "--smtp-max-connections" in serve


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_serve_receives_mail_and_stops_cleanly(tmp_path, stop):
    arashi("init", str(tmp_path))
    arashi("adduser", "alice", "--data", str(tmp_path), "--password-stdin", stdin="pw\n")
    proc = subprocess.Popen([sys.executable, "-m", "arashi", "serve", "--data", str(tmp_path),
                             "--smtp-bind", "127.0.0.1:0", "--bind", "127.0.0.1:0",
                             "--domain", "example.org", "--smtp-timeout", "1",
                             "--hostname", "mx.example.org"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("arashi receiving mail on 127.0.0.1:"), line
        host, port = line.split()[4].rsplit(":", 1)
        with smtplib.SMTP(host, int(port), timeout=WAIT) as smtp:
            smtp.sendmail("x@else.test", ["alice@example.org"], b"Subject: hi\r\n\r\nx\r\n")
        # --smtp-timeout holds inside a message too: a client silent there gets 421
        with smtplib.SMTP(host, int(port), timeout=WAIT) as smtp:
            assert smtp.ehlo()[1].startswith(b"mx.example.org greets")
            smtp.mail("x@else.test")
            smtp.rcpt("alice@example.org")
            assert smtp.docmd("DATA")[0] == 354
            smtp.send(b"Subject: never ended\r\n")
            assert smtp.getreply()[0] == 421
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopping" in err


def test_serve_with_two_workers_and_sigterm_stops_them(tmp_path):
    arashi("init", str(tmp_path))
    arashi("adduser", "alice", "--data", str(tmp_path), "--password-stdin", stdin="pw\n")
    proc = subprocess.Popen([sys.executable, "-m", "arashi", "serve", "--data", str(tmp_path),
                             "--smtp-bind", "127.0.0.1:0", "--bind", "127.0.0.1:0",
                             "--domain", "example.org", "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        smtp_line, web_line = proc.stdout.readline(), proc.stdout.readline()
        assert web_line.startswith("arashi serving web mail on http://"), (
            smtp_line, web_line, proc.stderr.read() if proc.poll() is not None else "")
        url = web_line.split()[-1].rstrip("/")
        workers = []                              # "arashi: worker PID listening", twice
        while len(workers) < 2:
            words = proc.stderr.readline().split()
            assert words, "the supervisor ended"
            if words[1:2] == ["worker"] and words[-1] == "listening":
                workers.append(int(words[2]))
        host, port = smtp_line.split()[4].rsplit(":", 1)
        for n in range(4):                        # mail in through whichever worker
            with smtplib.SMTP(host, int(port), timeout=WAIT) as smtp:
                smtp.sendmail("x@else.test", ["alice@example.org"],
                              f"Subject: hi {n}\r\n\r\nx\r\n".encode())
        deadline = time.monotonic() + WAIT
        while True:                               # both workers' snapshots on one page
            doc = requests.get(url + "/_seda/status.json", timeout=WAIT).json()
            if sorted(w["pid"] for w in doc["workers"]) == sorted(workers):
                break
            assert time.monotonic() < deadline, doc["workers"]
            time.sleep(0.2)
        assert requests.get(url + "/login", timeout=WAIT).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=WAIT * 2) == 0
        for pid in workers:                       # gone, not orphaned
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    store = new_store(tmp_path)
    try:
        alice = store.user_id("alice")
        assert count(store, alice, store.folder(alice, INBOX)) == 4
    finally:
        store.pool.close()
