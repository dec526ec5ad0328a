"""Arashi's pages in headless Chromium with mail that is hard to lay out: a subject and a
sender that are one long word each must wrap inside the page, not push the lists and the
message's headers past the window's right edge (the Date column and the checkboxes with them)."""

from __future__ import annotations

import pytest

from tests.helpers.arashi_env import alice_with_mail
from tests.helpers.arashi_web import serving
from tests.helpers.chromium import CHROMIUM, SKIP_REASON, Browser

WORD = "x" * 300        # wider than any window, even at 7 px a character


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_long_words_wrap_inside_the_window(tmp_path):
    data = tmp_path / "data"
    raw = (f"From: {WORD}@x.test\r\nSubject: long {WORD}\r\n"
           f"Date: Mon, 1 Jan 2024 10:00:00 +0000\r\n\r\nbody {WORD}\r\n").encode()
    _, inbox, _ = alice_with_mail(data, [raw])
    with serving(data) as server:
        browser = Browser(tmp_path / "profile")
        try:
            browser.go(server.url + "/login")
            browser.run("document.querySelector('input[name=name]').value = 'alice';"
                        "document.querySelector('input[name=password]').value = 'alice-pw'")
            browser.click("form button", then="/folders")
            for path in (f"/folder/{inbox}", "/search?q=long", f"/search?q=long{WORD}"):
                browser.go(server.url + path)
                assert "xxxxxxxxxx" in browser.text()
                width, scroll = browser.run(
                    "[innerWidth, document.documentElement.scrollWidth]")
                assert scroll <= width, (path, width, scroll)
            # the date is not broken to fit: its text is one line
            browser.go(server.url + f"/folder/{inbox}")
            lines = browser.run("(() => { const r = document.createRange(); r.selectNodeContents("
                                "document.querySelector('table.messages td.date'));"
                                " return r.getClientRects().length })()")
            assert lines == 1, lines
            browser.click('a[href^="/message/"]', then="/message/")
            assert WORD in browser.text()
            width, scroll = browser.run("[innerWidth, document.documentElement.scrollWidth]")
            assert scroll <= width, ("message", width, scroll)
        finally:
            browser.close()
