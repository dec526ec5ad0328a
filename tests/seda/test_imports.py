"""``module:attribute`` references: each way one can fail is told apart."""

from __future__ import annotations

import pytest

import seda


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """A package on sys.path: ``refpkg.apps`` with an application and a nested attribute, and
    ``refpkg.broken``, which imports a module that does not exist."""
    package = tmp_path / "refpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "apps.py").write_text(
        "class Holder:\n    class Inner:\n        value = 42\n\n"
        "def app(environ, start_response):\n    return []\n")
    (package / "broken.py").write_text("import refpkg_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_reference_names_a_module_attribute_or_a_nested_one(modules):
    assert seda.import_object("refpkg.apps:app").__name__ == "app"
    assert seda.import_object("refpkg.apps:Holder.Inner.value") == 42


@pytest.mark.parametrize("ref", ["refpkg.apps", "a:b:c", ":app", "refpkg.apps:", "m:a..b", 7])
def test_a_malformed_reference_says_what_form_is_expected(ref):
    with pytest.raises(seda.ImportObjectError, match="expected 'module:attribute'"):
        seda.import_object(ref)


@pytest.mark.parametrize("ref, missing", [("refpkg.nothing:app", "refpkg.nothing"),
                                          ("refpkg_absent.apps:app", "refpkg_absent")])
def test_a_missing_module_is_named(modules, ref, missing):
    with pytest.raises(seda.ImportObjectError) as info:
        seda.import_object(ref)
    assert str(info.value) == (f"cannot import module {ref.split(':')[0]!r}: there is no "
                               f"module named {missing!r}")


@pytest.mark.parametrize("ref, message", [
    ("refpkg.apps:nope", "module 'refpkg.apps' has no attribute 'nope'"),
    ("refpkg.apps:Holder.Inner.nope", "'refpkg.apps:Holder.Inner' has no attribute 'nope'"),
])
def test_a_missing_attribute_is_named_with_what_lacks_it(modules, ref, message):
    with pytest.raises(seda.ImportObjectError) as info:
        seda.import_object(ref)
    assert str(info.value) == message


def test_a_module_that_fails_on_its_own_raises_its_own_error(modules):
    """A dependency missing inside the module is that module's bug, not a bad reference."""
    with pytest.raises(ModuleNotFoundError) as info:
        seda.import_object("refpkg.broken:app")
    assert not isinstance(info.value, seda.ImportObjectError)
    assert info.value.name == "refpkg_missing_dependency"
