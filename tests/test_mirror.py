"""The tests mirror the code they test: tests/seda/http/test_server.py tests
src/seda/http/server.py, tests/benchmarks/test_loadgen.py tests benchmarks/loadgen/. Helpers live
in tests/helpers/ and are imported by name; conftest.py files hold only fixtures."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
ROOT = TESTS.parent
MIRRORED = {"seda": ROOT / "src" / "seda", "haboob": ROOT / "src" / "haboob",
            "gnutella": ROOT / "src" / "gnutella", "arashi": ROOT / "src" / "arashi",
            "benchmarks": ROOT / "benchmarks"}
# test files that may not follow the rule yet, each with why; listed files must exist
WAITING: dict[str, str] = {}


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def modules_in(directory: Path) -> set[str]:
    """What a test file there may be named after: its modules and packages, a private one
    (``_loop.py``) under its public name (``test_loop.py``), and ``package`` for tests of the
    package as a whole (its exports, its import rules)."""
    if not directory.is_dir():
        return set()
    names = {p.stem for p in directory.glob("*.py") if p.stem != "__init__"}
    if (directory / "__init__.py").exists():
        names.add("package")
    names |= {d.name for d in directory.iterdir() if (d / "__init__.py").exists()}
    return {name.lstrip("_") for name in names}


def imported(tree: ast.Module) -> list[str]:
    """The modules a file imports, by their dotted names."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
    return names


def test_every_test_directory_is_a_package():
    """Packages let two directories hold test files of the same name (http/test_server.py and
    haboob/test_server.py) and make ``tests.helpers`` importable."""
    missing = sorted({str(p.parent.relative_to(ROOT)) for p in python_files()
                      if not (p.parent / "__init__.py").exists()})
    assert not missing, f"add an __init__.py to {missing}"


def test_test_files_are_named_after_the_module_they_test():
    wrong = []
    for path in python_files():
        rel = path.relative_to(TESTS)
        if not path.name.startswith("test_") or rel.parts[0] not in MIRRORED:
            continue
        if rel.as_posix() in WAITING:
            continue
        source = MIRRORED[rel.parts[0]].joinpath(*rel.parts[1:-1])
        name = path.stem.removeprefix("test_")
        if not any(name == m or name.startswith(m + "_") for m in modules_in(source)):
            wrong.append(f"{rel}: names no module of {source.relative_to(ROOT)}")
    assert not wrong, "name a test file test_<module>[_<concern>].py:\n" + "\n".join(wrong)
    gone = [name for name in WAITING if not (TESTS / name).exists()]
    assert not gone, f"take {gone} off WAITING: they have moved"


def test_helpers_live_in_tests_helpers():
    stray = [str(p.relative_to(ROOT)) for p in python_files()
             if not p.name.startswith("test_") and p.name not in ("conftest.py", "__init__.py")
             and p.parent.name != "helpers"]
    assert not stray, f"move {stray} to tests/helpers/"


def test_conftest_files_hold_only_fixtures_and_nothing_imports_them():
    problems = []
    for path in python_files():
        tree = ast.parse(path.read_text())
        if any(name.split(".")[-1] == "conftest" for name in imported(tree)):
            problems.append(f"{path.relative_to(ROOT)} imports a conftest")
        if path.name != "conftest.py":
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                problems.append(f"{path.relative_to(ROOT)}: class {node.name}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
                if not fixture and not node.name.startswith("pytest_"):
                    problems.append(f"{path.relative_to(ROOT)}: {node.name} is no fixture")
    assert not problems, "helpers go to tests/helpers/:\n" + "\n".join(problems)
