"""How many hypothesis examples a test runs: today's small counts by default (CI), many more under
the ``thorough`` profile, for long local runs:

    pytest --hypothesis-profile=thorough tests/test_cep_differential.py
    RSP_HYPOTHESIS=thorough pytest tests/test_cep_differential.py

The profiles are registered here (imported by ``tests/conftest.py`` before hypothesis' pytest
plugin loads the one named on the command line). A test's ``@settings(max_examples=...)`` would
override any profile, so the tests ask :func:`examples` for their count instead.
"""
from __future__ import annotations

import os

from hypothesis import Phase, settings

THOROUGH = "thorough"
MUTATION = "mutation"
ENV = "RSP_HYPOTHESIS"

settings.register_profile(THOROUGH, deadline=None, max_examples=200)
# scripts/mutation.py: the default counts, but a failing example is the kill (no shrinking: on a
# Spark test, shrinking a killed mutant's example took minutes) and no example database
settings.register_profile(MUTATION, phases=(Phase.explicit, Phase.generate), database=None)

if os.environ.get(ENV):                      # the command line's --hypothesis-profile, if any, wins
    settings.load_profile(os.environ[ENV])


def thorough() -> bool:
    return settings.get_current_profile_name() == THOROUGH


def examples(ci: int, thorough_count: int | None = None) -> int:
    """``ci`` examples by default; ``thorough_count`` (default max(100, 10·ci)) under the thorough
    profile. Read when the test module is imported (after the profile is loaded)."""
    if thorough():
        return thorough_count if thorough_count is not None else max(100, 10 * ci)
    return ci
