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
