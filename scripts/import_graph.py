#!/usr/bin/env python3
"""The project's module import graph, and the layout rules it must keep (exit 1 when one breaks):

* no import cycle: every ``import`` of a project module, at the top of a file or inside a function,
  is an edge, so a function-local import cannot hide a cycle;
* no private name (``_x``) of a project module imported or read by another module;
* an import of a project module inside a function is there to keep a heavy library (``HEAVY``:
  pyspark, numba, numpy, rdflib, lark, matplotlib, graphframes) off the importing module's start-up: one
  that would load none the module does not load already (through its top-level imports, those of
  its packages' ``__init__``, and so on) is hoisted to the top (``LOCAL_IMPORTS_KEPT`` lists the
  exceptions, each with its reason); ``--local-imports`` lists them all with the library each keeps
  off. Imports under ``if TYPE_CHECKING:`` or ``if __name__ == "__main__":`` are not function-local;
* the oracle (``cep.engines.reference``) imports only the algebra, the value semantics
  (``cep.terms``), the engines' shared definitions (``cep.engines.errors``, ``cep.engines.rules``)
  and term ids; no runtime module imports it (``ORACLE_USERS`` would list a known exception, with
  the issue that removes it; it lists none, and an entry whose module no longer imports the
  oracle is a broken rule);
* the front end (``cep.syntax``, ``cep.lowering``, ``cep.algebra``, ``cep.terms``, ``paths``'
  parser and algebra) and the driver engine of ``query --at`` (``cep.engines.driver.answers`` and
  what it reads with: ``cep.io``'s line readers, ``rdfcore.sources``, ``reasoner.local``) do not import pyspark, not even
  through another module: a query parsed or answered on the driver loads no Spark.

``--dot`` prints the graph in Graphviz form, ``--packages`` the graph between (sub-)packages,
``--local-imports`` the function-local imports of project modules and why each is local.

Run: ``python3 scripts/import_graph.py [--dot] [--packages] [--local-imports]`` from the repository root.
"""
from __future__ import annotations

import argparse
import ast
import functools
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


@functools.cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def import_nodes(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of a module with where it runs: ``"top"`` (when the module loads: at
    the top, in a class body, or in a top-level ``if``/``try``), ``"function"`` (in a function's
    body, when it is called), ``"type-checking"`` (under ``if TYPE_CHECKING:``, never at run time) or
    ``"main"`` (under ``if __name__ == "__main__":``, when the file runs as a script)."""
    found = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = "function"
            elif isinstance(child, ast.If) and where == "top":
                test = ast.unparse(child.test)
                if test in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                    found.extend((n, "type-checking") for n in ast.walk(child)
                                 if isinstance(n, (ast.Import, ast.ImportFrom)))
                    for other in child.orelse:
                        visit(ast.Module(body=[other], type_ignores=[]), where)
                    continue
                if test in ("__name__ == '__main__'", '__name__ == "__main__"'):
                    inner = "main"
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, where))
            visit(child, inner)

    visit(tree, "top")
    return sorted(found, key=lambda pair: (pair[0].lineno, pair[0].col_offset))


def targets_of(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
               modules: dict[str, Path]) -> list[str]:
    """The project modules an import statement of ``module`` imports (not ``module`` itself)."""
    return [t for _name, targets in alias_targets(node, module, is_package, modules) for t in targets]


def alias_targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
                  modules: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """[(name imported, the project modules importing it loads)] for each name of an import statement
    of ``module``: the module named first, then (for a name a package's PEP 562 ``__getattr__``
    serves) what that hook imports."""
    out = []
    if isinstance(node, ast.Import):
        out = [(alias.name, [resolve(alias.name, modules)]) for alias in node.names]
    else:
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
            lazy = lazy_targets(target, alias.name, modules) if target and f"{target}.{alias.name}" not in modules else []
            out.append((alias.name, [target, *lazy]))
    return [(name, kept) for name, targets in out if (kept := [t for t in targets if t and t != module])]


def lazy_targets(module: str, name: str, modules: dict[str, Path]) -> list[str]:
    """What ``from module import name`` imports besides ``module`` when ``name`` is not defined in
    it but served by its PEP 562 ``__getattr__`` (``cep.evaluate``, ``paths.evaluate``): the project
    modules that ``__getattr__`` imports."""
    tree = parsed(modules[module])
    hooks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
    if not hooks or name == "*" or name in top_level_names(tree):
        return []
    return [t for n in ast.walk(hooks[0]) if isinstance(n, (ast.Import, ast.ImportFrom))
            for t in targets_of(n, module, modules[module].name == "__init__.py", modules)]


def top_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds when it loads (not those bound inside its functions or classes)."""
    names = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in child.names)
            elif not isinstance(child, ast.Lambda):
                visit(child)

    visit(tree)
    return names


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> dict[str, list[tuple[int, bool]]]:
    """{imported module: [(line, when the module loads?)]} for the project modules ``module`` imports
    (anywhere: at the top, in a function, under ``TYPE_CHECKING``)."""
    out: dict[str, list[tuple[int, bool]]] = {}
    tree = parsed(path)
    for node, where in import_nodes(tree):
        for target in targets_of(node, module, path.name == "__init__.py", modules):
            out.setdefault(target, []).append((node.lineno, where == "top"))
    for line, target in dynamic_imports(tree, modules):
        out.setdefault(target, []).append((line, False))
    return out


