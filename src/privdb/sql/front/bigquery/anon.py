"""ZetaSQL's older spelling, ``SELECT WITH ANONYMIZATION OPTIONS(…)`` with the ``ANON_`` aggregates, read as
the newer one (privdb.sql.front.bigquery.syntax) so that both become the same DP-SELECT plan:

- ``ANON_COUNT``, ``ANON_SUM``, ``ANON_AVG`` are COUNT, SUM, AVG (each privacy unit aggregated first), and
  ``x CLAMPED BETWEEN lo AND hi`` is their ``contribution_bounds_per_group => (lo, hi)``: each unit's
  count, sum or average in a group clamped;
- ``ANON_VAR_POP``, ``ANON_STDDEV_POP``, ``ANON_PERCENTILE_CONT(x, p)``, ``ANON_QUANTILES(x, n)`` are
  VAR_POP, STDDEV_POP, PERCENTILE_CONT, APPROX_QUANTILES (privdb.sql.front.bigquery.quantiles), and their
  ``CLAMPED BETWEEN`` is ``contribution_bounds_per_row``: each row clamped;
- ``kappa`` is ``max_groups_contributed``; ``k_threshold`` is read and checked but releases nothing more:
  privdb releases the groups its own rule releases (the keys the metadata declares, others only past the
  noisy threshold δ sets), which is what the budget records.

Everything here is read from the text alone (free refusals).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot.tokenizer_core import Token, TokenType

from privdb.errors import ParseError, UnsupportedQuery

__all__ = ["ANON_FUNCTIONS", "anon_name", "check_older_options", "is_clamped"]

# the older aggregate → (the newer name, the bounds its CLAMPED BETWEEN is)
ANON_FUNCTIONS = {
    "ANON_COUNT": ("COUNT", "group"),
    "ANON_SUM": ("SUM", "group"),
    "ANON_AVG": ("AVG", "group"),
    "ANON_VAR_POP": ("VAR_POP", "row"),
    "ANON_STDDEV_POP": ("STDDEV_POP", "row"),
    "ANON_PERCENTILE_CONT": ("PERCENTILE_CONT", "row"),
    "ANON_QUANTILES": ("APPROX_QUANTILES", "row"),
}


def anon_name(token: Token, where: str, older: bool) -> tuple[str, str]:
    """The newer name of the ``ANON_`` aggregate ``token`` and the bounds its CLAMPED BETWEEN is, or the
    refusal: under ``WITH DIFFERENTIAL_PRIVACY`` (``older`` false) they are not ZetaSQL's either."""
    name = token.text.upper()
    if not older:
        newer = ANON_FUNCTIONS.get(name, (name[5:], ""))[0]
        raise UnsupportedQuery(
            f"{token.text}{where}: the ANON_ aggregates go with SELECT WITH ANONYMIZATION; under "
            f"WITH DIFFERENTIAL_PRIVACY write {newer}(…) with contribution_bounds_per_group => (lower, upper)"
        )
    if name not in ANON_FUNCTIONS:
        raise UnsupportedQuery(
            f"{token.text}{where}: the ANON_ aggregates privdb reads are {', '.join(ANON_FUNCTIONS)}"
        )
    return ANON_FUNCTIONS[name]


def is_clamped(tokens: list[Token], j: int) -> bool:
    """``CLAMPED BETWEEN`` at ``tokens[j]``."""
    return (
        tokens[j].text.upper() == "CLAMPED"
        and j + 1 < len(tokens)
        and tokens[j + 1].token_type == TokenType.BETWEEN
    )


def check_older_options(values: Mapping[str, object], older: bool, where: str) -> None:
    """ZetaSQL's own rules for the options of each spelling: ``k_threshold`` is the older spelling's only,
    and the older spelling asks for ``delta`` or ``k_threshold`` (privdb's newer spelling keeps its
    documented default δ = 0)."""
    if "k_threshold" in values and not older:
        raise ParseError(
            f"k_threshold{where} is an option of SELECT WITH ANONYMIZATION; WITH DIFFERENTIAL_PRIVACY "
            "releases groups by delta (privdb: the keys the metadata declares, others past a noisy "
            "threshold)"
        )
    if older and values.get("delta") is None and values.get("k_threshold") is None:
        raise ParseError(
            "WITH ANONYMIZATION needs delta or k_threshold in OPTIONS (ZetaSQL's rule), e.g. "
            "OPTIONS(epsilon=1, delta=1e-6)"
        )
