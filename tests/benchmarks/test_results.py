"""The experiment scripts' results directory, named in one place."""

from __future__ import annotations

import ast
from pathlib import Path

from benchmarks import results


def test_result_path_makes_the_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS", tmp_path / "docs" / "results")
    path = results.result_path("x.md")
    assert path == tmp_path / "docs" / "results" / "x.md" and path.parent.is_dir()


def test_no_script_works_out_the_directory_itself():
    here = Path(results.__file__).parent
    own = [str(p.relative_to(here.parent)) for p in sorted(here.rglob("*.py"))
           if p.name != "results.py"
           and any(isinstance(node, ast.Constant) and node.value == "results"
                   for node in ast.walk(ast.parse(p.read_text())))]
    assert not own, f"{own}: use benchmarks.results.result_path"