def dynamic_imports(tree: ast.Module, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module) of the project modules a module that calls ``importlib.import_module`` names
    as string constants (``jobs.cli``'s ``COMMANDS``): edges of the graph like any import, taken
    when the function runs."""
    calls = any(isinstance(n, ast.Attribute) and n.attr == "import_module" for n in ast.walk(tree))
    if not calls:
        return []
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in modules]


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
ORACLE_USERS: dict[str, str] = {}
WITHOUT_PYSPARK = ("cep.syntax", "cep.lowering", "cep.algebra", "cep.terms", "paths.syntax", "paths.parser",
                   "paths.algebra", "paths.lowering", "cep.engines.driver.answers", "cep.engines.driver.static",
                   "cep.engines.driver.csparql", "cep.engines.driver.rsepql",
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


#: the libraries a module must not load at start-up unless it needs them there: each takes from a
#: tenth of a second (lark) to seconds (pyspark, numba) to import
HEAVY = ("pyspark", "numba", "numpy", "rdflib", "lark", "matplotlib", "graphframes")
#: function-local imports of project modules kept local although hoisting them would load no heavy
#: library: {(module, imported module): why}; each is a design gap, not a licence
LOCAL_IMPORTS_KEPT = {
    ("jobs.streaming", "rdfcore.jars"): "the jar cache loads urllib.request, ssl, http and email (55 ms, which "
                                        "jobs.query's start-up would pay through jobs.streaming); only a Kafka "
                                        "source or sink needs it",
}


def heavy_imports(path: Path) -> set[str]:
    """The heavy libraries a file imports itself when it loads (not in a function, not under
    ``TYPE_CHECKING``)."""
    found = set()
    for node, where in import_nodes(parsed(path)):
        if where != "top" or isinstance(node, ast.ImportFrom) and node.level:
            continue
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        found.update(n.split(".")[0] for n in names if n.split(".")[0] in HEAVY)
    return found


def imports_pyspark(path: Path) -> bool:
    return "pyspark" in heavy_imports(path)


def parents(module: str, modules) -> list[str]:
    """The packages Python loads before ``module``: ``a`` and ``a.b`` for ``a.b.c``."""
    parts = module.split(".")
    return [p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in modules]


def heavy_loads(full, modules: dict[str, Path]) -> dict[str, dict[str, str]]:
    """{module: {heavy library: the nearest module that imports it}} for what importing each module
    loads: its own top-level imports, those of the packages above it, and so on through the project
    modules they import when they load."""
    top = {m: {t for t, uses in targets.items() if any(at_top for _line, at_top in uses)} for m, targets in full.items()}
    direct = {m: heavy_imports(path) for m, path in modules.items()}
    out = {}
    for module in modules:
        found: dict[str, str] = {}
        seen, queue = {module}, [module]
        while queue:                      # breadth first, so that the module named is the nearest
            m = queue.pop(0)
            for library in sorted(direct[m]):
                found.setdefault(library, m)
            for t in sorted(top.get(m, set()) | set(parents(m, modules))):
                if t not in seen:
                    seen.add(t)
                    queue.append(t)
        out[module] = found
    return out


def local_imports(modules: dict[str, Path]) -> list[tuple[str, int, str, list[str]]]:
    """(module, line, names, the project modules importing them loads) for each import of a project
    module inside a function; the names of one statement are grouped by what they load (``from cep
    import compile_query, evaluate``: ``evaluate`` loads ``cep.engines.spark.evaluate`` too)."""
    out = []
    for module, path in modules.items():
        for node, where in import_nodes(parsed(path)):
            if where == "function":
                grouped: dict[tuple[str, ...], list[str]] = {}
                for name, targets in alias_targets(node, module, path.name == "__init__.py", modules):
                    grouped.setdefault(tuple(targets), []).append(name)
                for targets, names in grouped.items():
                    out.append((module, node.lineno, ", ".join(names), list(targets)))
    return out


def local_import_reasons(full, modules: dict[str, Path]) -> list[tuple[str, int, str, dict[str, str] | str | None]]:
    """Each import of a project module inside a function, (module, line, what: ``m`` or ``m (names)``),
    with why it is local: {heavy library: through which module} that hoisting it would
    load and the module does not already load, the reason it is kept in ``LOCAL_IMPORTS_KEPT``, or
    None (nothing: it must be hoisted)."""
    loads = heavy_loads(full, modules)
    out = []
    for module, line, names, targets in local_imports(modules):
        added = {}
        for target in targets:
            for lib, via in loads[target].items():
                if lib not in loads[module]:
                    added.setdefault(lib, via)
        what = targets[0] if targets[0].endswith(names) else f"{targets[0]} ({names})"
        out.append((module, line, what, added or LOCAL_IMPORTS_KEPT.get((module, targets[0]))))
    return out


def rule_breaks(full, modules: dict[str, Path]) -> list[str]:
    out = [f"private name used outside its module: {p}" for p in private_uses(modules)]
    for target in full.get(ORACLE, {}):
        if not target.startswith(ORACLE_MAY_IMPORT):
            out.append(f"the oracle {ORACLE} imports {target}")
    for module, targets in full.items():
        if ORACLE in targets and module not in ORACLE_USERS and module != ORACLE:
            out.append(f"runtime module {module} imports the oracle {ORACLE}")
    for module in ORACLE_USERS:
        if ORACLE not in full.get(module, {}):
            out.append(f"ORACLE_USERS lists {module}, which no longer imports the oracle {ORACLE}")
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
            stack.extend(top.get(m, set()) | set(parents(m, modules)))
    for module, line, what, why in local_import_reasons(full, modules):
        if why is None:
            out.append(f"{module} line {line}: the function-local import of {what} loads no heavy library "
                       f"that {module} does not load already: hoist it to the top of the module")
    for module, target in LOCAL_IMPORTS_KEPT:
        if not any(m == module and ts[0] == target for m, _line, _name, ts in local_imports(modules)):
            out.append(f"LOCAL_IMPORTS_KEPT lists {module} -> {target}, which is not a function-local import")
    return out


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="print the graph in Graphviz form")
    parser.add_argument("--packages", action="store_true", help="the graph between (sub-)packages")
    parser.add_argument("--local-imports", action="store_true",
                        help="list the function-local imports of project modules and the heavy library each "
                             "keeps off the module's start-up")
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
            reasons = local_import_reasons(full, project_modules())
            local = len({(m, line) for m, line, _t, _why in reasons})
            print(f"{local} function-local import statements of project modules: every one is an edge of "
                  f"this graph, which has no cycle, so none of them hides one")
            accepted: dict[str, int] = {}
            for _m, _line, _t, why in reasons:
                if why is not None:
                    key = "+".join(sorted(why, key=HEAVY.index)) if isinstance(why, dict) else "LOCAL_IMPORTS_KEPT"
                    accepted[key] = accepted.get(key, 0) + 1
            print(f"{sum(accepted.values())} of their imports are accepted as local, by the heavy libraries hoisting "
                  f"would add to the module's start-up: " + ", ".join(f"{k} {n}" for k, n in sorted(accepted.items(), key=lambda kv: -kv[1]))
                  + " (--local-imports lists them)")
            if args.local_imports:
                for module, line, what, why in reasons:
                    because = ("HOIST: loads no heavy library" if why is None else f"kept: {why}" if isinstance(why, str)
                               else ", ".join(lib + ("" if via == what.split(" ")[0] else f" (through {via})") for lib, via in why.items()))
                    print(f"  {module} line {line}: {what}: {because}")
            for module, why in ORACLE_USERS.items():
                print(f"known: {module} imports the oracle ({why})")
            for (module, target), why in LOCAL_IMPORTS_KEPT.items():
                print(f"known: {module} imports {target} inside functions ({why})")
    return 1 if cycles or breaks else 0


if __name__ == "__main__":
    sys.exit(main())
