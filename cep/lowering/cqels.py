"""CQELS-CEP's lowering (Dao-Tran & Le-Phuoc, HiDeSt 2015, ``../shared/papers/002_...``):
``CqelsLowering.query`` builds the paper's model Q = (V, P, D, EC) (CQELS-CEP §3.2) as one algebra
tree:

* ``[[Q, t]] = π_V JOIN([[EC, t]], [[P, t]]_D)`` (eq. 1), the event clauses joined right-associated
  (eq. 2): ``Project(V, JOIN(EC_1, JOIN(EC_2, ..., Background(D, P))))``.
* An event clause is a window ``WINDOW :W { TSP }`` (a ``StreamPattern``, eq. 9) or a sequence of
  windows ``SEQ(:W1, ..., !:Wi, ..., :Wn)`` naming WINDOW blocks; a TSP is a BGP or a sequence of
  BGPs ``SEQ({P1}, ..., !{Pi}, ..., {Pn})``. Both kinds of sequence are built by
  ``cep.algebra.patterns.sequence``: right-associated (eq. 3, 10), a negated element inside is
  ``SEQ_WO(SEQ(prefix), neg, SEQ(suffix))`` (eq. 5, 12), at the head ``NO_HEAD`` (eq. 6, 13), at the
  tail ``NO_TAIL`` (eq. 7, 14); a sequence of one element is that element.
* Everything else in WHERE — triples (with paths), OPTIONAL, UNION, nested groups — is the
  background pattern P over D: ``Background(graph, P)`` (eq. 17), graph = the dataset's default
  graph (``Lowering.dataset``: the ``FROM`` IRI, several FROMs' merge, None without FROM). The
  paper's §3.2 takes |D| = 1; SPARQL 1.1's datasets (§13.2) are the extension: several FROMs are
  merged into one default graph, FROM NAMED graphs are read with GRAPH. P is translated as SPARQL 1.1 §18.2.2.6 does a
  group (adjacent triples one BGP, OPTIONAL a LeftJoin of what precedes it, UNION an OR); the
  WINDOW blocks and SEQ clauses are taken out of the group first, so an OPTIONAL's left side is the
  background elements written before it.
* FILTERs of the top group restrict the whole join (SPARQL: a filter applies to its whole group);
  FILTERs in a WINDOW block restrict that window's TSP; FILTERs in a nested group, that group.
* A top-level BIND written after an event clause extends the event clauses joined with the
  background, in written order, under the FILTERs: SPARQL's BIND extends the group so far
  (§18.2.2.6), and that holds the event clause, so ``WINDOW :W { ?v :p ?s } BIND (STR(?s) AS
  ?z)`` reads ?s from the window and ``BIND (RAND() AS ?r)`` draws per answer. A background
  element written after such a BIND that shares a variable with it is refused (there the two
  readings differ). A BIND written before every event clause is part of P.

Decisions the paper leaves open (documented here, tested in tests/test_cep_lower.py):

* A window named in an event-clause SEQ is evaluated there only; it is not joined a second time
  on its own. A WINDOW block named by no SEQ is an event clause of its own. Event clauses are
  joined in the order written (JOIN is commutative), the background last.
* A query with no window is a background-only query: ``Project(V, Background(D, P))``. A query
  with windows and no background triples has no Background node.
* A window is declared by ``FROM NAMED WINDOW :W ON <s> [w]`` or in place, ``WINDOW :W ON <s> [w]
  { TSP }`` (the paper's WinSpec); a declared window without a WINDOW block and unused is ignored,
  as SPARQL ignores an unused FROM NAMED.

Errors (``CepSemanticError``, with the line and column of the offending part):

* a window named in a SEQ or a WINDOW block that is not declared; a window declared twice; two
  WINDOW blocks for one window; a window named in a SEQ that has no WINDOW block;
* two negated elements in one sequence (§3.1, §3.2: "at most one element negated"); a sequence
  whose only element is negated (NO_HEAD / NO_TAIL / SEQ_WO need a positive side, §4.2);
* a property path inside a window (TSP ::= TrTemp, §3.1: triples templates only; paths are for the
  background, §3.2 "P is an extended graph pattern"); a WINDOW block without a pattern;
* WINDOW / SEQ inside OPTIONAL, UNION or a nested group (event clauses belong to the query, §3.2);
* a SELECTed variable that no pattern binds (one that occurs only in a negated element binds
  nothing: NO_HEAD / NO_TAIL / SEQ_WO keep the positive side's mapping, §4.2);
* paths in CONSTRUCT templates (not supported; use a variable / an IRI).

The paper puts no restriction on the variables of a negated element (SEQ_WO only asks its mappings
to be compatible); neither do we.

RSEP-QL's queries have this model too (event clauses joined with the background, eq. 1-2), with
MATCH clauses and window graph patterns where CQELS-CEP has SEQ clauses and TSPs: its lowering
(``cep.lowering.rsepql``) extends ``CqelsLowering`` and overrides ``window_pattern`` and
``event_clauses``. What every language shares (groups, expressions, modifiers) is in
``cep.lowering.common``.
"""
from __future__ import annotations

