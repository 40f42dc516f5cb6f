"""Personalised differential privacy: Jorgensen, Yu and Cormode's Sample mechanism (ICDE 2015, "Conservative
or liberal? Personalized differential privacy") over a table whose metadata gives each unit its own ε
(privdb.catalog.personal).

A query at ε = ``t`` on such a table reads a random sample of its units instead of the table: a unit whose ε
is below ``t`` is kept with probability ``π = (e^ε − 1) / (e^t − 1)``, the others always; the usual
``t``-DP query then runs on the sample (every statistic, histogram and distinct count reads it). A unit with
``ε < t`` then loses at most its ``ε``, the others at most ``t`` (docs/proofs/personalised.md). ``t`` is the
query's ε: the analyst is charged ``t`` as always, and it caps the loss of the most liberal class.

- **One draw per unit, from its own rows.** With a privacy unit, the unit's ε is the smallest ε over its
  rows (a unit cannot raise its ε with one more row) and one ``random()`` draw keeps or drops all its rows;
  without one, each row is a unit and draws alone. An ε outside the declared bounds, NULL or NaN counts as
  the smallest ε (a mistake never weakens anyone's protection).
- **The answer is the statistic of the sample**, not reweighted: the sample is an input like any other, and
  weighting by ``1/π`` would raise the sensitivity by ``1/π_min``. Counts and sums are therefore smaller than
  the table's (the strict units are partly missing); each accuracy entry says so (``personalised``).
- **The draw is DuckDB's ``random()``** (per connection, seeded from the operating system's entropy), as the
  contribution bounding's; its values are never shown. Other engines (SQLite's ``random()`` is an integer)
  are refused, free.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from privdb.backends.names import quote
from privdb.catalog.metadata import TableMeta
from privdb.catalog.personal import PersonalEpsilon
from privdb.errors import UnsupportedQuery

if TYPE_CHECKING:
    from privdb.database import Database
    from privdb.sql.front.relation.model import Relation

__all__ = [
    "check_tables",
    "classes",
    "epsilon_sql",
    "inclusion",
    "losses_note",
    "personal_table",
    "sampled_source",
    "summary",
]


# From this t on, e^t − 1 would overflow float64 (e^709.8): π is computed as e^(ε − t)·(1 − e^−ε)/(1 − e^−t)
_SCALED_FROM = 700.0


def inclusion(epsilon: float, t: float) -> float:
    """π: the probability that a unit of this ε is kept at threshold ``t`` (1 from ``t`` on); closed form,
    finite for every ε and t (a tiny π underflows to 0: the unit is then never kept, which only protects)."""
    if epsilon >= t:
        return 1.0
    if t < _SCALED_FROM:
        return math.expm1(epsilon) / math.expm1(t)
    return math.exp(epsilon - t) * -math.expm1(-epsilon) / -math.expm1(-t)


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def epsilon_sql(spec: PersonalEpsilon, rows: str = "") -> str:
    """A row's ε as SQL (``rows``: a qualifier with its dot). A number outside ``[lower, upper]``, NULL or
    NaN gives ``lower`` (NaN compares above every number in DuckDB, so it fails ``<= upper``)."""
    column = f"{rows}{quote(spec.column)}"
    lo = repr(float(spec.lower))
    if spec.policy is None:
        value = f"TRY_CAST({column} AS DOUBLE)"
        return f"CASE WHEN {value} >= {lo} AND {value} <= {float(spec.upper)!r} THEN {value} ELSE {lo} END"
    text = f"CAST({column} AS VARCHAR)"
    cases = " ".join(f"WHEN {text} = {_text(str(v))} THEN {float(e)!r}" for v, e in spec.policy)
    return f"CASE {cases} ELSE {float(spec.default or spec.lower)!r} END"


def _keep(epsilon: str, t: float) -> str:
    """The condition that keeps a unit of ε ``epsilon`` (SQL): ``random() < π``. From ``t`` on π = 1, and
    DuckDB's ``random()`` is below 1, so such units are always kept."""
    if t < _SCALED_FROM:
        below = f"(EXP({epsilon}) - 1.0) / {math.expm1(t)!r}"
    else:  # e^t − 1 overflows: the same π scaled by e^−t (EXP of a negative number cannot overflow)
        below = f"EXP({epsilon} - {float(t)!r}) * (1.0 - EXP(-({epsilon}))) / {-math.expm1(-t)!r}"
    pi = f"CASE WHEN {epsilon} >= {float(t)!r} THEN 1.0 ELSE {below} END"
    return f"random() < {pi}"


