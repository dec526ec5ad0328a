"""``module:attribute`` references: how a config file or a command line names a handler, a
predicate or an application, resolved in one place so every service reports the same errors."""

from __future__ import annotations

import importlib
from typing import Any

_FORM = "expected 'module:attribute' (as 'myapp.wsgi:application'), got {!r}"


class ImportObjectError(ImportError):
    """A reference that names no object. The message says which part failed: the reference's
    form, its module (not found), or an attribute (missing)."""


def import_object(ref: str) -> Any:
    """``"package.module:attr"`` (or ``"module:attr.sub"``) -> that object.

    Raises ``ImportObjectError`` when the reference is malformed, its module does not exist or
    an attribute is missing. An exception raised while the module runs (a missing dependency of
    its own, a syntax error) propagates as it is: it is a bug in that module, and its traceback
    shows where."""
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise ImportObjectError(_FORM.format(ref))
    module_name, attr = ref.split(":")
    parts = attr.split(".")
    if not module_name or not all(parts):
        raise ImportObjectError(_FORM.format(ref))
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only the module named (or a package above it) being absent is the reference's fault.
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            raise
        raise ImportObjectError(f"cannot import module {module_name!r}: there is no module "
                                f"named {exc.name!r}") from None
    for i, part in enumerate(parts):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            owner = f"module {module_name!r}" if i == 0 else repr(f"{module_name}:"
                                                                  + ".".join(parts[:i]))
            raise ImportObjectError(f"{owner} has no attribute {part!r}") from None
    return obj
