"""Headless Chromium driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so a test can click
through real pages with the standard library alone: no WebDriver, no websocket client.
``CHROMIUM`` is None where Debian's chromium is not installed (tests skip, saying so)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM = shutil.which("chromium")
SKIP_REASON = "Debian's chromium is not installed (make test installs it as root)"


class Browser:
    """One headless Chromium with one page; ``run(js)`` evaluates in the page, ``click`` and
    ``submit`` act on elements by CSS selector, ``wait_for(path)`` waits for a page load."""

    def __init__(self, profile: Path, timeout: float = 30.0) -> None:
        assert CHROMIUM is not None
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds() -> None:             # in the child: its fd 3 reads, fd 4 writes
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--remote-debugging-pipe",
             "about:blank"],
            # 3 and 4 are made by fds() in the child, before close_fds: kept by pass_fds
            pass_fds=(3, 4, to_browser_r, from_browser_w), preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next, self._buffer = 0, b""
        self.events: list[dict[str, Any]] = []   # what the browser told unasked (Log.enable ...)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]

    def call(self, method: str, session: str | None = None, **params: Any) -> Any:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" in self._buffer:
                raw, _, self._buffer = self._buffer.partition(b"\0")
                reply = json.loads(raw)
                if "id" not in reply:
                    self.events.append(reply)
                elif reply["id"] == self._next:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            assert time.monotonic() < deadline, f"no answer to {method}"
            chunk = os.read(self._from_browser, 65536)
            assert chunk, "chromium exited"
            self._buffer += chunk

    def run(self, js: str) -> Any:
        """The value of JavaScript expression ``js`` in the page."""
        result = self.call("Runtime.evaluate", self.session, expression=js,
                           returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{js}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def go(self, url: str, then: str | None = None) -> str:
        """Open ``url`` and wait until it has loaded (at a path starting with ``then``, by
        default ``url``'s own); the page's path."""
        self.call("Page.navigate", self.session, url=url)
        return self.wait_for(then or urlsplit(url).path)

    def wait_for(self, path: str | None = None) -> str:
        """Wait until the page has loaded (at a path starting with ``path``); its path."""
        deadline = time.monotonic() + self.timeout
        while True:
            state = self.run("[document.readyState, location.pathname + location.search]")
            if state and state[0] == "complete" and (path is None or state[1].startswith(path)):
                return state[1]
            assert time.monotonic() < deadline, f"still at {state}, waiting for {path}"
            time.sleep(0.05)

    def click(self, selector: str, then: str | None = None) -> str:
        """Click the element ``selector`` (a link or a button), wait for the next page (at a
        path starting with ``then``) to load; its path. A new document is told from the old
        by a mark left on the old one's window, so a page that reloads itself counts too."""
        self.run(f"window.__old = true; document.querySelector({json.dumps(selector)}).click()")
        deadline = time.monotonic() + self.timeout
        while self.run("window.__old === true"):
            assert time.monotonic() < deadline, f"{selector}: no new page"
            time.sleep(0.05)
        return self.wait_for(then)

    def console_errors(self) -> list[str]:
        """The errors the page's console has shown since ``call("Log.enable", session)``
        (a resource that failed to load, a Content-Security-Policy violation ...)."""
        return [f"{e['params']['entry']['text']} {e['params']['entry'].get('url', '')}"
                for e in self.events
                if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]

    def text(self) -> str:
        return str(self.run("document.body.innerText"))

    def close(self) -> None:
        with contextlib.suppress(AssertionError, OSError, RuntimeError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
