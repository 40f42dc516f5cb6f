"""Publishing through every face (issue 17): the Python API embedded, and the real server's POST /v1/publish
with the client, on a real port. The same release flow (privdb.publish.service): checks first (nothing
spent), the charge on the table's lifetime budget, the owner only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import privdb
from privdb.client import RemoteConnection
from privdb.errors import BudgetExhausted, InvalidParameter, RawAccessDenied
from publishfixtures import spent
from serverfixtures import Server, make_server_db

SEX = [["F", "*"], ["M", "*"]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("publish") / "db"
    tokens = make_server_db(path, people=400)
    with privdb.connect(path) as owner:
        owner.set_shared_budget(table="people", epsilon=3.0, delta=1e-3)
    server = Server(path).start()
    try:
        yield server, tokens
    finally:
        server.stop()


def test_the_owner_publishes_over_the_server(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    with RemoteConnection(server.url, tokens["owner"]) as owner:
        released = owner.publish("histogram", "people", columns=[["sex"], ["sex", "state"]], epsilon=1.0)
        assert released["columns"] == ["marginal", "sex", "count", "ci95_low", "ci95_high", "state"]
        assert released["summary"]["marginals"] == ["sex", "sex|state"]
        assert all(row[2] >= 0 for row in released["rows"])
        safe = owner.publish(
            "safepub", "people", qi=["sex"], hierarchies={"sex": SEX}, epsilon=1.0, delta=1e-5
        )
        assert safe["columns"] == ["sex"] and safe["summary"]["k"] > 1
        (cap,) = [b for b in owner.shared_budgets() if b["name"] == "people"]
        assert cap["epsilon_spent"] == pytest.approx(2.0)
        with pytest.raises(InvalidParameter, match="no column 'nosuch'"):
            owner.publish("histogram", "people", columns=[["nosuch"]], epsilon=0.5)
        with pytest.raises(InvalidParameter, match="method must be histogram, safepub or synthetic"):
            owner.publish("synthetic-ish", "people", epsilon=0.5)
        with pytest.raises(BudgetExhausted, match="table 'people'"):
            owner.publish("histogram", "people", columns=[["sex"]], epsilon=1.5)
        (cap,) = [b for b in owner.shared_budgets() if b["name"] == "people"]
        assert cap["epsilon_spent"] == pytest.approx(2.0)  # refusals spent nothing
    with RemoteConnection(server.url, tokens["alice"]) as analyst, pytest.raises(privdb.errors.PrivdbError):
        analyst.publish("histogram", "people", columns=[["sex"]], epsilon=0.1)
    answer = httpx.post(f"{server.url}/v1/publish", json={"method": "histogram", "table": "people"})
    assert answer.status_code == 401


def test_the_embedded_connection_publishes_and_analysts_may_not(tmp_path: Path) -> None:
    make_server_db(tmp_path / "db", people=200)
    with privdb.connect(tmp_path / "db") as owner:
        out = owner.publish("histogram", "people", hierarchical="age", epsilon=1.0)
        assert out["summary"]["hierarchical"]["column"] == "age"
        made = owner.publish("synthetic", "people", columns=["sex", "state", "age"], epsilon=1.0, delta=1e-9,
                             rows=50)  # fmt: skip
        assert made["columns"] == ["sex", "state", "age"] and len(made["rows"]) == 50
    with privdb.connect(tmp_path / "db", analyst="alice") as alice, pytest.raises(RawAccessDenied):
        alice.publish("histogram", "people", columns=[["sex"]], epsilon=0.1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"columns": [["sex"]], "epsilon": "x"}, "epsilon must be a number, got 'x'"),
        ({"columns": [["sex"]], "epsilon": True}, "epsilon must be a number"),
        ({"hierarchical": "age", "epsilon": 1, "branching": "x"}, "branching must be a whole number"),
        ({"hierarchical": "age", "epsilon": 1, "branching": 2.5}, "branching must be a whole number"),
    ],
)
def test_a_request_with_numbers_of_the_wrong_kind_is_refused_naming_the_option(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    make_server_db(tmp_path / "db", people=50)
    with privdb.connect(tmp_path / "db") as owner, pytest.raises(InvalidParameter, match=message):
        owner.publish("histogram", "people", **options)
    assert spent(tmp_path / "db") == 0  # nothing charged to the owner's account
