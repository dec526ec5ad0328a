"""The smallest seda.http server: a 1 KB body from a stage on the shared loop, for measuring the
HTTP library itself beside the reference servers.

    ../shared/tools/refbench.sh --only nginx,uvicorn --name seda.http \\
        --cmd "$PWD/.venv/bin/python $PWD/benchmarks/http_hello.py {port}"
"""

from __future__ import annotations

import sys
import threading

import seda
from seda.http import Response, serve

BODY = b"x" * 1024


class Hello(seda.EventHandler):
    def handle_events(self, requests):
        for request in requests:
            request.respond(Response(200, BODY, content_type="text/html"))


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    with seda.Runtime() as rt:
        rt.add_stage("app", Hello(), blocking=False, batch=256)
        serve(rt, ("127.0.0.1", port), rt.sink("app"))
        threading.Event().wait()             # until killed


if __name__ == "__main__":
    main()
