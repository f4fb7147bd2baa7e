"""rdfcore.progress: phase lines on a terminal only; the JSON summary stays the only stdout line."""
from __future__ import annotations

import io
import json

from ontologies import chain
from rdfcore.progress import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_prints_phase_rows_elapsed_on_a_terminal_only(monkeypatch):
    monkeypatch.delenv("RSP_PROGRESS", raising=False)
    tty, pipe = _Tty(), io.StringIO()
    Progress("job", stream=tty).phase("dictionary written", rows=1234)
    Progress("job", stream=pipe).phase("dictionary written", rows=1234)
    assert tty.getvalue().startswith("job: dictionary written — 1,234 rows, ") and tty.getvalue().endswith(" s\n")
    assert pipe.getvalue() == ""


def test_env_forces_it(monkeypatch):
    monkeypatch.setenv("RSP_PROGRESS", "1")
    pipe = io.StringIO()
    Progress("job", stream=pipe).phase("x")
    assert pipe.getvalue().startswith("job: x — ")


def test_builder_keeps_one_json_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RSP_PROGRESS", "1")
    assert chain.main(["--depth", "3", "--out", str(tmp_path / "c.nt")]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1 and json.loads(captured.out)["triples"] == 3
    assert captured.err.startswith("chain: ") and "3 rows" in captured.err
