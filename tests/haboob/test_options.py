"""Haboob's Options are checked when made: each error names the setting and says what it takes,
whether the Options came from Python, the command line or a config file."""

from __future__ import annotations

import dataclasses
import ssl

import pytest

import seda
from haboob.options import Options
from seda.http import Limits

from tests.helpers import certs


def app(environ, start_response):
    start_response("200 OK", [])
    return [b""]


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    return str(root)


@pytest.mark.parametrize("fields, message", [
    ({"threads": 0}, "threads: expected a whole number >= 1, got 0"),
    ({"workers": 2.5}, "workers: expected a whole number >= 1, got 2.5"),
    ({"port": 70000}, "port: expected a whole number from 0 to 65535, got 70000"),
    ({"port": "8000"}, "port: expected a whole number from 0 to 65535, got '8000'"),
    ({"cache_bytes": -1}, "cache_bytes: expected a whole number >= 0, got -1"),
    ({"threads": True}, "threads: expected a whole number >= 1, got True"),
    ({"cache_policy": "fifo"}, "cache_policy: expected one of gds, lfu, lru, got 'fifo'"),
    ({"recheck": -1}, "recheck: expected a number of seconds >= 0, got -1"),
    ({"graceful_timeout": 0}, "graceful_timeout: expected a number of seconds > 0, got 0"),
    ({"ws_ping_interval": -1}, "ws_ping_interval: expected a number of seconds >= 0, got -1"),
    ({"ws_ping_timeout": None}, "ws_ping_timeout: expected a number of seconds >= 0, got None"),
    ({"target_p90": "100ms"}, "target_p90: expected a number of seconds > 0, got '100ms'"),
    ({"allow_outside": "yes"}, "allow_outside: expected true or false, got 'yes'"),
    ({"limits": {"max_body": 10}}, "limits: expected a seda.http.Limits"),
    ({"ssl_context": "tls"}, "ssl_context: expected an ssl.SSLContext, got 'tls'"),
    ({"status_bind": ("127.0.0.1", "9100")}, "status_bind: expected a (host, port) pair"),
])
def test_types_and_ranges_are_named(site, fields, message):
    with pytest.raises(seda.ConfigError) as info:
        Options(root=site, **fields)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("fields, message", [
    ({}, "nothing to serve: give a root directory (--root) or an application"),
    ({"apps": [("/", "myapp:app")]}, "apps: the application at '/' is not callable"),
    ({"apps": [("api", app)]}, "apps: expected prefixes that start with /"),
    ({"apps": [("/a", app), ("/a", app)]}, "apps: two applications at '/a'"),
    ({"apps": [app]}, "apps: expected a list of (prefix, application) pairs"),
    ({"root": "/no/such/directory"}, "root: '/no/such/directory' is not a directory"),
    ({"root": ".", "access_log": "/no/such/dir/access.log"},
     "access_log: cannot write the access log /no/such/dir/access.log"),
    ({"root": ".", "status_dir": "/no/such/directory"}, "status_dir: '/no/such/directory' is not"),
])
def test_what_to_serve_and_paths_that_must_exist(fields, message):
    with pytest.raises(seda.ConfigError) as info:
        Options(**fields)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("fields, message", [
    ({"class_header": "X-Priority"}, "class_header needs target_p90"),
    ({"class_header": "cookie:", "target_p90": 0.1}, "class_header: expected a header name"),
    ({"certfile": "cert.pem"}, "certfile and keyfile go together"),
    ({"status": False, "status_bind": ("127.0.0.1", 9100)},
     "status_bind and status = false exclude each other"),
])
def test_settings_that_go_together_or_exclude_each_other(site, fields, message):
    with pytest.raises(seda.ConfigError, match=message):
        Options(root=site, **fields)


def test_tls_files_make_the_context_and_exclude_one_given(site, tmp_path):
    _, cert, key = certs.make(tmp_path)
    options = Options(root=site, certfile=str(cert), keyfile=str(key))
    assert isinstance(options.ssl_context, ssl.SSLContext)
    with pytest.raises(seda.ConfigError, match="ssl_context and certfile/keyfile exclude"):
        Options(root=site, certfile=str(cert), keyfile=str(key),
                ssl_context=options.ssl_context)
    with pytest.raises(seda.ConfigError) as info:
        Options(root=site, certfile=str(cert), keyfile=str(cert))
    assert str(info.value) == (f"certfile, keyfile: cannot serve HTTPS: {cert} is not a PEM "
                               f"private key for {cert}")


def test_good_options_are_kept_as_given_and_cannot_be_changed_afterwards(site):
    options = Options(root=site, apps=[("/api", app)], port=0, threads=4, target_p90=0.1,
                      class_header="cookie:tier", limits=Limits(max_body=1024), recheck=0)
    assert (options.threads, options.limits.max_body, options.recheck) == (4, 1024, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.threads = 0          # checked once, so never changed without a check


def test_the_proxies_believed_come_from_the_setting_the_environment_or_loopback(
        site, monkeypatch):
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    loopback = Options(root=site).proxies()
    assert loopback is not None and loopback.trusts("::1") and not loopback.trusts("10.0.0.1")
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.0.0.0/8")
    assert Options(root=site).proxies().trusts("10.0.0.1")  # type: ignore[union-attr]
    named = Options(root=site, forwarded_allow_ips="192.0.2.1").proxies()
    assert named is not None and named.trusts("192.0.2.1") and not named.trusts("10.0.0.1")
    assert Options(root=site, proxy_headers=False).proxies() is None
    with pytest.raises(seda.ConfigError, match="forwarded_allow_ips: 'proxy' is not an IP"):
        Options(root=site, forwarded_allow_ips="proxy")
