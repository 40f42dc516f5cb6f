"""What BI tools send over the PostgreSQL endpoint (issue 38): DP queries inside plain SQL, and plain
aggregate SQL answered with DP at a session ε (``SET privdb.epsilon``, the start-up packet's options) —
the forms of Superset's chart and SQL Lab queries, replayed against a real server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import psycopg
import pytest

from pgwirefixtures import PgServed, start_pg_server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgplain") / "db", budget=40.0)
    yield served
    served.server.stop()


def _spent(served: PgServed, user: str) -> float:
    headers = {"Authorization": f"Bearer {served.tokens[user]}"}
    return float(httpx.get(served.server.url + "/v1/budget", headers=headers).json()["epsilon_spent"])


def test_a_dp_query_inside_a_plain_select_is_post_processed_for_its_own_epsilon(served: PgServed) -> None:
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        before = _spent(served, "alice")
        rows = conn.execute(  # Superset's SQL Lab: the query wrapped as a virtual table with a LIMIT
            "SELECT sex, n FROM (DP-SELECT 1 sex, COUNT(*) AS n FROM people GROUP BY sex) "
            "AS virtual_table ORDER BY sex LIMIT 1001"
        ).fetchall()
        assert [r[0] for r in rows] == ["F", "M"] and all(r[1] > 1000 for r in rows)
        assert _spent(served, "alice") == pytest.approx(before + 1)
        cte = conn.execute(  # a CTE, BigQuery's spelling, arithmetic and a filter on released values
            "WITH c AS (SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6, "
            "max_groups_contributed=1) sex, AVG(income) AS m FROM people GROUP BY sex) "
            "SELECT sex, round(m / 1000) AS k FROM c WHERE m > 0 ORDER BY sex"
        ).fetchall()
        assert [r[0] for r in cte] == ["F", "M"]
        assert _spent(served, "alice") == pytest.approx(before + 2)


def test_plain_aggregates_at_a_session_epsilon_are_dp_and_a_refresh_is_free(served: PgServed) -> None:
    chart = "SELECT sex, AVG(income) FROM public.people GROUP BY sex LIMIT 10000"
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as refused:  # no session ε: today's teaching message
            conn.execute(chart)
        assert "DP-SELECT" in str(refused.value)
        conn.execute("SET privdb.epsilon = 0.5")
        before = _spent(served, "bob")
        cursor = conn.execute(chart)
        assert [d.name for d in cursor.description or []] == ["sex", "avg"]  # PostgreSQL's names
        first = cursor.fetchall()
        assert len(first) == 2 and _spent(served, "bob") == pytest.approx(before + 0.5)
        assert conn.execute(chart).fetchall() == first  # the dashboard refreshes: the stored answer
        assert _spent(served, "bob") == pytest.approx(before + 0.5)
        virtual = conn.execute(  # a chart over a virtual dataset: the aggregate is outside
            'SELECT sex, AVG(income) AS "AVG(income)" FROM (SELECT * FROM people) AS virtual_table '
            'GROUP BY sex ORDER BY "AVG(income)" DESC LIMIT 10000'
        ).fetchall()
        assert len(virtual) == 2 and _spent(served, "bob") == pytest.approx(before + 1.0)
        with pytest.raises(psycopg.Error) as rows:  # rows of a private table stay refused
            conn.execute("SELECT * FROM people LIMIT 5")
        assert "not public" in str(rows.value)
        with pytest.raises(psycopg.Error) as bad:
            conn.execute("SET privdb.epsilon = -1")
        assert "privdb.epsilon is a number" in str(bad.value)


def test_the_start_up_options_set_the_session_epsilon(served: PgServed) -> None:
    """libpq's ``options``: how Superset's engine parameters and Metabase's JDBC options set it."""
    url = served.url("bob") + "?options=-c%20privdb.epsilon%3D0.25%20-c%20privdb.intervals%3Don"
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SHOW privdb.epsilon").fetchone() == ("0.25",)
        before = _spent(served, "bob")
        cursor = conn.execute("SELECT COUNT(*) FROM people WHERE age > 40")
        names = [d.name for d in cursor.description or []]
        assert names == ["count", "count_ci95_low", "count_ci95_high"]  # intervals asked for
        assert _spent(served, "bob") == pytest.approx(before + 0.25)


def test_refused_before_reading_spends_nothing(served: PgServed) -> None:
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        before = _spent(served, "alice")
        for query in (
            "SELECT * FROM (DP-SELECT 1 COUNT(*) AS n FROM people) x, people",  # the outer reads a table
            "SELECT len(range(100000000)) FROM (DP-SELECT 1 COUNT(*) AS n FROM people) x",  # a generator
            "SELECT * FROM (DP-SELECT 1 COUNT(*) AS n FROM people) x, (DP-SELECT 1 nope FROM people) y",
        ):
            with pytest.raises(psycopg.Error):
                conn.execute(query)
        assert _spent(served, "alice") == before


def test_a_grants_query_epsilon_is_every_doors_default(served: PgServed) -> None:
    """``privdb grant --query-epsilon``: a BI tool that cannot set parameters (Superset's dataset charts
    over a plain connection) gets plain aggregates answered at the grant's ε, over both doors; a session
    may turn it off (``SET privdb.epsilon = off``), RESET returns to it, and 0 removes it from the grant."""
    owner = {"Authorization": f"Bearer {served.tokens['owner']}"}

    def grant(**body: object) -> httpx.Response:
        return httpx.post(served.server.url + "/v1/analysts", headers=owner, json={"name": "carol", **body})

    bad = grant(epsilon=2.0, query_epsilon=3.0)  # more than the total: refused, nothing granted
    assert bad.status_code == 400 and "query_epsilon" in bad.json()["error"]["message"]
    carol = grant(epsilon=2.0, query_epsilon=0.125).json()["token"]
    served.tokens["carol"] = carol
    chart = "SELECT sex, COUNT(*) FROM people GROUP BY sex"
    headers = {"Authorization": f"Bearer {carol}"}
    over_http = httpx.post(served.server.url + "/v1/query", headers=headers, json={"sql": chart}).json()
    assert over_http["epsilon_spent"] == 0.125 and len(over_http["rows"]) == 2
    with psycopg.connect(served.url("carol"), autocommit=True) as conn:
        assert conn.execute("SHOW privdb.epsilon").fetchone() == ("0.125",)
        assert len(conn.execute(chart + " ORDER BY sex").fetchall()) == 2
        assert _spent(served, "carol") == pytest.approx(0.25)
        conn.execute("SET privdb.epsilon = off")
        with pytest.raises(psycopg.Error, match="DP-SELECT"):
            conn.execute("SELECT COUNT(*) FROM people")
        conn.execute("RESET privdb.epsilon")
        assert conn.execute("SHOW privdb.epsilon").fetchone() == ("0.125",)
    # a re-grant that leaves it out keeps it; 0 removes it
    grant(epsilon=2.0)
    kept = httpx.get(served.server.url + "/v1/analysts", headers=owner).json()
    assert next(a for a in kept if a["name"] == "carol")["query_epsilon"] == 0.125
    served.tokens["carol"] = grant(query_epsilon=0).json()["token"]
    headers = {"Authorization": f"Bearer {served.tokens['carol']}"}
    refused = httpx.post(
        served.server.url + "/v1/query", headers=headers, json={"sql": "SELECT COUNT(*) FROM people"}
    )
    assert refused.status_code >= 400 and "DP-SELECT" in refused.json()["error"]["message"]
    assert _spent(served, "carol") == pytest.approx(0.25)
