"""The layout rules of ``scripts/import_graph.py`` hold for the project (no import cycle, no private
name across modules, the oracle apart from the runtime, a Spark-free front end), and the checks
themselves catch what they are for."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import import_graph as G  # noqa: E402


def test_the_project_keeps_its_layout_rules():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_graph.py")], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr + done.stdout
    assert " 0 cycles, 0 layout rules broken" in done.stdout


def test_cycles_are_found():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}}
    found = G.cycles_of(edges)
    assert sorted(sorted(c) for c in found) == [["a", "b", "c"], ["e", "f"]]
    assert G.cycles_of({"a": {"b"}, "b": set()}) == []


def test_private_names_across_modules_are_found(tmp_path):
    (tmp_path / "one.py").write_text("def _hidden():\n    pass\n")
    (tmp_path / "two.py").write_text("from one import _hidden\nimport one\none._hidden()\n")
    (tmp_path / "three.py").write_text("from one import __doc__\n")
    modules = {"one": tmp_path / "one.py", "two": tmp_path / "two.py", "three": tmp_path / "three.py"}
    assert G.private_uses(modules) == ["two line 1: from one import _hidden", "two line 3: one._hidden"]


def test_imports_are_read_at_every_depth(tmp_path):
    (tmp_path / "a.py").write_text("import pyspark.sql\n")
    (tmp_path / "b.py").write_text("def f():\n    import a\n")
    modules = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    assert G.imports_pyspark(modules["a"]) and not G.imports_pyspark(modules["b"])
    assert G.imports_of("b", modules["b"], modules) == {"a": [(2, False)]}


def test_heavy_libraries_are_followed_through_top_level_imports_and_packages(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg import front\n")
    (tmp_path / "pkg" / "front.py").write_text("import lark\n")
    (tmp_path / "pkg" / "leaf.py").write_text("X = 1\n")
    (tmp_path / "spark.py").write_text("try:\n    import pyspark.sql\nexcept ImportError:\n    pass\n")
    (tmp_path / "user.py").write_text("import pkg.leaf\n\ndef f():\n    import spark\n")
    (tmp_path / "typing_only.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import rdflib\n")
    modules = {"pkg": tmp_path / "pkg" / "__init__.py", "pkg.front": tmp_path / "pkg" / "front.py",
               "pkg.leaf": tmp_path / "pkg" / "leaf.py", "spark": tmp_path / "spark.py",
               "user": tmp_path / "user.py", "typing_only": tmp_path / "typing_only.py"}
    full = {m: G.imports_of(m, p, modules) for m, p in modules.items()}
    loads = G.heavy_loads(full, modules)
    assert loads["pkg.leaf"] == {"lark": "pkg.front"}        # through its package's __init__
    assert loads["user"] == {"lark": "pkg.front"}            # not pyspark: that import is in a function
    assert loads["spark"] == {"pyspark": "spark"} and loads["typing_only"] == {}


def test_a_local_import_is_accepted_only_for_a_heavy_library(tmp_path):
    (tmp_path / "heavy.py").write_text("import numba\n")
    (tmp_path / "light.py").write_text("X = 1\n")
    (tmp_path / "lazy.py").write_text("Y = 2\n\ndef __getattr__(name):\n    from heavy import Z\n    return Z\n")
    (tmp_path / "user.py").write_text("def f():\n    from heavy import Z\n    from light import X\n"
                                      "    from lazy import Y, Z\n    return X, Y, Z\n\n"
                                      "if __name__ == '__main__':\n    import light\n")
    modules = {m: tmp_path / f"{m}.py" for m in ("heavy", "light", "lazy", "user")}
    full = {m: G.imports_of(m, p, modules) for m, p in modules.items()}
    reasons = {(m, line, what): why for m, line, what, why in G.local_import_reasons(full, modules)}
    assert reasons == {("lazy", 4, "heavy (Z)"): {"numba": "heavy"},
                       ("user", 2, "heavy (Z)"): {"numba": "heavy"},
                       ("user", 3, "light (X)"): None,                  # hoist it
                       ("user", 4, "lazy (Y)"): None,
                       ("user", 4, "lazy (Z)"): {"numba": "heavy"}}     # served by lazy's __getattr__
