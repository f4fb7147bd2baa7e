"""The planner: between the algebra (``cep.algebra``, as a language's lowering wrote it) and the
engines. ``logical`` rewrites a query into an equivalent one that is cheaper to evaluate (a
background pattern split into its connected components, each joined where it shares variables);
``explain`` prints a query before and after, with the reason for each step. The reference
evaluator (``cep.engines.reference``) takes the query as written: it is what the planned engines
are tested against."""
from cep.planner.logical import Logical, Step, rewrite  # noqa: F401

__all__ = ["Logical", "Step", "rewrite"]
