"""Haboob under admission control: --target-p90 bounds each application stage, classes from a
header or a cookie decide who is refused first, and a refusal is an immediate 503."""

from __future__ import annotations

import threading
from http.cookies import SimpleCookie

import pytest

from haboob import server
from haboob.server import classifier

from tests.helpers import WAIT
from tests.helpers.admission import (
    admits_a_higher_class_where_a_lower_is_refused,
    refuses_over_the_bound_at_once,
)


class Request:
    def __init__(self, **headers):
        self.headers = {k.lower(): v for k, v in headers.items()}

    def header(self, name):
        return self.headers.get(name.lower())


@pytest.mark.parametrize("spec, headers, cls", [
    ("X-Class", {"X-Class": "9"}, 9), ("X-Class", {"x-class": " 3 "}, 3),
    ("X-Class", {}, 0), ("X-Class", {"X-Class": "high"}, 0), ("X-Class", {"X-Class": "10"}, 0),
    ("X-Class", {"X-Class": "\u00b2"}, 0),           # a digit to str.isdigit, not to int()
    ("cookie:tier", {"Cookie": "a=b; tier=7"}, 7), ("cookie:tier", {"Cookie": "tier=x"}, 0),
    ("cookie:tier", {"Cookie": "\x00broken"}, 0), ("cookie:tier", {}, 0),
])
def test_request_classes_from_a_header_or_a_cookie(spec, headers, cls):
    assert classifier(spec)(Request(**headers)) == cls


def test_a_cookie_is_parsed_once_however_often_its_request_is_classified(monkeypatch):
    loads = []

    class Counting(SimpleCookie):
        def load(self, rawdata):
            loads.append(rawdata)
            super().load(rawdata)

    monkeypatch.setattr(server, "SimpleCookie", Counting)
    classify, request = classifier("cookie:tier"), Request(Cookie="tier=7")
    assert classify(request) == classify(request) == 7       # admitted, then measured
    assert loads == ["tier=7"]


@pytest.fixture
def blocked_app():
    """An application on one thread that holds each request until ``release`` is set."""
    entered, release = threading.Semaphore(0), threading.Event()

    def app(environ, start_response):
        entered.release()
        release.wait(WAIT)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"done"]

    return app, entered, release


def test_a_request_over_the_bound_gets_503_with_retry_after_at_once(blocked_app):
    refuses_over_the_bound_at_once(blocked_app, 1.0, threads=1)


def test_a_higher_class_is_admitted_where_a_lower_one_is_refused(blocked_app):
    admits_a_higher_class_where_a_lower_is_refused(blocked_app, 1.0, threads=1)
