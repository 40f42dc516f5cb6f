"""SafePub's six scores recomputed in exact rational arithmetic from the formulas in docs/proofs/safepub.md
and src/privdb/publish/scores.py's doc — a second implementation, written from the text, not from the code.

The only inputs taken from the library are public: the hierarchies' labels (the public map g, with values
they do not list and missing values sent to ``*``), the q table of (k, β) (``q_table``: its float entries are
exact rationals, and they are what the score uses) and the divisors the search divides by (floats, read as
the exact rationals they are): the sensitivity claim is about those divisors; and the public grid
``scores.GRID`` each cell's share is floored to, and the bound ``SCORE_BOUND`` scores are clipped to.
Everything read from the table — class sizes, shares, target counts, the table size n — is counted here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np
import pandas as pd

from privdb.anonymize.hierarchy import STAR, Hierarchy
from privdb.publish.expected import q_table
from privdb.publish.parameters import SafePubParameters
from privdb.publish.scores import GRID, SCORE_BOUND

ScoreKey = tuple[str, bool]  # (metric, calibrated)
KEYS: tuple[ScoreKey, ...] = (
    ("loss", True), ("loss", False), ("precision", True), ("precision", False), ("aecs", False),
    ("discernibility", False), ("entropy", False), ("classification", True), ("classification", False),
)  # fmt: skip


def _label(hierarchy: Hierarchy, values: pd.Series, level: int) -> list[str]:
    """The public map: each value's label at ``level``; missing and unlisted values are ``*``."""
    present = values.notna().to_numpy()
    out = [STAR] * len(values)
    if present.any():
        labs = hierarchy.labels(values[present].to_numpy(dtype=object), level)
        for i, lab in zip(np.flatnonzero(present), labs, strict=True):
            out[i] = STAR if lab is None or (isinstance(lab, float) and math.isnan(lab)) else str(lab)
    return out


def _cost_numerators(hierarchy: Hierarchy, level: int) -> tuple[dict[str, int], int]:
    """Per label at ``level``: (leaves under it − 1), 0 for a label the hierarchy does not have; and the
    denominator domain − 1 (at least 1). The share of a cell is their ratio."""
    dom = np.asarray(hierarchy.domain, dtype=object)
    leaves = pd.Series([str(v) for v in hierarchy.labels(dom, level)]).value_counts()
    return {str(k): int(v) - 1 for k, v in leaves.items()}, max(len(dom) - 1, 1)


def _floored(x: Fraction) -> Fraction:
    """``x`` floored to a multiple of 1/GRID (a public [0, 1] share stays in [0, 1])."""
    return Fraction(math.floor(x * GRID), GRID)


def _clipped(x: Fraction) -> Fraction:
    return min(max(x, Fraction(-SCORE_BOUND)), Fraction(SCORE_BOUND))


def exact_scores(
    df: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    nodes: Sequence[tuple[int, ...]],
    p: SafePubParameters,
    target: str,
) -> dict[ScoreKey, list[Fraction]]:
    """Every score of ``KEYS`` at every node of ``nodes``, exactly, pre-divided by the search's divisor."""
    n, d = len(df), len(qi)
    t = math.ceil(p.k / p.beta)
    table = q_table(p.k, p.beta)
    qs = [Fraction(float(v)) for v in table.q]

    def q(s: int) -> Fraction:
        return qs[s] if s < len(qs) else Fraction(1)

    c_loss = Fraction(d * max(1.0, table.jump))
    c_thr = Fraction(d * max(t - 1, 1))
    c_disc = Fraction(5.0 if t <= 1 else t * t / (t - 1) + 1.0)
    heights = [hierarchies[c].height for c in qi]
    labels = {(c, lv): _label(hierarchies[c], df[c], lv) for c, h in zip(qi, heights, strict=True)
              for lv in range(h + 1)}  # fmt: skip
    costs = {(c, lv): _cost_numerators(hierarchies[c], lv) for c, h in zip(qi, heights, strict=True)
             for lv in range(h + 1)}  # fmt: skip
    ys: list[object] = ["<missing>" if pd.isna(v) else v for v in df[target].tolist()] if n else []
    out: dict[ScoreKey, list[Fraction]] = {key: [] for key in KEYS}
    for node in nodes:
        keys = [tuple(labels[c, lv][i] for c, lv in zip(qi, node, strict=True)) for i in range(n)]
        members: dict[tuple[str, ...], list[int]] = {}
        for i, key in enumerate(keys):
            members.setdefault(key, []).append(i)
        share_loss = [
            sum((_floored(Fraction(costs[c, lv][0].get(labels[c, lv][i], 0), costs[c, lv][1])) if lv
                 else Fraction(0)) for c, lv in zip(qi, node, strict=True))
            for i in range(n)
        ]  # fmt: skip
        share_prec = sum((Fraction(lv, h) for lv, h in zip(node, heights, strict=True)), Fraction(0))
        grid_prec = sum((_floored(Fraction(lv, h)) for lv, h in zip(node, heights, strict=True) if h > 0),
                        Fraction(0))  # fmt: skip
        e_loss = e_prec = e_class = Fraction(0)
        thr_loss = thr_prec = disc = Fraction(0)
        kept_classes, suppressed, top_kept = 0, 0, 0
        kept_records: list[int] = []
        for rows in members.values():
            s = len(rows)
            a_loss = sum((share_loss[i] for i in rows), Fraction(0))
            tally: dict[object, int] = {}
            for i in rows:
                tally[ys[i]] = tally.get(ys[i], 0) + 1
            m = max(tally.values())
            e_loss += d * s * (1 - q(s)) + a_loss * q(s)
            e_prec += d * s * (1 - q(s)) + grid_prec * s * q(s)
            e_class += m * q(s)
            if s >= t:
                kept_classes, top_kept = kept_classes + 1, top_kept + m
                thr_loss, thr_prec = thr_loss + a_loss, thr_prec + share_prec * s
                disc += Fraction(s * s, n)
                kept_records += rows
            else:
                suppressed += s
                thr_loss, thr_prec, disc = thr_loss + d * s, thr_prec + d * s, disc + s
        entropy = Fraction(0)
        for c, lv in zip(qi, node, strict=True):
            counted = [labels[c, lv][i] for i in kept_records if labels[c, lv][i] != STAR]
            per_value = pd.Series(counted, dtype=object).value_counts()
            entropy += (n - len(counted)) + sum((Fraction(int(v) ** 2, n) for v in per_value), Fraction(0))
        values = {
            ("loss", True): -e_loss / c_loss,
            ("precision", True): -e_prec / c_loss,
            ("classification", True): e_class / Fraction(table.lift),
            ("loss", False): -thr_loss / c_thr,
            ("precision", False): -thr_prec / c_thr,
            ("aecs", False): Fraction(kept_classes + (1 if suppressed else 0)),
            ("discernibility", False): -disc / c_disc,
            ("entropy", False): -entropy / d / c_disc,
            ("classification", False): Fraction(top_kept, max(t, 1)),
        }
        for key, value in values.items():
            out[key].append(_clipped(value))
    return out
