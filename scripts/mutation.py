#!/usr/bin/env python3
"""Re-run the hand mutation pass recorded in ``tests/MUTATION.md``.

The main table of that file (``| id | file | line | mutant | result |``, ids C01-C22, I01-I21,
S01-S15) records, for each mutant, one textual change (`` `OLD` → `NEW` ``) and the test(s) that
kill it. This script parses that table and

* ``--list``: locates every mutant in today's sources and prints, per row, its id, its current
  ``file:line``, the tests that kill it, or why it is stale or equivalent. A mutant is located by
  its OLD text, not by its line number (the lines have drifted): the text must occur in the file;
  when it occurs several times, the occurrence nearest the recorded line is the mutant, among
  those inside the function the mutant's description starts with (``_fixpoint: ...``) when some
  are (a function that moved down the file takes its occurrences with it). A row
  whose OLD text is gone, or whose OLD and NEW texts are the same (the change was lost when the
  table was written), is stale. The named tests are checked by one ``pytest --collect-only`` of
  their files (collection starts no JVM); a test that is not collected is stale too. Exit 1 if
  any non-equivalent row is stale.
* ``[IDS...]`` (default: every non-equivalent row): applies each mutant (OLD replaced by NEW at
  the located offset), runs its killing tests with
  ``python3 -m pytest -x -q -p no:cacheprovider -o addopts= --hypothesis-seed=0
  --hypothesis-profile=mutation TESTS`` (no shrinking: the failing example is the kill) and
  restores the file's original bytes (and modification time) afterwards, whatever happens
  (a failure, a timeout, Ctrl-C, SIGTERM). Pytest's exit code 1 means killed, 0 survived, any
  other code an error (2 interrupted or a collection error, 3 internal error, 4 usage error such
  as a test not found, 5 no test collected). Prints a table and ``N killed, M survived, K errors
  of T``; exit 1 when a mutant's result differs from the record (a non-equivalent mutant
  survived, an equivalent one was killed) or any errored, exit 3 when a file was not restored
  byte-identical.

Rows with no test named (the equivalent ones) run the suite the table's preamble names for their
file (``PREAMBLE_TESTS``). ``--hypothesis-seed`` fixes hypothesis' examples and, as a forced seed
does, turns its example database off: a kill is the drawn example itself, not a replay. The
subprocess writes no bytecode, so no ``.pyc`` of a mutant outlives it. The smaller tables of the
later sections (EP-SPARQL/RSEP-QL, C-SPARQL) describe their mutants in prose: they are listed as
not automated.

Run from anywhere (paths are taken from the repository root):

    python3 scripts/mutation.py --list
    python3 scripts/mutation.py C03 C22            # two mutants
    python3 scripts/mutation.py --timeout 600      # every non-equivalent mutant (starts Spark)
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, Sequence

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "MUTATION.md"
TESTS_DIR = "tests"

# The table's files as they are now: cep/ was split into engines after the pass was recorded.
# A moved file maps to its new module; when the OLD text is no longer there, the other modules
# of the new module's package are searched (a function that moved on to a sibling module).
# paths/compiler.py did not move.
MOVED: dict[str, str] = {
    "cep/intervals.py": "cep/engines/spark/intervals.py",
    "cep/spark.py": "cep/engines/spark/evaluate.py",
}

# The tests the preamble of tests/MUTATION.md runs per file, for rows that name none (the
# equivalent survivors). "The window-BGP test" of test_cep_operators.py is its only window-BGP test.
PREAMBLE_TESTS: dict[str, tuple[str, ...]] = {
    "paths/compiler.py": ("tests/test_paths_local.py",),
    "cep/intervals.py": ("tests/test_cep_operators.py", "tests/test_cep_differential.py"),
    "cep/spark.py": (
        "tests/test_cep_operators.py::test_window_bgp_matches_inside_one_item_not_across_items_at_the_same_time",
        "tests/test_cep_evaluate.py",
        "tests/test_cep_differential.py::test_sequences_spark_equals_reference",
    ),
}

MAIN_HEADER = ("id", "file", "line", "mutant", "result")
ROW_ID = re.compile(r"^[A-Z]\d+$")
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")
MUTANT_TEXTS = re.compile(r"`([^`]+)` → `([^`]*)`\s*$")
LEADING_NAME = re.compile(r"\s*([A-Za-z_]\w*)")
TEST_NODE_ID = re.compile(r"`([\w./-]+\.py::[^`\s]+)`")
EQUIVALENT = re.compile(r"^survived\s+—\s+equivalent")
DEFAULT_TIMEOUT = 900.0
PYTEST_EXIT_CODES = {2: "interrupted or collection error", 3: "internal error", 4: "usage error",
                     5: "no test collected"}
OUTPUT_TAIL_LINES = 15


@dataclass(frozen=True)
class Row:
    """One row of the main table."""
    id: str
    file: str
    line: int
    description: str                  # the mutant cell before its `OLD` → `NEW`
    old: str
    new: str
    result: str

    @property
    def equivalent(self) -> bool:
        return bool(EQUIVALENT.match(self.result))

    @property
    def named_tests(self) -> tuple[str, ...]:
        """Every backticked ``file.py::name`` of the result, as a node id under tests/."""
        ids = [node if node.startswith(TESTS_DIR + "/") else f"{TESTS_DIR}/{node}"
               for node in TEST_NODE_ID.findall(self.result)]
        return tuple(dict.fromkeys(ids))

    @property
    def tests(self) -> tuple[str, ...]:
        """The tests to run: the named ones, else those the preamble names for the file."""
        return self.named_tests or PREAMBLE_TESTS.get(self.file, ())


@dataclass(frozen=True)
class ProseRow:
    """A row of a later section's table: a mutant described in prose, not automated."""
    section: str
    description: str


