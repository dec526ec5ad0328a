"""Which layer may import which (docs/architecture.md, "Layers"): checked over the import
graph of the sources, so that a dependency on a layer above is a failing test, not a habit.
Services import seda's public packages only, and of Haboob the package's exports only."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

# Each layer and the layers it may import (its own always). The core is seda's own modules
# (seda/_*.py, seda/__init__.py, seda/config.py): it depends on nothing above it.
ALLOWED = {
    "profile": set(),
    "model": {"profile"},
    "core": {"profile"},
    "control": {"core"},
    "io": {"core", "control"},
    "http": {"core", "io"},
    "status": {"core", "control", "io", "http", "profile"},
}
# What a service (haboob, and the services to come) may import of seda: the public packages.
PUBLIC = {"seda", "seda.config", "seda.control", "seda.io", "seda.http", "seda.status",
          "seda.profile", "seda.model"}


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ALLOWED:
        return parts[1]
    return "core"


def module_name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, src: Path = SRC) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, type-checking-only ones too."""
    here = module_name(path, src)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # "from . import response": the submodule is the target
            names = [f"{target}.{a.name}" for a in node.names] if not node.module else [target]
            found += [(node.lineno, name) for name in names]
    return found


def violations(src: Path) -> list[str]:
    wrong = []
    for path in sorted((src / "seda").rglob("*.py")):
        mine = layer(module_name(path, src))
        for line, target in imports(path, src):
            if target.split(".")[0] != "seda":
                continue
            theirs = layer(target)
            if theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{path.relative_to(src)}:{line}: {mine} imports {target} ({theirs})")
    return wrong


def test_each_layer_of_seda_imports_only_the_layers_below_it():
    wrong = violations(SRC)
    assert not wrong, "\n".join(wrong)


def test_services_import_only_seda_public_packages():
    wrong = []
    for service in ("haboob", "gnutella", "arashi"):
        for path in sorted((SRC / service).rglob("*.py")):
            for line, target in imports(path):
                if target.split(".")[0] == "seda" and target not in PUBLIC:
                    wrong.append(f"{path.relative_to(SRC)}:{line}: {target}")
    assert not wrong, "\n".join(wrong)


def haboob_reaches(src: Path, services: tuple[str, ...] = ("gnutella", "arashi")) -> list[str]:
    """Imports of Haboob's modules by the other services: they may import the package
    ``haboob`` only, whose ``__all__`` is its API for services built on it."""
    wrong = []
    for service in services:
        for path in sorted((src / service).rglob("*.py")):
            for line, target in imports(path, src):
                if target.startswith("haboob."):
                    wrong.append(f"{path.relative_to(src)}:{line}: {target}")
    return wrong


def test_services_import_only_haboobs_public_api():
    wrong = haboob_reaches(SRC)
    assert not wrong, "\n".join(wrong)


def test_a_reach_into_haboobs_modules_is_seen(tmp_path):
    (tmp_path / "arashi").mkdir()
    (tmp_path / "arashi" / "router.py").write_text("from haboob import classifier\n"
                                                   "from haboob.server import CLASSES\n"
                                                   "import haboob.supervisor\n")
    assert haboob_reaches(tmp_path, ("arashi",)) == [
        "arashi/router.py:2: haboob.server", "arashi/router.py:3: haboob.supervisor"]


def test_the_checker_sees_a_violation(tmp_path):
    """The rule has teeth: a core module importing a controller, relatively or not, and
    io importing http are reported; io importing a controller is not."""
    seda = tmp_path / "seda"
    (seda / "io").mkdir(parents=True)
    (seda / "_runtime.py").write_text("from .control.batching import BatchingController\n"
                                      "import seda.http\n")
    (seda / "io" / "files.py").write_text("from ..control import ThreadPoolController\n"
                                          "from ..http import serve\n")
    assert violations(tmp_path) == [
        "seda/_runtime.py:1: core imports seda.control.batching (control)",
        "seda/_runtime.py:2: core imports seda.http (http)",
        "seda/io/files.py:2: io imports seda.http (http)",
    ]


def private_reaches(src: Path) -> list[str]:
    """``obj._name`` where ``obj`` is not ``self``/``cls``/``super()`` and no class of the same
    module defines ``_name``: one module reading another's privates."""
    found = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text())
        own = {node.attr for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
               and node.value.id in ("self", "cls") and isinstance(node.ctx, ast.Store)}
        own |= {node.name for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        own |= {target.id for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                for stmt in node.body if isinstance(stmt, (ast.Assign, ast.AnnAssign))
                for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                continue
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            if isinstance(base, ast.Call) and getattr(base.func, "id", "") == "super":
                continue
            if node.attr not in own:
                found.append(f"{path.relative_to(src)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reads_another_modules_privates():
    wrong = private_reaches(SRC)
    assert not wrong, "\n".join(wrong)


def test_a_reach_into_another_module_is_seen(tmp_path):
    (tmp_path / "a.py").write_text("class Sink:\n    def __init__(self):\n"
                                   "        self._length = 0\n")
    (tmp_path / "b.py").write_text("def size(sink):\n    return sink._length\n")
    assert private_reaches(tmp_path) == ["b.py:2: sink._length"]
