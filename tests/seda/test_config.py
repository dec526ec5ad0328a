"""Service description files."""

from __future__ import annotations

import sys
import textwrap
import types

import pytest

import seda

from tests.helpers.recorder import Recorder

GOOD = """
[stages.sink]
handler = "cfg_handlers:Keep"
blocking = false

[stages.upper]
handler = "cfg_handlers:Upper"
threads = 2
batch = 16
key = "cfg_handlers:first_letter"
predicate = "cfg_handlers:NotEmpty"
[stages.upper.params]
to = "sink"

[profile]
path = "{profile}"
interval = 0.05
"""


@pytest.fixture(autouse=True)
def cfg_handlers(monkeypatch):
    module = types.ModuleType("cfg_handlers")

    class Keep(Recorder):
        last = None

        def __init__(self):
            super().__init__()
            Keep.last = self

    class Upper(seda.EventHandler):
        def init(self, ctx):
            self.out = ctx.runtime.sink(ctx.params["to"])

        def handle_event(self, ev):
            self.out.enqueue(ev.upper())

    class NotEmpty:
        def accept(self, ev):
            return bool(ev)

    module.Keep, module.Upper, module.NotEmpty = Keep, Upper, NotEmpty
    module.first_letter = lambda ev: ev[:1]
    monkeypatch.setitem(sys.modules, "cfg_handlers", module)
    return module


def write(tmp_path, text):
    path = tmp_path / "service.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_config_builds_the_described_service(tmp_path, cfg_handlers):
    path = write(tmp_path, GOOD.format(profile=tmp_path / "p.jsonl"))
    with seda.Runtime.from_config(path) as rt:
        upper = rt.sink("upper")
        upper.enqueue("abc")
        with pytest.raises(seda.RejectedError):
            upper.enqueue("")
        assert cfg_handlers.Keep.last.wait(1) == ["ABC"]
        stats = rt.stats()
        assert stats["upper"]["threads"] == 2 and stats["upper"]["batch"] == 16
        assert stats["sink"]["manager"] == "loop"
    assert (tmp_path / "p.jsonl").read_text().count("\n") >= 1


@pytest.mark.parametrize("text, message", [
    ("[stages.a\nhandler=1", "not valid TOML"),
    ("[stages.a]\nthreads = 2", "stages.a: 'handler' is missing"),
    ("[stages.a]\nhandler = 'cfg_handlers:Nope'", "stages.a.handler: module 'cfg_handlers' has no"),
    ("[stages.a]\nhandler = 'no_such_module_x:A'", "stages.a.handler: cannot import module"),
    ("[stages.a]\nhandler = 'justaname'", "stages.a.handler: expected 'module:attribute'"),
    ("[stages.a]\nhandler = 'cfg_handlers:Keep'\nthreads = 'two'",
     "stages.a.threads: expected int"),
    ("[stages.a]\nhandler = 'cfg_handlers:Keep'\ncolour = 1", "stages.a: unknown key(s) colour"),
    ("[stages.a]\nhandler = 'cfg_handlers:Keep'\nbatch = 0", "stages.a: stage 'a': batch"),
    ("[other]\nx = 1", "unknown table(s) other"),
    ("", "needs at least one [stages.NAME] table"),
])
def test_config_errors_name_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(seda.ConfigError) as info:
        seda.Runtime.from_config(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(seda.ConfigError, match=r"missing\.toml: cannot read"):
        seda.Runtime.from_config(tmp_path / "missing.toml")


def test_a_handler_module_that_fails_on_import_is_named(tmp_path, monkeypatch):
    (tmp_path / "cfg_broken.py").write_text("raise RuntimeError('no database')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(tmp_path, "[stages.a]\nhandler = 'cfg_broken:Handler'")
    with pytest.raises(seda.ConfigError) as info:
        seda.Runtime.from_config(path)
    assert "stages.a.handler: importing 'cfg_broken:Handler' raised RuntimeError('no database')" \
        in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
