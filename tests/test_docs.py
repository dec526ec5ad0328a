"""The README and docs/*.md say what works: every Python program and shell command in them runs
here (a benchmark too long for a test has its program and options checked instead), prints what
the page says it prints where the page shows it, and every file they name exists, as does every
file a docstring or comment names. How a block is marked: tests/helpers/docblocks.py."""

from __future__ import annotations

import functools
import os
import re
import select
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import WAIT
from tests.helpers.docblocks import RUNNABLE, Block, commands, parse

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [block for page in PAGES for block in parse(page)]
RUN_TIME = 60          # seconds any one block may take


def blocks(lang: str, kind: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang and b.kind == kind]


def shown(block: Block, stdout: str) -> None:
    """What a block printed is what its output block shows."""
    if block.output is None:
        return
    got = [line.rstrip() for line in stdout.rstrip("\n").splitlines()]
    want = [line.rstrip() for line in block.output.text.rstrip("\n").splitlines()]
    if block.output.any_order:
        got, want = sorted(got), sorted(want)
    assert got == want, f"{block} prints something else than {block.output} shows"


def test_every_block_is_marked_as_what_it_is():
    wrong = []
    for b in BLOCKS:
        if not b.lang:
            wrong.append(f"{b}: name its language (```text for output or formulas)")
        elif b.kind == "unknown":
            wrong.append(f"{b}: unknown mark <!-- {b.mark} --> (see tests/helpers/docblocks.py)")
        elif b.kind in ("not run", "options only", "run by") and b.lang not in RUNNABLE:
            wrong.append(f"{b}: a {b.lang} block is never run; drop the mark")
        elif b.kind == "run by" and not callable(globals().get(b.test)):
            wrong.append(f"{b}: no {b.test} in {Path(__file__).name}")
        elif b.kind == "output" and not any(a.output is b and a.kind == "run" for a in BLOCKS):
            wrong.append(f"{b}: an output block follows a block run as it stands")
    assert not wrong, "\n".join(wrong)


def test_files_the_pages_name_exist():
    named = {(page.name, m[1].split(":")[0]) for page in PAGES
             for m in re.finditer(r"`((?:src|tests|benchmarks|docs|examples)/[^`\s]*)`",
                                  page.read_text())}
    missing = sorted(f"{page}: {path}" for page, path in named if not (ROOT / path).exists())
    assert not missing, "\n".join(missing)


def test_files_the_code_names_exist():
    """Docstrings and comments that send the reader to a file, e.g. benchmarks/micro.py."""
    sources = [p for d in ("src", "tests", "benchmarks", "examples")
               for p in (ROOT / d).rglob("*.py")]
    named = {(p.relative_to(ROOT), m[0]) for p in sources for m in re.finditer(
        r"\b(?:src|tests|benchmarks|docs|examples)/[\w./-]+\.(?:py|md|jsonl|toml)\b",
        p.read_text())}
    missing = sorted(f"{p}: {path}" for p, path in named if not (ROOT / path).exists())
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("block", blocks("python", "run"), ids=str)
def test_python_programs_run(block, tmp_path):
    program = tmp_path / "example.py"
    program.write_text(block.text)
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=RUN_TIME)
    assert done.returncode == 0, done.stderr
    shown(block, done.stdout)


@pytest.mark.parametrize("block", blocks("sh", "run"), ids=str)
def test_shell_commands_run(block):
    # `python` is the interpreter running the tests, as `.venv/bin/python` is after `make`
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=ROOT,
                          env={**os.environ, "PATH": path}, capture_output=True, text=True,
                          timeout=RUN_TIME)
    assert done.returncode == 0, done.stderr
    shown(block, done.stdout)


def our_program(argv: list[str]) -> tuple[list[str], list[str]] | None:
    """The command line of one of this repository's programs (a script or module run by
    Python, or haboob), split into the program and its arguments; None for other programs."""
    if argv[0] in ("python", ".venv/bin/python") and len(argv) > 1:
        if argv[1] == "-m":
            return [sys.executable, "-m", argv[2]], argv[3:]
        if argv[1].endswith(".py"):
            return [sys.executable, argv[1]], argv[2:]
    if argv[0] == "haboob":
        return [sys.executable, "-m", "haboob"], argv[1:]
    return None


@functools.cache
def help_of(command: tuple[str, ...]) -> str:
    done = subprocess.run([*command, "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=RUN_TIME)
    assert done.returncode == 0, f"{' '.join(command)} --help: {done.stderr}"
    return done.stdout


@pytest.mark.parametrize("block", blocks("sh", "options only"), ids=str)
def test_long_commands_name_programs_and_options_that_exist(block):
    checked = 0
    for argv in commands(block.text):
        if argv[:2] == ["taskset", "-c"]:
            argv = argv[3:]
        if argv[0] == "make":
            makefile = (ROOT / "Makefile").read_text()
            assert re.search(rf"^{re.escape(argv[1])}:", makefile, re.M), f"no make {argv[1]}"
            checked += 1
            continue
        if (ours := our_program(argv)) is None:
            continue                           # git, nginx, wrk: not this repository's to check
        program, args = ours
        words = [a.strip("[]") for a in args]
        # the words before the first option choose a subcommand (loadgen closed, model plan)
        first = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
        text = help_of((*program, *words[:first]))
        options = {w.split("=")[0] for w in words[first:] if w.startswith("--")}
        missing = sorted(o for o in options
                         if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text))
        assert not missing, f"{' '.join(argv[:3])}... --help has no {missing}"
        checked += 1
    assert checked, f"{block}: no command of this repository to check; mark it not run"


def the_block(test: str) -> Block:
    (block,) = [b for b in BLOCKS if b.test == test]
    return block


def test_the_http_example_serves_both_applications(tmp_path):
    """README's HTTP example serves on two fixed ports until Enter: ask both, then press it."""
    program = tmp_path / "example.py"
    program.write_text(the_block("test_the_http_example_serves_both_applications").text)
    proc = subprocess.Popen([sys.executable, str(program)], cwd=tmp_path, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], WAIT)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("serving on :8000 and :8001"):
            proc.kill()
            err = proc.communicate(timeout=WAIT)[1]
            if "Address already in use" in err:
                pytest.skip(f"port 8000 or 8001 is taken here: {err.splitlines()[-1]}")
            pytest.fail(f"printed {line!r}, then: {err}")
        for url, body in (("http://127.0.0.1:8000/x", b"hello /x"),
                          ("http://127.0.0.1:8001/", b"from WSGI")):
            with urllib.request.urlopen(url, timeout=WAIT) as response:
                assert response.read() == body
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(WAIT) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
