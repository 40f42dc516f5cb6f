"""SafePub's draws pass the scores' float error to the exponential mechanism: ``walk`` and
``whole_lattice_draw`` (privdb.publish.safepub_search) build it with ``utility_error=SCORE_ERROR``. The error
takes its share of the mechanism's public 1e-6 allowance, so it shows as a smaller ``max_span``: scores whose
span fits the mechanism without the error but not beside it are refused by both draws (and would be drawn
from, were the error 0). The draws' privacy proof needs the error (docs/proofs/safepub.md, "Float scores")."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.anonymize import TaxonomyHierarchy
from privdb.anonymize.lattice import Lattice
from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism
from privdb.publish.safepub_search import SENSITIVITY, walk, whole_lattice_draw
from privdb.publish.scores import SCORE_ERROR

HIER = {
    "a": TaxonomyHierarchy("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"], ["4", "3-4", "*"]]),
    "b": TaxonomyHierarchy("b", [["x", "*"], ["y", "*"], ["z", "*"]]),
}
EPSILON = 0.5


def _lattice() -> Lattice:
    df = pd.DataFrame({"a": ["1", "2", "3", "4", "1"], "b": ["x", "y", "z", "x", "y"]})
    return Lattice(df, ["a", "b"], HIER, 2)


def _gap() -> float:
    """A span of scores inside the window the error closes: accepted at error 0, refused at SCORE_ERROR (for
    every ε: max_span is ε-free, and each draw's share of ε is checked below too)."""
    plain = ExponentialMechanism(epsilon=EPSILON, sensitivity=SENSITIVITY)
    held = ExponentialMechanism(epsilon=EPSILON, sensitivity=SENSITIVITY, utility_error=SCORE_ERROR)
    assert held.max_span < plain.max_span
    return (held.max_span + plain.max_span) / 2


def _value(span: float) -> Callable[[tuple[int, ...]], float]:
    """Scores 0 and −span on alternate levels (by the parity of the node's height): every draw of the walk
    with two levels among its candidates, and the whole-lattice draw, sees the span (+ |max| = 0)."""
    return lambda node: 0.0 if sum(node) % 2 else -span


def test_the_window_is_real() -> None:
    span = _gap()
    u = np.array([0.0, -span])
    for epsilon in (EPSILON, EPSILON / 3):  # the walk's share with steps = 2
        ExponentialMechanism(epsilon=epsilon, sensitivity=SENSITIVITY).probabilities(u)
        with pytest.raises(InvalidParameter, match="too large"):
            ExponentialMechanism(
                epsilon=epsilon, sensitivity=SENSITIVITY, utility_error=SCORE_ERROR
            ).probabilities(u)


def test_the_whole_lattice_draw_passes_the_score_error() -> None:
    with pytest.raises(InvalidParameter, match="too large"):
        whole_lattice_draw(_lattice(), _value(_gap()), EPSILON, seeded(1))
    # a span well inside both limits is drawn from
    node = whole_lattice_draw(_lattice(), _value(1.0), EPSILON, seeded(1))
    assert len(node) == 2


def test_the_walk_passes_the_score_error() -> None:
    with pytest.raises(InvalidParameter, match="too large"):
        walk(_lattice(), _value(_gap()), 2, EPSILON, seeded(2))
    chosen, pivots = walk(_lattice(), _value(1.0), 2, EPSILON, seeded(2))
    assert chosen in pivots
