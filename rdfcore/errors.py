"""The project's one base class for *expected* failures.

An expected failure is something a user can cause and fix: bad input (a malformed file, a query
syntax error), a missing file, a locked store, a missing jar, an iteration cap. The CLI
(``jobs.errors.run_cli``) prints such an error as one ``error:`` line and exits with code 2;
anything else is a programming error and keeps its traceback (exit code 1).

Every package of the project (``reasoner``, ``paths``, ``cep``, ``jobs``, ``ontologies``) derives
its expected errors from :class:`SidecarError`, usually together with the built-in class that
describes them best (``ValueError`` for bad input, ``RuntimeError`` for a failed run), so callers
that catch the built-in class keep working.
"""
from __future__ import annotations

__all__ = ["SidecarError", "FixpointError", "HashCollisionError", "RDFLoadError"]


class SidecarError(Exception):
    """An expected failure with a message a user can act on (what, where, what was expected)."""


class FixpointError(SidecarError, RuntimeError):
    """An iterative computation did not converge within its round cap."""


class HashCollisionError(SidecarError, RuntimeError):
    """Two distinct terms hash to the same 64-bit id."""

    def __init__(self, collisions: list[tuple[int, list[str]]]):
        self.collisions = collisions
        shown = "; ".join(f"id {i}: {', '.join(terms)}" for i, terms in collisions[:5])
        super().__init__(f"{len(collisions)} dictionary hash collision(s) between distinct terms: {shown}. "
                         f"The 64-bit dictionary cannot encode this data; rename one of the terms.")


class RDFLoadError(SidecarError, ValueError):
    """A source cannot be read: names the file, line and column (where known) and the problem."""

    def __init__(self, file: str, problem: str, line: int | None = None, column: int | None = None):
        self.file, self.problem, self.line, self.column = file, problem, line, column
        where = file if line is None else f"{file}:{line}" + ("" if column is None else f":{column}")
        super().__init__(f"{where}: {problem}")
