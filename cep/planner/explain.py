"""``query --explain``: a query's plan as text, the way Spark's ``explain`` prints one (pure Python).

The query as written, the planner's rewrite of it (``cep.planner.logical``) and each step with its
reason, then where it runs and why (the caller's ``engine`` lines). A tree is printed one operator
a line, its operands indented below it; an operand short enough is printed on its operator's line.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from cep import algebra as A
from cep.planner.logical import Logical

__all__ = ["explain", "render"]

_LOCAL = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")

#: an operator whose text is at most this long is printed on one line
WIDTH = 100


def _shorten(text: str, prefixes: dict) -> str:
    """``text`` with each ``<IRI>`` in one of ``prefixes``' namespaces written ``prefix:local``."""
    spaces = sorted(prefixes.items(), key=lambda item: -len(item[1]))

    def short(match: re.Match) -> str:
        iri = match.group(1)
        for name, namespace in spaces:
            local = iri[len(namespace):]
            if iri.startswith(namespace) and _LOCAL.fullmatch(local):
                return f"{name}:{local}"
        return match.group(0)

    return re.sub(r"<([^<>\s]*)>", short, text) if spaces else text


def _label(node) -> str:
    """``node``'s operator without its operands."""
    match node:
        case A.Project():
            return "SELECT " + (" ".join(str(v) for v in node.variables) or "*") + (" DISTINCT" if getattr(node, "distinct", False) else "")
        case A.Construct():
            return "CONSTRUCT"
        case A.Filter():
            return f"FILTER {node.condition}"
        case A.Background():
            return f"BACKGROUND {A.graph_name(node.graph)}"
        case A.StreamPattern():
            return f"WINDOW {node.name} ON {node.stream} {node.window}"
        case A.LeftJoin():
            return "LEFTJOIN" + ("" if node.condition is None else f" {node.condition}")
        case A.Extend():
            return f"BIND ({node.expr} AS {node.var})"
    return {"Join": "JOIN", "Union": "OR", "Sequence": "SEQ", "SeqWithout": "SEQ_WO", "NoHead": "NO_HEAD",
            "NoTail": "NO_TAIL"}.get(type(node).__name__, type(node).__name__.upper())


def render(node, prefixes: dict | None = None, indent: str = "") -> list[str]:
    """``node`` (a pattern or a form) as indented lines (module doc)."""
    prefixes = prefixes or {}
    text = _shorten(str(node), prefixes)
    children = A.children(node) if not isinstance(node, (A.BGP, A.Values)) else ()
    if len(indent) + len(text) <= WIDTH or not children:
        return [indent + text]
    lines = [indent + _shorten(_label(node), prefixes)]
    for child in children:
        lines.extend(render(child, prefixes, indent + "  "))
    return lines


def explain(logical: Logical, engine: Iterable[str] = ()) -> str:
    """The plan of ``logical`` as text (module doc); ``engine``: lines that say where it runs and why."""
    prefixes = dict(logical.written.prefixes)
    out = ["== Query, as written ==", *render(logical.written.form, prefixes), ""]
    if logical.changed:
        out += ["== Query, as the engines evaluate it ==", *render(logical.query.form, prefixes), ""]
    else:
        out += ["== Query, as the engines evaluate it: as written ==", ""]
    out.append("== Planner ==")
    out += [f"- {_shorten(str(step), prefixes)}" for step in logical.steps] or ["- nothing to rewrite"]
    engine = list(engine)
    if engine:
        out += ["", "== Engine ==", *engine]
    return "\n".join(out) + "\n"
