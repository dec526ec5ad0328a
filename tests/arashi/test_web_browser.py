"""One session through Arashi's real pages in headless Chromium (the templates and their forms,
under the pages' Content-Security-Policy): log in, open a folder, read a message, refile it,
delete one, log out."""

from __future__ import annotations

import time

import pytest

from tests.helpers.arashi_env import alice_with_mail, count, new_store
from tests.helpers.arashi_web import serving
from tests.helpers.chromium import CHROMIUM, SKIP_REASON, Browser


def mail(n: int) -> bytes:
    return (f"From: s{n}@x.test\r\nSubject: note {n}\r\n"
            f"Date: Mon, {n} Jan 2024 10:00:00 +0000\r\n\r\nbody of note {n}\r\n").encode()


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_a_session_through_the_pages(tmp_path):
    data = tmp_path / "data"
    alice, inbox, [archive] = alice_with_mail(data, [mail(n) for n in range(1, 4)], ("Archive",))
    with serving(data) as server:
        browser = Browser(tmp_path / "profile")
        try:
            assert browser.go(server.url + "/login") == "/login"
            browser.run("document.querySelector('input[name=name]').value = 'alice';"
                        "document.querySelector('input[name=password]').value = 'alice-pw'")
            assert browser.click("form button", then="/folders") == "/folders"
            assert "Archive" in browser.text()
            browser.click(f'a[href="/folder/{inbox}"]', then=f"/folder/{inbox}")
            assert all(f"note {n}" in browser.text() for n in (1, 2, 3))
            path = browser.click('a[href^="/message/"]', then="/message/")   # newest first
            assert "body of note 3" in browser.text()
            browser.run(f"document.querySelector('select[name=to]').value = '{archive}'")
            browser.click('button[value="refile"]', then="/folder/")
            assert "note 3" not in browser.text()
            browser.run("document.querySelector('input[name=id]').checked = true")   # note 2
            browser.click('button[value="delete"]', then=f"/folder/{inbox}")
            text = browser.text()
            assert "note 1" in text and "note 2" not in text
            browser.go(server.url + f"/folder/{archive}")
            assert "note 3" in browser.text()
            assert browser.go(server.url + path) == path          # read where it was refiled
            assert "body of note 3" in browser.text()
            browser.click('form[action="/logout"] button', then="/login")
            assert browser.go(server.url + "/folders", then="/login") == "/login"  # logged out
        finally:
            browser.close()
    store = new_store(data)
    try:
        assert count(store, alice, inbox) == 1 and count(store, alice, archive) == 1
    finally:
        store.pool.close()


def favicon_answered(browser: Browser) -> bool:
    return any(e.get("method") == "Network.responseReceived"
               and e["params"]["response"]["url"].endswith("/favicon.ico")
               for e in browser.events)


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_the_pages_show_no_console_errors(tmp_path):
    """Not even the 404 of the icon every browser asks for: Arashi answers /favicon.ico."""
    data = tmp_path / "data"
    _, inbox, _ = alice_with_mail(data, [mail(1)])
    with serving(data) as server:
        browser = Browser(tmp_path / "profile")
        try:
            for domain in ("Log.enable", "Network.enable"):
                browser.call(domain, browser.session)
            browser.go(server.url + "/login")
            browser.run("document.querySelector('input[name=name]').value = 'alice';"
                        "document.querySelector('input[name=password]').value = 'alice-pw'")
            browser.click("form button", then="/folders")
            browser.click(f'a[href="/folder/{inbox}"]', then=f"/folder/{inbox}")
            browser.click('a[href^="/message/"]', then="/message/")
            browser.go(server.url + "/search?q=note")
            deadline = time.monotonic() + 10
            while not favicon_answered(browser):        # the browser asks for it after a load
                assert time.monotonic() < deadline, "the browser never asked for the icon"
                browser.run("1")
                time.sleep(0.05)
            assert browser.console_errors() == []
        finally:
            browser.close()
