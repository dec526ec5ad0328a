"""Graphviz DOT text for a stage graph inferred from real enqueues."""

from __future__ import annotations


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(stages: list[str], edges: list[tuple[str, str, int]]) -> str:
    """``stages`` become boxes; each ``(src, dst, count)`` an arrow labelled with its count."""
    lines = ["digraph seda {", "  rankdir=LR;", "  node [shape=box, fontname=\"Helvetica\"];"]
    lines += [f"  {_quote(name)};" for name in stages]
    lines += [f"  {_quote(src)} -> {_quote(dst)} [label=\"{count}\"];" for src, dst, count in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"
