"""The Arashi load generator's quick mode: a small data directory, a real ``arashi serve``, a
few emulated users that log in, list, read, refile and delete through the pages' own links;
its report and both figures are written. Then the same on the tests' throwaway PostgreSQL server
(``--backend postgresql``), skipped, saying why, where one cannot start."""

from __future__ import annotations

from pathlib import Path

from benchmarks.arashi_load import MARKOV, TEMPLATE, Page, make_data, measure, plot, report

from tests.helpers.postgres import server

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_markov_rows_are_distributions():
    for state, row in MARKOV.items():
        assert abs(sum(p for _, p in row) - 1.0) < 1e-9, state


def test_pages_give_their_links_and_forms():
    page = Page('<a href="/folder/3">INBOX</a><a href="/message/7">Budget review</a>'
                '<form method="post" action="/act"><input type="hidden" name="csrf" value="t">'
                '<input type="checkbox" name="id" value="7"><select name="to">'
                '<option value="4">Archive</option></select>'
                '<button name="action" value="delete">Delete</button></form>')
    assert page.matching("/message/") == ["/message/7"] and "budget" in page.words
    form = page.act_form()
    assert form and form.checkboxes == ["7"] and form.options == ["4"]
    assert ("csrf", "t") in form.fields


# An account per user: two sharing one may find a message gone that the other deleted (404).

def test_a_quick_run_follows_the_pages_and_writes_the_report(tmp_path: Path):
    assert make_data(tmp_path / "data", 4, 40) >= 12
    runs = [dict(measure(tmp_path / "data", users, 4, 0.5, 1.5), run=1) for users in (1, 4)]
    for r in runs:
        assert r["requests"] > 10 and not r["errors"], r
    seen = set().union(*(r["types"] for r in runs))
    assert {"login", "folders", "messages", "show"} <= seen, seen
    text = report(runs, {"accounts": 4, "messages": 40, "seconds": 1.5, "warmup": 0.5})
    assert "| 4 | 1 |" in text
    plot(runs, str(tmp_path / "a.png"), str(tmp_path / "b.png"), (1, 4))
    assert (tmp_path / "a.png").read_bytes().startswith(PNG)
    assert (tmp_path / "b.png").read_bytes().startswith(PNG)


def test_a_quick_run_on_postgresql(tmp_path: Path):
    pg = server()                       # the tests' PostgreSQL server (skips where none starts)
    assert make_data(tmp_path, 4, 40, url=pg.new_database(TEMPLATE)) >= 12
    r = dict(measure(tmp_path, 4, 4, 0.5, 1.5, pg=pg), run=1)
    assert r["requests"] > 10 and not r["errors"], r
    assert {"login", "folders", "messages", "show"} <= set(r["types"]), r["types"]
    text = report([r], {"accounts": 4, "messages": 40, "seconds": 1.5, "warmup": 0.5,
                        "backend": "postgresql"})
    assert "(PostgreSQL)" in text and "| 4 | 1 |" in text