@dataclass(frozen=True)
class Location:
    """Where a row's OLD text is today, or why it cannot be found."""
    path: str | None = None
    line: int | None = None
    offset: int | None = None
    occurrences: int = 0
    problem: str | None = None


@dataclass
class Outcome:
    """What running one mutant's tests gave."""
    row: Row
    status: str                       # killed | survived | error
    detail: str = ""
    seconds: float = 0.0
    output_tail: list[str] = field(default_factory=list)

    @property
    def as_recorded(self) -> bool:
        expected = "survived" if self.row.equivalent else "killed"
        return self.status == expected


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every ``finally`` restores its file."""


# --- the table ---------------------------------------------------------------------------------

def split_cells(line: str) -> list[str]:
    """The cells of a Markdown table line; ``\\|`` inside a cell is a literal ``|``."""
    cells = CELL_SEPARATOR.split(line.strip())[1:-1]
    return [cell.strip().replace("\\|", "|") for cell in cells]


def is_table_line(line: str) -> bool:
    return line.lstrip().startswith("|")


def is_separator(cells: Sequence[str]) -> bool:
    return all(set(cell) <= set("-: ") for cell in cells)


def parse_row(cells: Sequence[str]) -> Row:
    row_id, file, line, mutant, result = cells
    texts = MUTANT_TEXTS.search(mutant)
    if texts is None:
        raise ValueError(f"{row_id}: no `OLD` → `NEW` in the mutant cell: {mutant}")
    return Row(id=row_id, file=file.strip("`"), line=int(line), description=mutant[:texts.start()],
               old=texts.group(1), new=texts.group(2), result=result)


def parse_table(text: str) -> tuple[list[Row], list[ProseRow]]:
    """The main table's rows, and the later sections' rows (prose mutants)."""
    rows: list[Row] = []
    prose: list[ProseRow] = []
    section = ""
    header: tuple[str, ...] = ()
    for line in text.splitlines():
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            continue
        if not is_table_line(line):
            header = ()
            continue
        cells = split_cells(line)
        if not header:
            header = tuple(cells)
        elif is_separator(cells):
            continue
        elif header == MAIN_HEADER and ROW_ID.match(cells[0]):
            rows.append(parse_row(cells))
        else:
            prose.append(ProseRow(section=section, description=cells[0]))
    return rows, prose


# --- locating a mutant -------------------------------------------------------------------------

def occurrences(text: str, needle: str) -> list[int]:
    found: list[int] = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def current_path(old_path: str) -> str:
    return MOVED.get(old_path, old_path)


def sibling_modules(path: str) -> list[str]:
    """The other modules of a moved file's package (where a moved function may be now)."""
    package = (ROOT / path).parent
    return sorted(str(p.relative_to(ROOT)) for p in package.glob("*.py") if p != ROOT / path)


