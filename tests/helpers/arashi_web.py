"""The web side of Arashi as the tests use it: ``arashi serve`` started as a user starts it
(``python -m arashi``) on loopback ports, and a logged-in ``requests`` session."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.helpers import WAIT


@dataclass
class Server:
    url: str                  # http://127.0.0.1:PORT
    smtp: tuple[str, int]
    proc: subprocess.Popen


@contextmanager
def serving(data: Path, *extra: str, url: str | None = None) -> Iterator[Server]:
    """``arashi serve`` over ``data`` or the database at ``url`` (initialised, with users)
    until the block ends."""
    where = ["--db", url] if url else ["--data", str(data)]
    proc = subprocess.Popen([sys.executable, "-m", "arashi", "serve", *where,
                             "--bind", "127.0.0.1:0", "--smtp-bind", "127.0.0.1:0",
                             "--domain", "example.org", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        smtp_line, web_line = proc.stdout.readline(), proc.stdout.readline()  # type: ignore[union-attr]
        assert web_line.startswith("arashi serving web mail on http://"), (
            smtp_line, web_line, proc.stderr.read() if proc.poll() is not None else "")  # type: ignore[union-attr]
        host, port = smtp_line.split()[4].rsplit(":", 1)
        yield Server(web_line.split()[-1].rstrip("/"), (host, int(port)), proc)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def csrf(page: str) -> str:
    """The CSRF token in a page's forms."""
    m = re.search(r'name="csrf" value="([^"]+)"', page)
    assert m, page[:500]
    return m.group(1)


def log_in(server: Server, name: str, password: str) -> requests.Session:
    client = requests.Session()
    r = client.post(server.url + "/login", data={"name": name, "password": password},
                    timeout=WAIT)
    assert r.status_code == 200 and r.url.endswith("/folders"), (r.status_code, r.text[:300])
    return client


def get(client: requests.Session, url: str, **kw: object) -> requests.Response:
    return client.get(url, timeout=WAIT, allow_redirects=False, **kw)  # type: ignore[arg-type]


def post(client: requests.Session, url: str, data: dict | list,
         **kw: object) -> requests.Response:
    return client.post(url, data=data, timeout=WAIT, allow_redirects=False, **kw)  # type: ignore[arg-type]
