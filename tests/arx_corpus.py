"""ARX's own anonymisation cases on Adult, as facts: dataset, parameters, ARX's optimal node and loss.

Source: the JUnit suites of ARX (github.com/arx-deidentifier/arx, ``src/test/org/deidentifier/arx/test/
TestAnonymization*.java``; ARX is © the ARX contributors, Apache License 2.0, text in
``data/adult/LICENSE-Apache-2.0.txt``). Only the facts of each case are restated, in privdb's own format
(``arx_corpus.jsonl``, one case a line); no ARX code is copied. Every case whose dataset is ``adult.csv``
and whose configuration is a plain ``ARXConfiguration`` is listed (the differential-privacy suite,
randomised, is left out).

A case: ``suite`` (the suite's name after ``TestAnonymization``) and ``index`` (its position among that
suite's cases), ``suppression`` (ARX's suppression limit), ``metric`` with ``metric_args`` (ARX's quality
model: ``loss`` (gs-factor), ``precomputed_loss`` (threshold), ``aecs``, ``discernibility`` (monotonic:
True is ARX's DM*), ``precomputed_entropy`` (threshold, monotonic), ``entropy_based_loss``,
``publisher_payout``), ``models`` (ARX's privacy models by class name with their arguments: a sensitive
attribute, numbers, ``hierarchy:<file>``, ``adult_subset.csv`` (ARX's research subset of Adult, in
``tests/data/adult_subset.csv``), ``random_subset:<N>`` (the rows ``java.util.Random(0xDEADBEEF)``'s first N
draws of ``nextInt(N)`` pick), ``population:USA``, ``estimator:<name>``), ``sensitive`` (the attribute
not generalised, or None), ``loss`` (ARX's expected loss in its metric's unit), ``node`` (ARX's optimal
levels, one per quasi-identifier in the order of ``adult.csv``'s header without ``sensitive``) and
``practical`` (ARX's practical monotonicity flag).

Two facts of ARX's suites are not on their case lines and are restated here: the ``TCloseness`` suite adds
hierarchical-distance t-closeness (t = 0.2, the sensitive attribute's hierarchy) to every case that names no
t-closeness model, so those cases list it; the ``Genetic``, ``Heuristic`` and ``HeuristicTopDown`` suites run
ARX's heuristic searches (genetic, best-effort bottom-up with a 1,000-step limit, top-down) on the cases of
``KAnonymity``, and their expected node is the heuristic's, not necessarily the optimum.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CASES", "COLUMNS", "ArxCase"]

COLUMNS = (
    "sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
    "salary-class",
)  # fmt: skip


@dataclass(frozen=True)
class ArxCase:
    """One of ARX's cases (see the module docstring)."""

    suite: str
    index: int
    suppression: float
    metric: str
    metric_args: tuple[Any, ...]
    models: tuple[tuple[str, tuple[Any, ...]], ...]
    sensitive: str | None
    loss: float
    node: tuple[int, ...]
    practical: bool

    @property
    def name(self) -> str:
        """``Suite[index]``, as the test ids and docs name a case."""
        return f"{self.suite}[{self.index}]"

    @property
    def qi(self) -> tuple[str, ...]:
        """The quasi-identifiers, in ARX's node order."""
        return tuple(c for c in COLUMNS if c != self.sensitive)


def _case(row: list[Any]) -> ArxCase:
    suite, index, suppression, metric, margs, models, sensitive, loss, node, practical = row
    return ArxCase(
        suite, index, suppression, metric, tuple(margs), tuple((n, tuple(a)) for n, a in models), sensitive,
        loss, tuple(node), practical,
    )  # fmt: skip


# the facts, one case a line: suite, index, suppression, metric, its arguments, models, sensitive, loss, node,
# practical
CASES: tuple[ArxCase, ...] = tuple(
    _case(json.loads(line))
    for line in (Path(__file__).with_suffix(".jsonl")).read_text().splitlines()
    if line
)
