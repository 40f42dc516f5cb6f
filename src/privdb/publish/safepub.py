"""SafePub (Bild, Kuhn, Prasser, PoPETs 2018): a truthful table release with (ε, δ)-differential privacy.

ε = ε_anon + ε_search. Each record is kept with probability β = 1 − e^(−ε_anon) (an exact Bernoulli from the
CSPRNG); the sampled records are generalised to one node of the lattice of public hierarchy levels, and every
class with fewer than k sampled records is suppressed (``parameters`` gives β and k from (ε_anon, δ)). Only
the kept records' quasi-identifiers are released: suppressed and unsampled records are left out, not written
as ``*`` rows, so the row count is part of the DP output (Li, Qardaji, Su 2012).

The node comes from SafePub's search (``safepub_search``): a walk down the lattice by the exponential
mechanism, or one draw over every node (``search``), on scores of the whole input table, independent of the
sample (docs/proofs/safepub.md).

Values a hierarchy does not list, and missing values (NULL, NaN), are generalised to ``*`` at every level:
the map stays a fixed public function, and no error or label can depend on which values the private table
holds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.hierarchy import Hierarchy, lattice_size
from privdb.errors import InvalidParameter, UnknownColumn
from privdb.mechanisms import _exact
from privdb.mechanisms._samplers import bernoulli
from privdb.mechanisms.randomness import RandomSource, default_source
from privdb.publish.parameters import SafePubParameters, parameters
from privdb.publish.safepub_search import (
    LATTICE_MAX,
    SEARCHES,
    search_kind,
    search_lattice,
    search_scorer,
    walk,
    whole_lattice_draw,
)
from privdb.publish.scores import SCORES

__all__ = ["Published", "check_inputs", "safepub"]

EPSILON_SEARCH = 0.1


@dataclass(frozen=True)
class Published:
    """A SafePub release: the kept records' generalised quasi-identifiers, and how they were made.

    ``sampled``/``kept`` are per input record (kept ⊆ sampled); ``table`` holds the kept records in input
    order. ``pivots`` are the nodes the walk visited (none for ``search`` "lattice"), ``node`` the one
    released.
    """

    table: pd.DataFrame
    qi: tuple[str, ...]
    node: dict[str, int]
    params: SafePubParameters
    epsilon: float
    epsilon_search: float
    steps: int
    metric: str
    sampled: NDArray[np.bool_]
    kept: NDArray[np.bool_]
    pivots: list[dict[str, int]] = field(default_factory=list)
    seconds: float = 0.0
    target: str | None = None  # the classification score's target column (read for the search, not released)
    search: str = "walk"  # "walk", "lattice", or "fixed" for a user-given node


def check_inputs(
    df: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    *,
    epsilon: float,
    delta: float,
    epsilon_search: float,
    metric: str | None,
    steps: int | None,
    target: str | None = None,
    node: Sequence[int] | None = None,
    search: str = "auto",
) -> SafePubParameters:
    """Every check that needs only public inputs (names, parameters, hierarchies); raises before any work.
    With a fixed ``node`` there is no search: ε_search is not used, and ``metric`` may be left out or be
    ``loss`` (the old default, accepted and ignored). No ``metric`` means ``classification`` when a
    ``target`` is named, else ``loss``. Option names are written ``name (--flag)``: the JSON request's
    key, then the command line's flag."""
    if isinstance(qi, str) or not qi:
        raise InvalidParameter("give the quasi-identifiers as a list of column names, e.g. --qi age,sex")
    cols = [str(c) for c in df.columns]
    for c in qi:
        if c not in cols:
            raise UnknownColumn(f"unknown column '{c}': the table has {', '.join(cols)}")
    if len(set(qi)) != len(qi):
        raise InvalidParameter("a quasi-identifier is listed twice: list each column once")
    missing = [c for c in qi if c not in hierarchies]
    if missing:
        raise InvalidParameter(
            f"no public hierarchy for {', '.join(missing)}: SafePub generalises along public hierarchies "
            "only (one built from the data would leak it); give --hierarchies DIR with COLUMN.csv for each"
        )
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise InvalidParameter(f"--epsilon must be a positive number, e.g. 1, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and math.isfinite(delta) and 0 < delta < 1):
        raise InvalidParameter(f"--delta must be in (0, 1), e.g. 1e-5, got {delta!r}")
    if node is not None:
        _check_node(node, qi, hierarchies)
        searching = target is not None or steps is not None or search != "auto"
        if searching or metric not in (None, "loss", "fixed"):
            raise InvalidParameter(
                "node (--node) fixes the generalisation: there is no search, so give no metric (--metric), "
                "target (--target), steps (--steps) or search (--search)"
            )
        return parameters(float(epsilon), float(delta))
    metric = default_metric(metric, target)
    if search not in SEARCHES:
        raise InvalidParameter(f"unknown search (--search) {search!r}: use one of {', '.join(SEARCHES)}")
    if search == "lattice" and steps is not None:
        raise InvalidParameter(
            "steps (--steps) counts the walk's steps: search (--search) lattice scores every node; drop one"
        )
    nodes = lattice_size(hierarchies[c].height for c in qi)
    if search == "lattice" and nodes > LATTICE_MAX:
        raise InvalidParameter(
            f"search (--search) lattice scores every node, and these hierarchies make {nodes:,} (more than "
            f"{LATTICE_MAX:,}: many minutes of work): use search walk (SafePub's walk scores a few nodes a "
            "step) or auto, or fewer quasi-identifiers or levels"
        )
    if not (math.isfinite(epsilon_search) and 0 < epsilon_search < epsilon):
        raise InvalidParameter(
            f"--epsilon-search must be positive and below --epsilon ({epsilon:g}), got {epsilon_search!r}"
        )
    if metric not in SCORES:
        raise InvalidParameter(f"unknown score '{metric}': use one of {', '.join(SCORES)}")
    if metric == "classification":
        if target is None:
            raise InvalidParameter(
                "--metric classification needs the column to predict: give --target COLUMN (not a "
                "quasi-identifier)"
            )
        if target not in cols:
            raise UnknownColumn(f"--target: unknown column '{target}': the table has {', '.join(cols)}")
        if target in qi:
            raise InvalidParameter(
                f"--target {target!r} is a quasi-identifier: the target must be another column of the table"
            )
    elif target is not None:
        raise InvalidParameter(
            f"--target is the classification score's, not {metric!r}'s: use --metric classification (or "
            "leave --metric out)"
        )
    if steps is not None and not (isinstance(steps, int) and 0 <= steps <= 10_000):
        raise InvalidParameter(f"--steps must be a whole number in 0..10000, got {steps!r}")
    return parameters(float(epsilon - epsilon_search), float(delta))


def default_metric(metric: str | None, target: str | None) -> str:
    """The score when none is named: ``classification`` for a named target (what the user asked the release
    to be good at), else ``loss``."""
    if metric is not None:
        return metric
    return "classification" if target is not None else "loss"


def _check_node(node: Sequence[int], qi: Sequence[str], hierarchies: Mapping[str, Hierarchy]) -> None:
    """A user-fixed node: one whole level per quasi-identifier, each within its hierarchy's height."""
    if isinstance(node, str) or len(node) != len(qi):
        raise InvalidParameter(
            f"node (--node) needs one level per quasi-identifier ({len(qi)}: {', '.join(qi)}), e.g. "
            f"[{', '.join('0' for _ in qi)}] (--node {','.join('0' for _ in qi)})"
        )
    for c, lv in zip(qi, node, strict=True):
        height = hierarchies[c].height
        if not (isinstance(lv, (int, np.integer)) and not isinstance(lv, bool) and 0 <= lv <= height):
            raise InvalidParameter(
                f"node (--node): the level of {c} must be a whole number in 0..{height}, got {lv!r}"
            )


def safepub(
    df: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    *,
    epsilon: float,
    delta: float,
    epsilon_search: float = EPSILON_SEARCH,
    metric: str | None = None,
    steps: int | None = None,
    target: str | None = None,
    node: Sequence[int] | None = None,
    search: str = "auto",
    calibrated: bool = True,
    rng: RandomSource | None = None,
) -> Published:
    """Release ``df``'s quasi-identifiers ``qi`` with (``epsilon``, ``delta``)-DP (module doc).

    ``hierarchies`` must be public (not built from ``df``); ``steps`` defaults to the lattice's height (the
    sum of the hierarchies' heights); ``target`` is the column the ``classification`` score predicts (it
    steers the search only and is not released; naming it makes ``classification`` the default ``metric``,
    else ``loss``). ``search``: ``"walk"`` (SafePub's), ``"lattice"`` (one draw over every node) or
    ``"auto"`` (``search_kind``). ``node``: one level per quasi-identifier, fixed by the
    user — no search, and all of ``epsilon`` goes to sampling and suppression (SafePub's data-independent
    form; ``metric="loss"``, the old default, is accepted beside it and ignored). ``calibrated=False``
    scores with ARX's threshold form instead of the expected release (``expected``; kept for comparison).
    ``rng``: the CSPRNG unless a test passes a seeded source.
    """
    started = time.perf_counter()
    qi = list(qi) if not isinstance(qi, str) else qi
    params = check_inputs(
        df, qi, hierarchies, epsilon=epsilon, delta=delta, epsilon_search=epsilon_search, metric=metric,
        steps=steps, target=target, node=node, search=search,
    )  # fmt: skip
    rng = rng or default_source()
    lat = search_lattice(df, qi, hierarchies, params)
    pivots: list[tuple[int, ...]] = []
    if node is not None:
        chosen, n_steps, eps_search, metric, kind = tuple(int(v) for v in node), 0, 0.0, "fixed", "fixed"
    else:
        metric = default_metric(metric, target)
        kind = search_kind(search, metric, steps, lat.heights.tolist())
        eps_search = float(epsilon_search)
        value = search_scorer(lat, df, params, metric, target, calibrated)
        if kind == "lattice":
            n_steps, chosen = 0, whole_lattice_draw(lat, value, eps_search, rng)
        else:
            n_steps = int(lat.heights.sum()) if steps is None else steps
            chosen, pivots = walk(lat, value, n_steps, eps_search, rng)
    # sampling: keep a record unless a Bernoulli(e^(−ε_anon)) draw says drop (exact, from the CSPRNG)
    dropped = bernoulli(_exact.exp_neg(Fraction(params.epsilon_anon)), len(df), rng)
    sampled = ~dropped
    cls, _ = lat.classes(chosen)
    record_class = cls[lat.tuple_of_record]
    in_sample = np.bincount(record_class[sampled], minlength=int(record_class.max(initial=-1)) + 1)
    kept = sampled & (in_sample[record_class] >= params.k)
    out = {
        name: np.take(np.asarray(q.labels[lv], dtype=object), q.groups[lv][q.codes])[kept]
        for name, q, lv in zip(qi, lat.qis, chosen, strict=True)
    }
    return Published(
        table=pd.DataFrame(out, columns=list(qi)),
        qi=tuple(qi),
        node=dict(zip(qi, chosen, strict=True)),
        params=params,
        epsilon=float(epsilon),
        epsilon_search=eps_search,
        steps=n_steps,
        metric=metric,
        sampled=sampled,
        kept=kept,
        pivots=[dict(zip(qi, p, strict=True)) for p in pivots],
        seconds=time.perf_counter() - started,
        target=target,
        search=kind,
    )
