"""A parsed DP-SELECT (:class:`DPQuery`) and the bounds on ε every spelling of a query shares: the value
privdb.sql.front.dpselect.parse makes from ``DP-SELECT ε …`` and privdb.sql.front.bigquery.syntax from
BigQuery's ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(…) …``, for the stages after the front."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sqlglot import exp

from privdb.errors import InvalidParameter
from privdb.sql.front.limits import DIALECT

__all__ = ["MAX_EPSILON", "ArrayItem", "Bounds", "DPQuery", "Options", "Report", "Selection", "check_epsilon"]

MAX_EPSILON = 1000.0  # above this a "private" answer is the raw answer in all but name


@dataclass(frozen=True)
class Bounds:
    """An aggregate's ``contribution_bounds_per_group`` or ``_per_row`` (BigQuery): ``per`` is "group" or
    "row"."""

    per: str
    lower: float
    upper: float


@dataclass(frozen=True)
class Report:
    """A select item that asks ZetaSQL's report of its aggregate (privdb.sql.front.bigquery.report): its
    position, ``JSON`` or ``PROTO``, and the fields read from it (``….value.noise_confidence_interval``)."""

    item: int
    format: str = "JSON"
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArrayItem:
    """A select item that is ZetaSQL's array of quantiles (privdb.sql.front.bigquery.quantiles): its
    position in the query, the ``count`` released columns from ``start`` its elements are, ``kind``
    "array" (the list) or "length" (``ARRAY_LENGTH`` of it), and the answer column's name."""

    item: int
    start: int
    count: int
    kind: str
    name: str


@dataclass(frozen=True)
class Selection:
    """ZetaSQL's group selection, for a query in BigQuery's spelling (privdb.sql.plan.selection): a group,
    or a total's one row, is released when its noisy count of distinct privacy units reaches the threshold
    δ sets, raised to ``k_threshold`` and by ``min_units − 1`` (``min_privacy_units_per_group``)."""

    k_threshold: int | None = None
    min_units: int | None = None


@dataclass(frozen=True)
class Options:
    """What BigQuery's ``WITH DIFFERENTIAL_PRIVACY OPTIONS(…)`` asks beyond ε and δ, before it is read
    against the table (privdb.sql.front.bigquery.plan): the privacy unit it names, its
    ``max_groups_contributed``, and each select item's bounds (by position in the select list)."""

    unit: str | None = None
    unit_qualifier: str | None = None
    max_groups: int | None = None
    max_rows: int | None = None  # max_rows_contributed: rows per privacy unit in the whole query
    bounds: tuple[tuple[int, Bounds], ...] = ()
    reports: tuple[Report, ...] = ()  # the select items asking ZetaSQL's report
    arrays: tuple[ArrayItem, ...] = ()  # the select items that are arrays of quantiles
    selection: Selection = Selection()

    def bounds_of(self, item: int) -> Bounds | None:
        return next((b for i, b in self.bounds if i == item), None)


@dataclass(frozen=True)
class DPQuery:
    """A parsed DP-SELECT: its privacy parameters and the SELECT it wraps."""

    epsilon: float
    delta: float
    select: exp.Select
    text: str
    # DP-SELECT ACCURACY a [CONFIDENCE c] [MAX m]: (a, c, m); ε is then chosen by privdb.sql.accuracy.search
    accuracy: tuple[float, float, float | None] | None = None
    # USING GAUSSIAN: counts and sums get (discrete) Gaussian noise, accounted in zCDP; USING SMOOTH:
    # MEDIAN and QUANTILE get noise scaled to their smooth sensitivity (privdb.sql.plan.smooth)
    noise: str = "laplace"
    # accuracy first (privdb.sql.accuracy.first): the increasing ε of its steps, the last its MAX
    schedule: tuple[float, ...] | None = None
    # the SELECT as :meth:`body` writes it, when known already (a prepared query shape:
    # privdb.sql.plan.prepared)
    written: str | None = field(default=None, compare=False, repr=False)
    # BigQuery's spelling (privdb.sql.front.bigquery.syntax): its options, until
    # privdb.sql.front.bigquery.plan has read them against the table and written ``select`` as the DP-SELECT
    # it asks (then None)
    bigquery: Options | None = None
    # BigQuery's max_groups_contributed below the table's max_groups: the plan's G (never above the table's)
    max_groups: int | None = None
    # BigQuery's spelling: groups (and a total's row) selected as ZetaSQL selects them; None: DP-SELECT's rule
    selection: Selection | None = None
    # BigQuery's max_rows_contributed below the table's max_contributions: the plan's m (and G at most m)
    max_rows: int | None = None

    def body(self) -> str:
        """The SELECT in DuckDB's dialect, without comments."""
        return self.written if self.written is not None else self.select.sql(dialect=DIALECT, comments=False)

    @property
    def normalized(self) -> str:
        """A canonical form: the same question written differently caches to the same key."""
        body = self.body()
        if self.schedule is not None and self.accuracy is not None:  # not the ε-query of its MAX
            half, confidence, _ = self.accuracy
            return f"DP-SELECT ACCURACY {half!r} CONFIDENCE {confidence!r} MAX {self.epsilon!r} {body}"
        using = "" if self.noise == "laplace" else f" USING {self.noise.upper()}"
        groups = "" if self.max_groups is None else f" /* max_groups_contributed={self.max_groups} */"
        rows = "" if self.max_rows is None else f" /* max_rows_contributed={self.max_rows} */"
        chosen = "" if self.selection is None else f" /* {self.selection} */"
        return f"DP-SELECT {self.epsilon!r} DELTA {self.delta!r}{using}{groups}{rows}{chosen} {body}"


def check_epsilon(epsilon: float) -> None:
    """Refuse an ε no answer may be given at (the one message, wherever ε was read)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"epsilon must be > 0 and finite, got {epsilon:g}")
    if epsilon > MAX_EPSILON:
        raise InvalidParameter(
            f"epsilon {epsilon:g} is above {MAX_EPSILON:g}: such an answer protects no one; "
            "use a smaller epsilon"
        )
