"""RSEP-QL's lowering (Dell'Aglio et al., EKAW 2016, ``../shared/papers/001_...`` §3.3): a query is
RSEP-QL when ``lang="rsepql"`` is given or it has a ``MATCH [policy] ( E )``. Each top-level MATCH is an event
clause (``A.Match``), joined with the others and the background exactly as CQELS-CEP's windows
(eq. 1-2); ``EVENT :w { triples }`` names a window declared by ``FROM NAMED WINDOW`` (read as
RSEP-QL's window functions, ``A.EventPattern``), ``FIRST``/``LAST``/``SEQ`` build the event
pattern, and every SEQ takes the MATCH's policy, or ``policy=`` when the MATCH names none.
Errors: an undeclared or TRIPLES window, a path or no triple in an EVENT, a MATCH below the top
level, CQELS-CEP's WINDOW blocks or SEQ(...) beside a MATCH, and MATCH under ``lang="cqels"``.

RSEP-QL's query is CQELS-CEP's model (the event clauses joined with the background, eq. 1-2) with
other event clauses, so ``RsepqlLowering`` extends ``CqelsLowering`` (``cep.lowering.cqels``): it
keeps the window declarations, the background and the join, and overrides what a WINDOW block is
(``window_pattern``) and which elements are event clauses (``event_clauses``).
"""
from __future__ import annotations

from cep import algebra as A
from cep.lowering.cqels import CqelsLowering
from cep.syntax import tree as S

__all__ = ["RsepqlLowering"]


class RsepqlLowering(CqelsLowering):
    """An RSEP-QL query (module doc). ``policy``: the selection policy of a MATCH that names none
    (one of ``A.POLICIES``)."""

    lang = "rsepql"

    def __init__(self, tree: S.Query, policy: str = "unrestricted") -> None:
        super().__init__(tree)
        self.policy = policy

    def event_clauses(self, declared, streams) -> list[A.Pattern]:
        """The event clauses, in the order written: each MATCH (§4.2) and each WINDOW block (a
        window graph pattern). (CQELS-CEP's SEQ(...) clauses are refused before, by ``lower``.)"""
        events: list[A.Pattern] = []
        for element in self.tree.where.elements:
            if isinstance(element, S.MatchPattern):
                events.append(self.match(element, declared))                  # RSEP-QL §4.2
            elif isinstance(element, S.WindowBlock):
                events.append(streams[self.term(element.name)])
        return events

    def window_pattern(self, block: S.WindowBlock, name, stream, window) -> A.WindowGraph:
        """RSEP-QL's window graph pattern ``WINDOW w P`` (§4.1 eq. 3): P (triples and FILTERs) over
        the window's merged graph."""
        if any(isinstance(item, S.TspSequence) for item in block.body):
            raise self.fail(block, f"window {block.name}: SEQ inside a WINDOW block is CQELS-CEP's; in RSEP-QL "
                            f"a window graph pattern holds triples (event sequences go inside MATCH)",
                            ("triples",))
        if isinstance(window, A.Triples):
            raise self.fail(block, f"window {block.name} is a TRIPLES window, which RSEP-QL's window functions "
                            f"W^τ(α, β) do not define", ("[RANGE d]", "[RANGE d STEP s]", "[ALL]", "[NOW]"))
        return A.WindowGraph(name, stream, window, self.tsp(block))

    # -- RSEP-QL event patterns (§3.3)
    def match(self, element: S.MatchPattern, declared) -> A.Match:
        policy = element.policy or self.policy

        def event(node) -> A.EventNode:
            match node:
                case S.EventBasic():
                    name = self.term(node.name)
                    if name not in declared:
                        raise self.fail(node.name, f"window {node.name} is not declared",
                                        (f"FROM NAMED WINDOW {node.name} ON <stream> [RANGE ...]",))
                    stream, window, _ = declared[name]
                    if isinstance(window, A.Triples):
                        raise self.fail(node.name, f"window {node.name} is a TRIPLES window: RSEP-QL's "
                                        "windows are time-based, landmark ([ALL]) and NOW (§3.2)",
                                        ("[RANGE d]", "[RANGE d STEP d]", "[ALL]"))
                    pattern = self.bgp(node.triples, paths_allowed=False, where=f"in EVENT {node.name}")
                    if not pattern.patterns:
                        raise self.fail(node, "an EVENT pattern needs at least one triple", ("triples",))
                    return A.EventPattern(name, stream, window, pattern)
                case S.EventFirst():
                    return A.FirstEvent(event(node.inner))
                case S.EventLast():
                    return A.LastEvent(event(node.inner))
                case S.EventSeqExpr():
                    return A.EventSeq(event(node.left), event(node.right), policy)
            raise TypeError(f"not an event pattern: {node!r}")

        return A.Match(event(element.event), policy)
