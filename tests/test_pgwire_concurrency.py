"""50 psql sessions at once on one analyst's budget: exactly the budget is spent, never more."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from pgwirefixtures import PSQL, psql, start_pg_server

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")


@pytest.mark.slow
def test_fifty_concurrent_psql_sessions_spend_exactly_the_budget(tmp_path: Path) -> None:
    served = start_pg_server(tmp_path / "db", budget=5.0)  # 20 queries of ε 0.25
    try:
        queries = [f"DP-SELECT 0.25 COUNT(*) FROM people WHERE age > {i}" for i in range(50)]  # distinct
        with ThreadPoolExecutor(50) as pool:
            runs = list(pool.map(lambda q: psql(served, "bob", q, timeout=120), queries))
        answered = [r for r in runs if r.returncode == 0]
        refused = [r for r in runs if r.returncode != 0]
        assert len(answered) == 20, [r.stderr for r in refused][:3]
        assert all("this needs ε=0.25" in r.stderr and "left" in r.stderr for r in refused)
        headers = {"Authorization": f"Bearer {served.tokens['bob']}"}
        budget = httpx.get(served.server.url + "/v1/budget", headers=headers).json()
        assert budget["epsilon_spent"] == pytest.approx(5.0, abs=1e-12)
        assert budget["epsilon_remaining"] == pytest.approx(0.0, abs=1e-12)
    finally:
        served.server.stop()
