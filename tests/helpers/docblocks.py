"""The code blocks of README.md and docs/*.md, and the marks that say how tests/test_docs.py
treats each one.

A ```python block is a program: it runs from a temporary directory. A ```sh block is commands
run from the repository. Both must finish within a minute, on loopback only. An HTML comment on
the line before a block changes that, with a reason where it is not run:

    <!-- not run: REASON -->         a fragment, a download, another machine's tools
    <!-- options only: REASON -->    too long for a test (a benchmark): each command's program
                                     must exist and its --help list every --option given to it
    <!-- run by test_NAME -->        tests/test_docs.py has a test that runs it and talks to it
    <!-- output -->                  before a ```text block: what the block above it prints
    <!-- output, any order -->       the same, as lines in any order (threads print them)

Every block names its language; ```text, ```json and ```toml blocks are data and never run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

RUNNABLE = ("python", "sh")
_MARK = re.compile(r"<!--\s*(.*?)\s*-->")
_KINDS = re.compile(r"(?P<kind>not run|options only): (?P<reason>\S.*)|run by (?P<test>test_\w+)"
                    r"|(?P<output>output(?:, any order)?)")


@dataclass
class Block:
    path: Path
    line: int                 # of the opening fence, counted from 1
    lang: str
    text: str
    mark: str | None          # the comment before it, without <!-- -->
    output: Block | None = None

    def __str__(self) -> str:
        return f"{self.path.name}:{self.line}"

    def _match(self) -> re.Match | None:
        return None if self.mark is None else _KINDS.fullmatch(self.mark)

    @property
    def kind(self) -> str:
        """'run', 'not run', 'options only', 'run by', 'output', or 'unknown' for a mark that
        says none of these."""
        if self.mark is None:
            return "run" if self.lang in RUNNABLE else "data"
        m = self._match()
        if m is None:
            return "unknown"
        return m["kind"] or ("run by" if m["test"] else "output")

    @property
    def test(self) -> str | None:
        """The test named by a 'run by' mark."""
        m = self._match()
        return m["test"] if m else None

    @property
    def any_order(self) -> bool:
        return self.mark == "output, any order"


def parse(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, each output block attached to the block above."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start, lang = i, lines[i][3:].strip()
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        before = next((line for line in reversed(lines[:start]) if line.strip()), "")
        mark = _MARK.fullmatch(before.strip())
        block = Block(path, start + 1, lang, "\n".join(lines[start + 1:i]) + "\n",
                      mark[1] if mark else None)
        if block.kind == "output" and blocks:
            blocks[-1].output = block
        blocks.append(block)
        i += 1
    return blocks


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block, as argument lists: continued lines joined, comments and
    blank lines dropped."""
    joined = text.replace("\\\n", " ")
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]
