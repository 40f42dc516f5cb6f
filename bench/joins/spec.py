"""What bench.joins measures: three tables (people, visits, regions), their metadata, the queries J1–J3
and the targets. Standard library only (both workers read it)."""

from __future__ import annotations

from typing import Any

from bench.harness.query import Query

QRLEW_DELTA = 1e-6  # Qrlew's mechanisms are Gaussian: they need δ > 0
QUICK_PEOPLE = 200_000
VISITS_PER_PERSON = 3
SEED = 14
SKEW = 2.0  # visit i goes to the person of rank ⌊N·u^SKEW⌋
SCRAMBLE = 2654435761  # ranks are spread over pids by this multiplier modulo N (a prime)
TARGET = 2.0  # privdb ÷ raw DuckDB on a join

STATES = [  # the 50 states' postal codes
    *("AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY"),
    *("LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND"),
    *("OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY"),
]
KINDS = ["checkup", "emergency", "lab", "pharmacy", "specialist"]
REGIONS = [
    "New England",
    "Middle Atlantic",
    "East North Central",
    "West North Central",
    "South Atlantic",
    "East South Central",
    "West South Central",
    "Mountain",
    "Pacific",
]

METADATA: dict[str, dict[str, Any]] = {
    "people": {
        "privacy_unit": "pid",
        "max_contributions": 1,
        "columns": {
            "pid": {"type": "int", "private_id": True},
            "age": {"type": "int", "lower": 0, "upper": 100},
            "income": {"type": "float", "lower": 0, "upper": 500_000},
            "state": {"type": "category", "values": STATES},
            "region_code": {"type": "int", "lower": 1, "upper": 9},
        },
    },
    "visits": {
        "privacy_unit": "pid",
        "max_contributions": 10,
        "max_groups": 1,
        "columns": {
            "pid": {"type": "int", "private_id": True},
            "cost": {"type": "float", "lower": 0, "upper": 5000},
            "kind": {"type": "category", "values": KINDS},
        },
    },
    "regions": {
        "public": True,
        "columns": {"code": {"type": "int"}, "name": {"type": "text", "values": REGIONS}},
    },
}


QUERIES = [
    Query(
        "J1",
        "people ⋈ visits: state, COUNT, SUM, AVG(cost)",
        "p.state, COUNT(*), SUM(v.cost), AVG(v.cost) FROM people p JOIN visits v ON p.pid = v.pid "
        "GROUP BY p.state",
    ),
    Query(
        "J2",
        "people ⋈ regions (public): name, COUNT, AVG(income)",
        "r.name, COUNT(*), AVG(p.income) FROM people p JOIN regions r ON p.region_code = r.code "
        "GROUP BY r.name",
    ),
    Query(
        "J3",
        "visits alone: kind, COUNT, SUM(cost)",
        "v.kind, COUNT(*), SUM(v.cost) FROM visits v GROUP BY v.kind",
    ),
]
JOINS = ("J1", "J2")
TABLES = ("people", "visits", "regions")


def qrlew_sql(query: Query) -> str:
    """The query as Qrlew reads it: its Dataset names tables schema.table."""
    return query.qualified(TABLES)