def read_text(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def files_holding(paths: Sequence[str], needle: str) -> list[str]:
    return [path for path in paths if needle in read_text(path)]


def nearest(text: str, offsets: Sequence[int], line: int) -> int:
    return min(offsets, key=lambda offset: abs(line_of(text, offset) - line))


def function_spans(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function of a module."""
    return [(node.lineno, node.end_lineno or node.lineno, node.name) for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def enclosing_function(spans: Sequence[tuple[int, int, str]], line: int) -> str | None:
    """The innermost function holding ``line``."""
    holding = [span for span in spans if span[0] <= line <= span[1]]
    return max(holding)[2] if holding else None


def in_named_function(text: str, offsets: Sequence[int], description: str) -> list[int]:
    """The offsets inside the function the description names first (``_fixpoint: ...``), if any."""
    name = LEADING_NAME.match(description)
    if name is None:
        return []
    spans = function_spans(text)
    return [offset for offset in offsets
            if enclosing_function(spans, line_of(text, offset)) == name.group(1)]


def locate(row: Row) -> Location:
    if row.old == row.new:
        return Location(problem="stale: OLD and NEW texts are identical (the change was lost in the table)")
    path = current_path(row.file)
    if not (ROOT / path).is_file():
        return Location(problem=f"stale: file {path} not found")
    if row.old not in read_text(path) and row.file in MOVED:
        holders = files_holding(sibling_modules(path), row.old)
        if len(holders) > 1:
            return Location(problem=f"stale: OLD text in several modules: {', '.join(holders)}")
        path = holders[0] if holders else path
    text = read_text(path)
    offsets = occurrences(text, row.old)
    if not offsets:
        return Location(problem="stale: OLD text not found")
    candidates = in_named_function(text, offsets, row.description) if len(offsets) > 1 else []
    offset = nearest(text, candidates or offsets, row.line)
    return Location(path=path, line=line_of(text, offset), offset=offset, occurrences=len(offsets))


# --- checking that the tests exist -------------------------------------------------------------

def file_of(node_id: str) -> str:
    return node_id.split("::", 1)[0]


def collect(files: Sequence[str]) -> tuple[set[str], str]:
    """The node ids pytest collects from ``files`` (one run), and its error output if it failed."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=child_environment())
    collected = {line.strip() for line in done.stdout.splitlines() if "::" in line}
    error = "" if done.returncode == 0 else (done.stderr.strip() or done.stdout.strip())
    return collected, error


def is_collected(node_id: str, collected: set[str]) -> bool:
    """A node id names a collected test, or a function or class whose tests (parametrized, or
    methods) were collected; a file names its tests."""
    if "::" not in node_id:
        return any(item.startswith(node_id + "::") for item in collected)
    return node_id in collected or any(item.startswith((node_id + "[", node_id + "::"))
                                       for item in collected)


def missing_tests(node_ids: Sequence[str]) -> tuple[set[str], str]:
    """The node ids that name no test: their file is missing, or pytest does not collect them.
    Every existing file is collected in a single pytest run."""
    files = sorted({file_of(node) for node in node_ids})
    existing = [path for path in files if (ROOT / path).is_file()]
    collected, error = collect(existing) if existing else (set(), "")
    missing = {node for node in node_ids
               if file_of(node) not in existing or not is_collected(node, collected)}
    return missing, error


# --- applying a mutant and running its tests ---------------------------------------------------

def child_environment() -> dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def mutated(original: bytes, row: Row, location: Location) -> bytes:
    assert location.offset is not None
    text = original.decode("utf-8")
    end = location.offset + len(row.old)
    if text[location.offset:end] != row.old:
        raise RuntimeError(f"{row.id}: {location.path} changed since the mutant was located")
    return (text[:location.offset] + row.new + text[end:]).encode("utf-8")


def restore(path: Path, original: bytes, times_ns: tuple[int, int]) -> None:
    """Put the original bytes back, and the original modification time: a ``.pyc`` compiled from
    the mutant (by any process) then no longer matches the source, the original's matches again."""
    path.write_bytes(original)
    os.utime(path, ns=times_ns)
    if path.read_bytes() != original:
        raise RuntimeError(f"{path} was not restored byte-identical")


def pytest_command(tests: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
            "--hypothesis-seed=0", "--hypothesis-profile=mutation", *tests]


def stop(process: subprocess.Popen[str]) -> None:
    """Kill the pytest run we started (its own process group: pytest and any child it spawned)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def run_tests(tests: Sequence[str], timeout: float) -> tuple[int | None, list[str]]:
    """Pytest's exit code (None on timeout) and its output's last lines."""
    process = subprocess.Popen(pytest_command(tests), cwd=ROOT, env=child_environment(), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, []
    finally:
        stop(process)
    return process.returncode, output.splitlines()[-OUTPUT_TAIL_LINES:]


def classify(code: int | None, timeout: float) -> tuple[str, str]:
    if code is None:
        return "error", f"timeout after {timeout:.0f} s"
    if code == 1:
        return "killed", ""
    if code == 0:
        return "survived", ""
    return "error", f"pytest exit code {code} ({PYTEST_EXIT_CODES.get(code, 'unknown')})"


def summary_line(tail: Sequence[str]) -> str:
    lines = [line for line in tail if line.strip()]
    return lines[-1].strip("= ") if lines else ""


def run_mutant(row: Row, location: Location, timeout: float) -> Outcome:
    if location.problem is not None:
        return Outcome(row, "error", location.problem)
    if not row.tests:
        return Outcome(row, "error", "no test to run")
    assert location.path is not None
    path = ROOT / location.path
    original = path.read_bytes()
    stat = path.stat()
    started = time.monotonic()
    try:
        path.write_bytes(mutated(original, row, location))
        code, tail = run_tests(row.tests, timeout)
    finally:
        restore(path, original, (stat.st_atime_ns, stat.st_mtime_ns))
    status, detail = classify(code, timeout)
    return Outcome(row, status, detail or summary_line(tail), time.monotonic() - started,
                   tail if status == "error" else [])


# --- output ------------------------------------------------------------------------------------

def where(location: Location) -> str:
    if location.path is None:
        return "-"
    several = f" (1 of {location.occurrences} occurrences)" if location.occurrences > 1 else ""
    return f"{location.path}:{location.line}{several}"


def list_status(row: Row, location: Location, missing: set[str]) -> tuple[str, bool]:
    """What ``--list`` says of a row, and whether the row is stale."""
    gone = [node for node in row.tests if node in missing]
    if location.problem is not None:
        return location.problem, True
    if gone:
        return "stale: test not found: " + ", ".join(gone), True
    if row.equivalent:
        return "equivalent (not run by default; runs " + " ".join(row.tests) + ")", False
    return "killed by " + " ".join(row.tests), False


def print_mapping(rows: Sequence[Row], locations: dict[str, Location]) -> None:
    print("path mapping (table file -> where its mutants are now):")
    for old_path in dict.fromkeys(row.file for row in rows):
        now = sorted({locations[row.id].path for row in rows
                      if row.file == old_path and locations[row.id].path is not None})
        print(f"  {old_path} -> {', '.join(now) or '(nothing located)'}")


def print_prose(prose: Sequence[ProseRow]) -> None:
    print(f"\nnot automated ({len(prose)} prose rows of the later sections):")
    for item in prose:
        print(f"  [{item.section}] {item.description}")


def list_rows(rows: Sequence[Row], prose: Sequence[ProseRow]) -> int:
    locations = {row.id: locate(row) for row in rows}
    missing, error = missing_tests(sorted({node for row in rows for node in row.tests}))
    stale_ids: list[str] = []
    width = max(len(where(location)) for location in locations.values())
    for row in rows:
        status, stale = list_status(row, locations[row.id], missing)
        print(f"{row.id:4} {where(locations[row.id]):{width}}  {status}")
        if stale:
            stale_ids.append(row.id)
    print()
    print_mapping(rows, locations)
    print_prose(prose)
    if error and missing:
        print("\npytest --collect-only reported:\n" + error)
    print_list_summary(rows, stale_ids)
    return 1 if any(not row.equivalent and row.id in stale_ids for row in rows) else 0


def print_list_summary(rows: Sequence[Row], stale_ids: Sequence[str]) -> None:
    equivalent = [row.id for row in rows if row.equivalent]
    stale = [row_id for row_id in stale_ids if row_id not in equivalent]
    stale_equivalent = [row_id for row_id in stale_ids if row_id in equivalent]
    runnable = len(rows) - len(equivalent) - len(stale)
    print(f"\n{len(rows)} rows: {runnable} runnable, {len(stale)} stale"
          + (f" ({' '.join(stale)})" if stale else "")
          + f", {len(equivalent)} equivalent"
          + (f" (stale: {' '.join(stale_equivalent)})" if stale_equivalent else ""))


def print_outcome(outcome: Outcome, location: Location) -> None:
    note = "" if outcome.as_recorded or outcome.status == "error" else "  (differs from the record)"
    if outcome.row.equivalent and outcome.status == "survived":
        note = "  (as recorded: equivalent)"
    print(f"{outcome.row.id:4} {where(location):48} {outcome.status:8} {outcome.seconds:7.1f} s  "
          f"{outcome.detail}{note}", flush=True)
    for line in outcome.output_tail:
        print("       | " + line)


def print_summary(outcomes: Sequence[Outcome]) -> None:
    count = {status: sum(o.status == status for o in outcomes) for status in ("killed", "survived", "error")}
    print(f"\n{count['killed']} killed, {count['survived']} survived, {count['error']} errors of {len(outcomes)}")


def select(rows: Sequence[Row], ids: Sequence[str]) -> list[Row]:
    if not ids:
        return [row for row in rows if not row.equivalent]
    by_id = {row.id: row for row in rows}
    unknown = [row_id for row_id in ids if row_id not in by_id]
    if unknown:
        raise SystemExit(f"unknown mutant id(s): {' '.join(unknown)}")
    return [by_id[row_id] for row_id in dict.fromkeys(ids)]


def snapshot(paths: Sequence[str]) -> dict[str, bytes]:
    return {path: (ROOT / path).read_bytes() for path in paths}


def changed_files(before: dict[str, bytes]) -> list[str]:
    return [path for path, data in before.items() if (ROOT / path).read_bytes() != data]


def put_back(before: dict[str, bytes], paths: Sequence[str]) -> None:
    """Last resort, when a restore was itself interrupted: the snapshot's bytes."""
    for path in paths:
        (ROOT / path).write_bytes(before[path])


def run_rows(rows: Sequence[Row], timeout: float) -> int:
    locations = {row.id: locate(row) for row in rows}
    before = snapshot(sorted({loc.path for loc in locations.values() if loc.path is not None}))
    outcomes: list[Outcome] = []
    try:
        for row in rows:
            outcome = run_mutant(row, locations[row.id], timeout)
            outcomes.append(outcome)
            print_outcome(outcome, locations[row.id])
    finally:
        changed = changed_files(before)
        put_back(before, changed)
    print_summary(outcomes)
    if changed:
        print("NOT RESTORED byte-identical after a mutant (put back from the snapshot taken at the "
              "start; check them): " + ", ".join(changed), file=sys.stderr)
        return 3
    print("every mutated file restored byte-identical: " + (", ".join(before) or "(none)"))
    return 0 if all(o.as_recorded for o in outcomes) else 1


def raise_terminated(signum: int, frame: object) -> NoReturn:
    raise Terminated()


def arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", metavar="ID",
                        help="mutants to run (default: every non-equivalent row)")
    parser.add_argument("--list", action="store_true",
                        help="locate the mutants and check their tests; run nothing")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"per mutant (default {DEFAULT_TIMEOUT:.0f})")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(sys.argv[1:] if argv is None else argv)
    rows, prose = parse_table(TABLE.read_text(encoding="utf-8"))
    if args.list:
        return list_rows(select(rows, args.ids) if args.ids else rows, prose)
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        return run_rows(select(rows, args.ids), args.timeout)
    except KeyboardInterrupt:
        print("interrupted; the mutated file was restored", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