def sampled_source(meta: TableMeta, source: str, t: float) -> str:
    """The FROM item that replaces table ``source`` (quoted) in a query at ε = ``t``: its rows of the kept
    units, every column (hidden ones included) as stored."""
    spec = meta.personal
    assert spec is not None
    if meta.privacy_unit is None:
        return f"(SELECT * FROM {source} AS _pr WHERE {_keep(epsilon_sql(spec), t)})"
    unit = quote(meta.privacy_unit)
    units = f"SELECT {unit} AS _pu, MIN({epsilon_sql(spec)}) AS _pe FROM {source} GROUP BY 1"
    kept = f"SELECT _pu FROM ({units}) AS _pg WHERE {_keep('_pe', t)}"
    return (
        f"(SELECT _pr.* FROM {source} AS _pr JOIN ({kept}) AS _pk ON _pr.{unit} IS NOT DISTINCT FROM _pk._pu)"
    )


def check_tables(metas: list[TableMeta], dialect: str) -> TableMeta | None:
    """The one personalised table a query reads (None: none), refusing (free) what the Sample mechanism
    does not cover here: two private tables beside it (a unit sampled in one and not in the other would
    lose more than its ε), or an engine other than DuckDB."""
    personal = [m for m in metas if m.personal is not None]
    if not personal:
        return None
    private = [m for m in metas if not m.public]
    if len(private) > 1:
        raise UnsupportedQuery(
            f"table {personal[0].name!r} gives each person their own ε (epsilon_column/epsilon_policy), so "
            "a query over it reads it once and joins public tables only; ask one DP-SELECT per table"
        )
    if dialect != "duckdb":
        raise UnsupportedQuery(
            f"table {personal[0].name!r} gives each person their own ε: its queries sample people with "
            "DuckDB's random(); load the table into privdb's DuckDB to query it"
        )
    return personal[0]


def personal_table(db: Database, relation: Relation | None) -> TableMeta | None:
    """The table with personalised ε an aggregate plan's relation reads, or None (None: a record release,
    or a plan of the table itself); refuses (free) the forms the Sample mechanism does not cover here
    (``check_tables``)."""
    if relation is None:
        return None
    specs = [db.catalog.metadata(t) or {} for t in relation.tables]  # the stored specs: no engine read
    if not any("epsilon_column" in s or "epsilon_policy" in s for s in specs):
        return None
    metas = [db.metadata(t) for t in relation.tables]
    return check_tables(metas, db.backend_for(relation.base)[0].dialect)


def classes(spec: PersonalEpsilon, t: float) -> list[dict[str, Any]]:
    """Each class of units with its ε, its probability of being kept and the ε it loses at threshold ``t``:
    a policy's values (and ``other`` for the default); for an ε column, its declared ``values`` if any, else
    its smallest and largest ε (a unit between them loses its own ε below ``t``, else ``t``)."""
    if spec.policy is not None:
        found: list[tuple[str, float]] = [(str(v), e) for v, e in spec.policy]
        found.append(("other", float(spec.default or spec.lower)))
    else:
        found = [("smallest", spec.lower), ("largest", spec.upper)]
    return [
        {"class": name, "epsilon": eps, "inclusion": inclusion(eps, t), "epsilon_lost": min(eps, t)}
        for name, eps in found
    ]


def summary(meta: TableMeta, t: float) -> dict[str, Any]:
    """What explain and the answer show: the mechanism, the column, ``t`` and the classes."""
    spec = meta.personal
    assert spec is not None
    return {
        "mechanism": "sample (Jorgensen, Yu, Cormode 2015)",
        "table": meta.name,
        "column": spec.column,
        "threshold": t,
        "unit_epsilon": "the smallest over the unit's rows" if meta.privacy_unit else "each row's",
        "classes": classes(spec, t),
        "answer": "statistics of the sample (not reweighted): counts and sums are of the kept units",
    }


def losses_note(meta: TableMeta, t: float) -> str:
    """The ledger note's suffix: the ε each class lost (``t`` is what the analyst was charged)."""
    spec = meta.personal
    assert spec is not None
    parts = ", ".join(f"{c['class']} {c['epsilon_lost']:g}" for c in classes(spec, t))
    return f" /* personalised {spec.column}, t={t:g}: {parts} */"
