"""``haboob --config FILE``: every option from a TOML file, the command line over it, and errors
that name the file and the key. The sample files in the README and docs/ are loaded here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import seda
from haboob.cli import parse
from haboob.settings import ALL, LIMITS, load

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
WAIT = 10.0


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Run in a directory with a site and an application module, as haboob would be; sys.path
    is restored afterwards (loading an application puts the working directory on it)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "cfgapps.py").write_text("def app(environ, start_response):\n    return []\n"
                                         "def api(environ, start_response):\n    return []\n"
                                         "NOT_AN_APP = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path])
    monkeypatch.delitem(sys.modules, "cfgapps", raising=False)
    return tmp_path


def config(directory: Path, text: str) -> str:
    path = directory / "haboob.toml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def samples() -> list[tuple[str, str]]:
    """Every ```toml block in the README and docs/ that is a haboob config file (its first line
    is a comment starting '# haboob.toml')."""
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for block in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S):
            if block.startswith("# haboob.toml"):
                found.append((doc.name, block))
    return found


def test_the_documented_samples_are_found():
    assert {name for name, _ in samples()} >= {"README.md", "http.md"}


@pytest.mark.parametrize("doc, sample", samples(), ids=[name for name, _ in samples()])
def test_each_documented_sample_loads_and_every_key_reaches_the_options(
        doc, sample, tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLES)                       # the README's sample serves examples/
    monkeypatch.setattr(sys, "path", [*sys.path])
    path = config(tmp_path, sample)
    options, _ = parse(["--config", path, "--root", "site"])
    for key, value in load(path).items():
        if key in LIMITS:
            assert getattr(options.limits, key) == value, key
        elif key == "bind":
            assert (options.host, options.port) == value
        elif key == "mount":
            assert [p for p, _ in options.apps] == [p for p, _ in value]
        elif key == "cache_mb":
            assert options.cache_bytes == value
        else:
            assert getattr(options, key) == value, key


def test_the_readme_sample_means_what_its_comments_say(tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr(sys, "path", [*sys.path])
    [readme] = [block for name, block in samples() if name == "README.md"]
    options, _ = parse(["--config", config(tmp_path, readme)])
    assert options.root == "site" and options.apps[0][0] == "/app"
    assert options.target_p90 == 0.1 and options.cache_bytes == 64 * 2**20
    assert options.limits.max_body == 10 * 2**20 and options.workers == 2
    assert options.status_bind == ("127.0.0.1", 9100) and options.access_log == "-"


def test_every_option_of_the_command_line_is_a_key_of_the_file():
    help_text = subprocess.run([sys.executable, "-m", "haboob", "--help"], capture_output=True,
                               text=True, timeout=WAIT, env={**os.environ, "COLUMNS": "500"}
                               ).stdout                 # wide: no option broken over lines
    flags = set(re.findall(r"--([a-z][a-z0-9-]*)", help_text)) - {"help", "config"}
    keys = {("no-" if setting.negated else "") + name.replace("_", "-")
            for name, setting in ALL.items() if name != "app"}
    assert flags == keys and "[APP]" in help_text
    assert "--config FILE" in help_text and "options on the command line win" in help_text


def test_the_command_line_wins_over_the_file(here):
    path = config(here, """
        root = "site"
        bind = "127.0.0.1:9000"
        threads = 4
        max_body = "1M"
        mount = ["/a=cfgapps:app", "/b=cfgapps:api"]
        underscore_headers = true
    """)
    options, _ = parse(["--config", path])
    assert (options.port, options.threads, options.limits.max_body) == (9000, 4, 2**20)
    assert [p for p, _ in options.apps] == ["/a", "/b"] and options.underscore_headers
    options, _ = parse(["--config", path, "--bind", "127.0.0.1:0", "--max-body", "2M",
                        "--mount", "/c=cfgapps:app"])
    assert (options.port, options.threads, options.limits.max_body) == (0, 4, 2 * 2**20)
    assert [p for p, _ in options.apps] == ["/c"]          # a list is replaced, not extended


def test_status_false_in_the_file_is_no_status_and_the_command_line_can_say_otherwise(here):
    off = config(here, 'root = "site"\nstatus = false\n')
    options, _ = parse(["--config", off])
    assert not options.status
    options, _ = parse(["--config", off, "--status-bind", "127.0.0.1:9100"])
    assert options.status and options.status_bind == ("127.0.0.1", 9100)
    elsewhere = config(here, 'root = "site"\nstatus_bind = "127.0.0.1:9100"\n')
    options, _ = parse(["--config", elsewhere, "--no-status"])
    assert not options.status and options.status_bind is None


@pytest.mark.parametrize("text, message", [
    ('root = "site"\nmax_bdy = "1M"', "unknown setting 'max_bdy' (did you mean 'max_body'?)"),
    ('root = "site"\n[limits]\nmax_body = 1', "unknown setting 'limits'"),
    ('root = "site"\nthreads = "four"', "threads: 'four' is not a whole number"),
    ('root = "site"\nmax_body = 0', "max_body: 0: a size must be > 0"),
    ('root = "site"\nkeepalive_timeout = "soon"', "keepalive_timeout: 'soon' is not a number"),
    ('root = "site"\nunderscore_headers = "yes"', "underscore_headers: expected true or false"),
    ('root = "site"\nbind = "nowhere"', "bind: expected HOST:PORT, got 'nowhere'"),
    ('root = "site"\ntarget_p90 = -5', "target_p90: -5: milliseconds must be > 0"),
    ('root = "site"\nmount = "/a=cfgapps:app"', "mount: expected a list, as mount = "),
    ('root = "site"\nmount = ["a=cfgapps:app"]', "mount: expected /PREFIX=module:attribute"),
    ("root = site", "not valid TOML"),
])
def test_a_bad_file_names_itself_and_the_key(here, text, message):
    path = config(here, text)
    with pytest.raises(seda.ConfigError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


@pytest.mark.parametrize("text, message", [
    ('root = "site"\nthreads = 0', "threads: expected a whole number >= 1, got 0"),
    ('root = "site"\nclass_header = "X-Tier"', "class_header needs target_p90"),
    ('app = "cfgapps:nope"', "app: cannot load the application: module 'cfgapps' has no "
                             "attribute 'nope'"),
    ('mount = ["/x=cfgapps_absent:app"]', "mount /x: cannot load the application: cannot "
                                          "import module 'cfgapps_absent'"),
    ('app = "cfgapps:NOT_AN_APP"', "app: cfgapps:NOT_AN_APP is not callable"),
    ('root = "missing"', "root: 'missing' is not a directory"),
])
def test_a_setting_the_options_refuse_is_named_on_the_command_line(here, text, message,
                                                                    capsys):
    with pytest.raises(SystemExit) as exit_:
        parse(["--config", config(here, text)])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_command_says_what_is_wrong_with_a_file_without_a_traceback(tmp_path):
    for text, message in (('root = "."\nthreads = -1', "threads: expected a whole number"),
                          ('root = "."\ncolour = "blue"', "unknown setting 'colour'")):
        path = config(tmp_path, text)
        done = subprocess.run([sys.executable, "-m", "haboob", "--config", path],
                              capture_output=True, text=True, timeout=WAIT, cwd=tmp_path)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "haboob", "--config", "missing.toml"],
                          capture_output=True, text=True, timeout=WAIT, cwd=tmp_path)
    assert done.returncode == 2 and "missing.toml: cannot read" in done.stderr
