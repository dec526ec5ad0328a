"""Haboob with real applications (Flask, Django, Falcon) and real clients (requests, httpx):
large bodies both ways, streams, files, TLS; what a user moving from gunicorn relies on."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import ssl

import httpx
import pytest
import requests

import seda
from haboob.server import Options, build

from tests.helpers import WAIT, certs, realapps

MB = 2**20


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "five.bin").write_bytes(os.urandom(5 * MB))
    with open(root / "hundred.bin", "wb") as f:      # 100 MB: written in pieces
        block = os.urandom(MB)
        for _ in range(100):
            f.write(block)
    return root


@pytest.fixture(scope="module")
def server(files):
    rt = seda.Runtime()
    listener = build(rt, Options(root=str(files), port=0, apps=list(realapps.APPS)))
    rt.start()
    host, port = listener.address[:2]
    yield f"http://{host}:{port}"
    rt.stop()


def digest_of_get(url: str) -> tuple[int, str, int]:
    """Status, sha256 and size of a streamed download (never held whole in the test)."""
    h, size = hashlib.sha256(), 0
    with requests.get(url, stream=True, timeout=WAIT) as r:
        for piece in r.iter_content(MB):
            h.update(piece)
            size += len(piece)
        return r.status_code, h.hexdigest(), size


def file_digest(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(MB):
            h.update(block)
    return h.hexdigest()


# -- large responses ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["five.bin", "hundred.bin"])
def test_large_static_files_arrive_whole(server, files, name):
    status, digest, size = digest_of_get(f"{server}/{name}")
    assert status == 200 and size == (files / name).stat().st_size
    assert digest == file_digest(files / name)


@pytest.mark.parametrize("name", ["five.bin", "hundred.bin"])
def test_large_files_from_applications_arrive_whole(server, files, name):
    path = files / name
    for url in (f"{server}/flask/sendfile?path={path}", f"{server}/django/file?path={path}"):
        status, digest, size = digest_of_get(url)
        assert (status, size, digest) == (200, path.stat().st_size, file_digest(path)), url


def test_large_bodies_built_in_memory_arrive_whole(server):
    r = requests.get(f"{server}/flask/big", timeout=WAIT)
    assert r.status_code == 200 and r.content == bytes(range(256)) * (5 * MB // 256)
    r = requests.get(f"{server}/django/big", timeout=WAIT)
    assert r.status_code == 200 and r.content == b"d" * 5 * MB


# -- large request bodies -------------------------------------------------------------------------

def test_django_reads_the_whole_body_and_every_form_field(server):
    body = os.urandom(2 * MB)
    r = requests.post(f"{server}/django/body", data=body, timeout=WAIT)
    assert r.json() == {"size": len(body), "sha256": sha(body)}
    r = requests.post(f"{server}/django/form", timeout=WAIT,
                      data={"a": "x" * 1000, "b": "y" * 3 * MB, "last": "z"},
                      files={"upload": ("f.bin", os.urandom(2 * MB))})
    assert r.json() == {"fields": {"a": 1000, "b": 3 * MB, "last": 1},
                        "files": {"upload": 2 * MB}}


def test_flask_reads_large_json_and_data_and_chunked_uploads(server):
    items = list(range(400_000))                   # about 3 MB of JSON
    r = requests.post(f"{server}/flask/json", json=items, timeout=WAIT)
    assert r.json() == {"items": len(items)}
    body = os.urandom(3 * MB)
    r = requests.post(f"{server}/flask/data", data=body, timeout=WAIT)
    assert r.json() == {"size": len(body), "sha256": sha(body)}
    big = os.urandom(5 * MB)                       # chunked: a generator has no length
    r = requests.post(f"{server}/flask/data", timeout=WAIT,
                      data=(big[i:i + 100_000] for i in range(0, len(big), 100_000)))
    assert r.json() == {"size": len(big), "sha256": sha(big)}


def test_lines_are_read_one_by_one(server):
    body = b"".join(b"line %d\n" % i for i in range(200_000))     # about 2 MB
    r = requests.post(f"{server}/flask/lines", data=body, timeout=WAIT)
    assert r.json() == {"lines": 200_000}


def test_falcon_reads_its_bounded_stream_whole(server):
    body = os.urandom(2 * MB)
    r = requests.post(f"{server}/falcon/bounded", data=body, timeout=WAIT)
    assert r.json() == {"size": len(body), "sha256": sha(body)}


def test_a_body_the_application_left_unread_does_not_hang_the_next_request(server):
    with requests.Session() as s:
        r = s.post(f"{server}/flask/partial", data=os.urandom(2 * MB), timeout=WAIT)
        assert r.json() == {"read": 1000}
        r = s.get(f"{server}/flask/headers", timeout=WAIT)
        assert r.status_code == 200
    with socket.create_connection(server.removeprefix("http://").split(":"), timeout=WAIT) as c:
        c.sendall(b"POST /flask/partial HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n"
                  + b"x" * 300_000 + b"GET /flask/headers HTTP/1.1\r\nHost: x\r\n\r\n")
        c.shutdown(socket.SHUT_WR)
        answers = b""
        while piece := c.recv(65536):
            answers += piece
    assert answers.count(b"HTTP/1.1 200 OK") == 2


# -- streams --------------------------------------------------------------------------------------

@pytest.mark.parametrize("app", ["flask", "django"])
def test_each_piece_of_a_stream_is_sent_when_produced(server, app):
    realapps.gates[app] = gate = realapps.threading.Event()
    with httpx.stream("GET", f"{server}/{app}/stream", timeout=WAIT) as r:
        pieces = r.iter_raw()
        first = next(pieces)                       # arrives while the app waits for us
        gate.set()
        rest = b"".join(pieces)
    assert first == b"data: 1\n\n" and rest == b"data: 2\n\n"
    assert realapps.released[app], "the first piece was held until the stream went on"


# -- the rest of what an application is told and tells --------------------------------------------

def test_a_custom_reason_phrase_is_kept(server):
    c = http.client.HTTPConnection(*server.removeprefix("http://").split(":"), timeout=WAIT)
    c.request("GET", "/flask/reason")
    r = c.getresponse()
    assert (r.status, r.reason, r.read()) == (299, "Custom Thing", b"custom")


def test_header_names_with_underscores_are_dropped(server):
    r = requests.get(f"{server}/flask/headers", timeout=WAIT,
                     headers={"X-Real": "1", "X_Forged": "2", "Transfer_Encoding": "x"})
    seen = {k.lower() for k in r.json()}
    assert "x-real" in seen and "x-forged" not in seen and "transfer-encoding" not in seen


def test_under_https_the_application_knows_it(tmp_path):
    ca, cert, key = certs.make(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    rt = seda.Runtime()
    listener = build(rt, Options(port=0, apps=list(realapps.APPS), ssl_context=context))
    rt.start()
    try:
        port = listener.address[1]
        r = requests.get(f"https://127.0.0.1:{port}/flask/secure", verify=str(ca), timeout=WAIT)
        assert r.json() == {"secure": True, "url": f"https://127.0.0.1:{port}/flask/secure"}
        body = os.urandom(5 * MB)                   # large bodies both ways over TLS too
        r = requests.post(f"https://127.0.0.1:{port}/flask/data", data=body, verify=str(ca),
                          timeout=WAIT)
        assert json.loads(r.content) == {"size": len(body), "sha256": sha(body)}
        r = requests.get(f"https://127.0.0.1:{port}/flask/big", verify=str(ca), timeout=WAIT)
        assert r.content == bytes(range(256)) * (5 * MB // 256)
    finally:
        rt.stop()
