"""X-Forwarded-Proto and -For from the proxies believed (seda.http.forwarded), as the ASGI
scope and the WSGI environ show them: what uvicorn and gunicorn do for an application behind
nginx, and nothing for a client that reaches the server directly."""

from __future__ import annotations

import http.client
import json

import pytest
from websockets.sync.client import connect

from seda.http import Limits, Proxies, mount, mount_asgi, serve

from tests.helpers import WAIT

LOOPBACK = Proxies.LOOPBACK
PROXIED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7, 127.0.0.1"}


def test_only_the_peers_named_are_believed():
    proxies = Proxies("10.0.0.0/8, 192.0.2.1,::1")
    assert [proxies.trusts(h) for h in ("10.1.2.3", "192.0.2.1", "::1", "192.0.2.2",
                                        "/run/haboob.sock")] == [True, True, True, False, False]
    assert Proxies("*").trusts("198.51.100.1") and not Proxies("").trusts("127.0.0.1")
    with pytest.raises(ValueError, match="'nginx'"):
        Proxies("127.0.0.1,nginx")


def test_a_believed_proxy_gives_the_scheme_and_the_nearest_client_not_its_own():
    proxies = Proxies(LOOPBACK + ",10.0.0.0/8")
    fields = [(b"host", b"x"), (b"x-forwarded-proto", b" HTTPS "),
              (b"x-forwarded-for", b"198.51.100.9, 203.0.113.7, 10.0.0.2")]
    # 10.0.0.2 is a proxy of ours; 198.51.100.9 is whatever the client wrote before
    assert proxies.forwarded(("127.0.0.1", 5000), fields) == ("https", "203.0.113.7")
    assert proxies.forwarded(("127.0.0.1", 5000), [(b"x-forwarded-proto", b"wss")]) == (
        "https", None)
    assert proxies.forwarded(("127.0.0.1", 5000), [(b"x-forwarded-proto", b"gopher")]) == (
        None, None)
    assert proxies.forwarded(("192.0.2.5", 5000), fields) == (None, None)   # not a proxy
    assert proxies.forwarded(None, fields) == (None, None)


def echo_scope(rt, proxies):
    async def app(scope, receive, send):
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.send",
                        "text": json.dumps([scope["scheme"], scope["client"]])})
            await send({"type": "websocket.close"})
            return
        body = json.dumps([scope["scheme"], scope["client"]]).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    sink = mount_asgi(rt, app, tasks=8, proxies=proxies)
    address = serve(rt, ("127.0.0.1", 0), sink, limits=Limits(response_timeout=5)).address
    rt.start()
    return address


def get_json(address, headers):
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("GET", "/", headers=headers)
    data = json.loads(c.getresponse().read())
    c.close()
    return data


def test_an_asgi_scope_has_the_scheme_and_client_a_believed_proxy_says(rt):
    address = echo_scope(rt, Proxies(LOOPBACK))
    assert get_json(address, PROXIED) == ["https", ["203.0.113.7", 0]]
    scheme, (host, port) = get_json(address, {})
    assert (scheme, host) == ("http", "127.0.0.1") and port > 0
    with connect(f"ws://{address[0]}:{address[1]}/", additional_headers=PROXIED,
                 open_timeout=WAIT) as ws:
        assert json.loads(ws.recv(timeout=WAIT)) == ["wss", ["203.0.113.7", 0]]


def test_an_asgi_scope_ignores_them_from_a_peer_not_named(rt):
    address = echo_scope(rt, Proxies("192.0.2.1"))
    scheme, (host, _) = get_json(address, PROXIED)
    assert (scheme, host) == ("http", "127.0.0.1")


def test_a_wsgi_environ_takes_the_scheme_and_keeps_the_peer_as_gunicorn_does(rt):
    def app(environ, start_response):
        start_response("200 OK", [])
        return [json.dumps([environ["wsgi.url_scheme"], environ["REMOTE_ADDR"]]).encode()]

    sink = mount(rt, app, threads=2, proxies=Proxies(LOOPBACK))
    address = serve(rt, ("127.0.0.1", 0), sink).address
    rt.start()
    assert get_json(address, PROXIED) == ["https", "127.0.0.1"]
    assert get_json(address, {}) == ["http", "127.0.0.1"]
