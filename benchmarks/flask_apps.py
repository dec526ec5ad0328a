"""Flask applications the benchmarks serve: refbench's 1 KB answer through the framework."""

from __future__ import annotations

from flask import Flask

from benchmarks.asgi_apps import BODY

hello = Flask(__name__)


@hello.get("/")
def index() -> tuple[bytes, int, dict[str, str]]:
    return BODY, 200, {"content-type": "text/html"}