import dataclasses

from cep import algebra as A
from cep.lowering.common import Lowering, position
from cep.syntax import tree as S

__all__ = ["CqelsLowering"]


class CqelsLowering(Lowering):
    """A CQELS-CEP query (module doc)."""

    lang = "cqels"

    def query(self) -> A.Query:
        """Q = (V, P, D, EC) as one tree: the event clauses (``event_clauses``) joined with the
        background last (eq. 1, 2, 17), the top-level FILTERs over that join, then the query form."""
        tree = self.tree
        graph = self.dataset()

        declared: dict[str, tuple[A.Term, A.Window, S.Node]] = {}

        def declare(name_node, stream_node, window_node, at: S.Node):
            name = self.term(name_node)
            if name in declared:
                raise self.fail(name_node, f"window {name_node} is declared twice; the first "
                                f"declaration is at {position(declared[name][2])}")
            declared[name] = (self.term(stream_node), self.window(window_node), at)

        for dataset in tree.datasets:
            if isinstance(dataset, S.FromWindow):
                declare(dataset.name, dataset.stream, dataset.window, dataset)

        top = tree.where.elements
        blocks: dict[str, S.WindowBlock] = {}
        for element in top:
            if isinstance(element, S.WindowBlock):
                if element.stream is not None:
                    declare(element.name, element.stream, element.window, element)
                name = self.term(element.name)
                if name in blocks:
                    raise self.fail(element, f"window {element.name} has two WINDOW blocks; the "
                                    f"first is at {position(blocks[name])}")
                blocks[name] = element

        streams: dict[str, A.Pattern] = {}
        for name, block in blocks.items():
            if name not in declared:
                raise self.fail(block.name, f"window {block.name} is not declared",
                                _declare_hint(block.name))
            stream_iri, window, _ = declared[name]
            streams[name] = self.window_pattern(block, name, stream_iri, window)

        events = self.event_clauses(declared, streams)

        clauses = (S.WindowBlock, S.EventSequence, S.MatchPattern)
        first = next((i for i, e in enumerate(top) if isinstance(e, clauses)), len(top))
        lifted = [i for i, e in enumerate(top) if isinstance(e, S.Bind) and i > first]
        rest = [e for i, e in enumerate(top) if not isinstance(e, (*clauses, S.FilterPattern)) and i not in lifted]
        background_pattern = self.group(tree.where, rest)
        parts = list(events)
        if not events or background_pattern != A.BGP(()):
            parts.append(A.Background(graph, background_pattern))           # eq. 17
        pattern = A.join(*parts)                                             # eq. 1, 2
        self.exists_scope = ("background", graph)   # a top-level FILTER stands over the event clauses
        for i in lifted:
            pattern = self.bind(pattern, self.lifted_bind(top, i))
        condition = self.conjunction([e for e in top if isinstance(e, S.FilterPattern)])
        self.exists_scope = "here"
        if condition is not None:
            pattern = A.Filter(condition, pattern)
        return self.finish(pattern)

    def lifted_bind(self, top: tuple, i: int) -> S.Bind:
        """The top-level ``BIND`` ``top[i]``, written after an event clause: it extends the event
        clauses joined with the background (module doc), which equals SPARQL's Extend of the
        group so far when no background element written after it shares its variables. One that
        does is refused: there the two readings differ."""
        bind = top[i]
        names = {v.name for v in _syntax_variables_of(bind)}
        for later in top[i + 1:]:
            if isinstance(later, (S.WindowBlock, S.EventSequence, S.MatchPattern, S.FilterPattern, S.Bind)):
                continue
            shared = sorted(names & {v.name for v in _syntax_variables_of(later)})
            if shared:
                raise self.fail(bind, f"{bind} follows an event clause, so it extends the event clauses "
                                f"joined with the background, but the background pattern at {position(later)} "
                                f"written after it uses ?{shared[0]} too",
                                ("the BIND written after that pattern", "the BIND before the first event clause"))
        return bind

    def event_clauses(self, declared, streams) -> list[A.Pattern]:
        """The event clauses, in the order written: each SEQ(...) of windows (eq. 3-8) and each
        WINDOW block that no SEQ names. ``declared``: the windows declared, by name; ``streams``:
        each WINDOW block's pattern, by window name."""
        top = self.tree.where.elements
        in_sequences = set()
        for element in top:
            if isinstance(element, S.EventSequence):
                for item in element.elements:
                    name = self.term(item.name)
                    if name not in declared:
                        raise self.fail(item.name, f"window {item.name} is not declared",
                                        _declare_hint(item.name))
                    if name not in streams:
                        raise self.fail(item.name, f"window {item.name} has no WINDOW block "
                                        "giving its pattern",
                                        (f"WINDOW {item.name} {{ ... }} in WHERE",))
                    in_sequences.add(name)

        events: list[A.Pattern] = []
        for element in top:
            if isinstance(element, S.EventSequence):
                negated = self.check_negations(element.elements)
                parts = [streams[self.term(item.name)] for item in element.elements]
                events.append(A.sequence(*parts, negated=negated))           # eq. 3-8
            elif isinstance(element, S.WindowBlock):
                name = self.term(element.name)
                if name not in in_sequences:
                    events.append(streams[name])
        return events

    def window_pattern(self, block: S.WindowBlock, name, stream, window) -> A.Pattern:
        """A WINDOW block's pattern: its TSP over the window, a stream pattern (eq. 9)."""
        return A.StreamPattern(name, stream, window, self.tsp(block))

    def tsp(self, block: S.WindowBlock) -> A.Pattern:
        where = f"in window {block.name}"
        filters = [item for item in block.body if isinstance(item, S.FilterPattern)]
        patterns = [item for item in block.body if not isinstance(item, S.FilterPattern)]
        if not patterns:
            raise self.fail(block, f"window {block.name} has no pattern: a WINDOW block holds "
                            "triples or SEQ(...) (CQELS-CEP §3.1 TSP)",
                            ("triples", "SEQ(...)"))
        (body,) = patterns
        if isinstance(body, S.TriplesBlock):
            pattern = self.bgp(body, paths_allowed=False, where=where)
        else:
            negated = self.check_negations(body.elements)
            parts = [self.bgp(e.triples, paths_allowed=False, where=where) for e in body.elements]
            pattern = A.sequence(*parts, negated=negated)               # eq. 10-15
        with self.exists_refused("inside a window"):
            condition = self.conjunction(filters)
        return pattern if condition is None else A.Filter(condition, pattern)

    def check_negations(self, elements) -> int | None:
        """The index of the negated element, after checking there is at most one and that it is
        not alone (§3.1-§3.2)."""
        negated = [i for i, element in enumerate(elements) if element.negated]
        if len(negated) > 1:
            first = elements[negated[0]]
            raise self.fail(elements[negated[1]],
                            "a sequence has at most one negated element (CQELS-CEP §3.1-§3.2); "
                            f"the first one is at {position(first)}")
        if negated and len(elements) == 1:
            raise self.fail(elements[0], "a negated element needs at least one positive element "
                            "in its sequence (NO_HEAD, NO_TAIL and SEQ_WO, CQELS-CEP §4.2)")
        return negated[0] if negated else None


def _syntax_variables_of(node) -> list[S.Variable]:
    """Every variable written in syntax node ``node`` (sub-queries, EXISTS and aggregates included)."""
    if isinstance(node, S.Variable):
        return [node]
    if isinstance(node, (tuple, list)):
        return [v for child in node for v in _syntax_variables_of(child)]
    if not dataclasses.is_dataclass(node):
        return []
    return [v for f in dataclasses.fields(node) for v in _syntax_variables_of(getattr(node, f.name))]


def _declare_hint(name) -> tuple[str, ...]:
    return (f"FROM NAMED WINDOW {name} ON <stream> [RANGE ...]",
            f"WINDOW {name} ON <stream> [RANGE ...] {{ ... }}")
