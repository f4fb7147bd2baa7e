#!/usr/bin/env python3
"""The project's module import graph, and the layout rules it must keep (exit 1 when one breaks):

* no import cycle: every ``import`` of a project module, at the top of a file or inside a function,
  is an edge, so a function-local import cannot hide a cycle;
* no private name (``_x``) of a project module imported or read by another module;
* the oracle (``cep.engines.reference``) imports only the algebra, the value semantics
  (``cep.terms``), the engines' shared definitions (``cep.engines.errors``, ``cep.engines.rules``)
  and term ids; no runtime module imports it (``ORACLE_USERS`` lists the known exceptions, each
  with the issue that removes it);
* the front end (``cep.syntax``, ``cep.lowering``, ``cep.algebra``, ``cep.terms``, ``paths``'
  parser and algebra) and the driver engine of ``query --at`` (``cep.engines.driver.answers`` and
  what it reads with: ``cep.io``'s line readers, ``rdfcore.sources``, ``reasoner.local``) do not import pyspark, not even
  through another module: a query parsed or answered on the driver loads no Spark.

``--dot`` prints the graph in Graphviz form, ``--packages`` the graph between (sub-)packages.

Run: ``python3 scripts/import_graph.py [--dot] [--packages]`` from the repository root.
"""
from __future__ import annotations

import argparse
import ast
import graphlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cep", "paths", "reasoner", "rdfcore", "jobs", "scenarios", "ontologies", "devcluster")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        base = ROOT / package
        if base.is_dir():
            for path in sorted(base.rglob("*.py")):
                found[module_name(path)] = path
    return found


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``name`` refers to: itself, or the longest prefix that is a module."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> dict[str, list[tuple[int, bool]]]:
    """{imported module: [(line, at top level?)]} for the project modules ``module`` imports."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    top = {id(node) for node in tree.body}
    out: dict[str, list[tuple[int, bool]]] = {}

    def add(target: str | None, node: ast.AST) -> None:
        if target and target != module:
            out.setdefault(target, []).append((node.lineno, id(node) in top))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(resolve(alias.name, modules), node)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                target = resolve(f"{prefix}.{alias.name}", modules)
                if target is None or target == prefix and f"{prefix}.{alias.name}" not in modules:
                    target = resolve(prefix, modules)
                add(target, node)
    return out


def graph() -> dict[str, dict[str, list[tuple[int, bool]]]]:
    modules = project_modules()
    return {m: imports_of(m, p, modules) for m, p in modules.items()}


def cycles_of(edges: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles, each as the modules along it (``graphlib`` finds one at a time; an edge of each
    found cycle is set aside so that the next one shows)."""
    remaining = {m: set(targets) for m, targets in edges.items()}
    found = []
    while True:
        try:
            graphlib.TopologicalSorter(remaining).prepare()
            return found
        except graphlib.CycleError as error:
            cycle = error.args[1]            # [a, b, ..., a]: each imported by the one after it
            found.append(cycle[:-1])
            remaining[cycle[1]].discard(cycle[0])


ORACLE = "cep.engines.reference"
#: what the oracle may import: the algebra, the value semantics, the engines' shared definitions
ORACLE_MAY_IMPORT = ("cep.algebra", "cep.terms", "cep.engines.errors", "cep.engines.rules", "rdfcore.hashing",
                     "rdfcore.errors", "rdfcore.vocab", "paths.reference", "paths.algebra", "paths.named")
#: runtime modules that still import the oracle, and why (each is a known gap, not a licence)
ORACLE_USERS = {
    "cep.continuous.instants": "the per-instant languages' driver path evaluates with the reference; issue 37 "
                               "moves it onto the driver engine",
}
WITHOUT_PYSPARK = ("cep.syntax", "cep.lowering", "cep.algebra", "cep.terms", "paths.syntax", "paths.parser",
                   "paths.algebra", "paths.lowering", "cep.engines.driver.answers", "cep.engines.driver.static",
                   "cep.io.formats", "cep.io.lineparse", "cep.io.linescan", "rdfcore.sources", "reasoner.local")


def private_uses(modules: dict[str, Path]) -> list[str]:
    """``from m import _x`` and ``m._x`` where m is another project module."""
    found = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level and resolve(node.module, modules):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in modules:
                        aliases[alias.asname or alias.name] = full
                    elif alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{module} line {node.lineno}: from {node.module} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if resolve(alias.name, modules):
                        aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in aliases):
                found.append(f"{module} line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def imports_pyspark(path: Path) -> bool:
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(n == "pyspark" or n.startswith("pyspark.") for n in names):
            return True
    return False


def rule_breaks(full, modules: dict[str, Path]) -> list[str]:
    out = [f"private name used outside its module: {p}" for p in private_uses(modules)]
    for target in full.get(ORACLE, {}):
        if not target.startswith(ORACLE_MAY_IMPORT):
            out.append(f"the oracle {ORACLE} imports {target}")
    for module, targets in full.items():
        if ORACLE in targets and module not in ORACLE_USERS and module != ORACLE:
            out.append(f"runtime module {module} imports the oracle {ORACLE}")
    top = {m: {t for t, uses in targets.items() if any(at_top for _line, at_top in uses)} for m, targets in full.items()}
    for module in full:
        if not module.startswith(WITHOUT_PYSPARK):
            continue
        seen, stack = set(), [module]
        while stack:
            m = stack.pop()
            if m in seen:
                continue
            seen.add(m)
            if imports_pyspark(modules[m]):
                out.append(f"{module} imports pyspark" + ("" if m == module else f" through {m}"))
                break
            stack.extend(top.get(m, ()))
    return out


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="print the graph in Graphviz form")
    parser.add_argument("--packages", action="store_true", help="the graph between (sub-)packages")
    args = parser.parse_args(argv)
    full = graph()
    edges = {m: set(targets) for m, targets in full.items()}
    if args.packages:
        collapsed: dict[str, set[str]] = {}
        for m, targets in edges.items():
            collapsed.setdefault(package_of(m), set()).update(
                package_of(t) for t in targets if package_of(t) != package_of(m))
        edges = collapsed
    if args.dot:
        print("digraph imports {")
        for m in sorted(edges):
            for t in sorted(edges[m]):
                print(f'  "{m}" -> "{t}";')
        print("}")
    cycles = cycles_of(edges)
    for cycle in cycles:
        print(f"import cycle among {len(cycle)} modules:", file=sys.stderr)
        for m, t in zip(cycle[1:] + cycle[:1], cycle):
            where = ", ".join(f"line {line}{'' if top else ' (in a function)'}"
                              for line, top in sorted(set(full.get(m, {}).get(t, [])))) if not args.packages else ""
            print(f"  {m} imports {t}" + (f"  [{where}]" if where else ""), file=sys.stderr)
    breaks = [] if args.packages else rule_breaks(full, project_modules())
    for line in breaks:
        print(line, file=sys.stderr)
    if not args.dot:
        print(f"{len(edges)} {'packages' if args.packages else 'modules'}, "
              f"{sum(len(t) for t in edges.values())} import edges, {len(cycles)} cycles, "
              f"{len(breaks)} layout rules broken")
        if not args.packages:
            local = len({(m, line) for m, targets in full.items() for uses in targets.values()
                         for line, top in uses if not top})
            print(f"{local} function-local import statements of project modules: every one is an edge of "
                  f"this graph, which has no cycle, so none of them hides one")
            for module, why in ORACLE_USERS.items():
                print(f"known: {module} imports the oracle ({why})")
    return 1 if cycles or breaks else 0


if __name__ == "__main__":
    sys.exit(main())
