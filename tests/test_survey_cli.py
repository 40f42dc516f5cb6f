"""`privdb survey create | tokens | submit | estimate | list` (issues 15, 25) against a real server on a real
port and on a database directory: labels end to end, answers randomised before they leave, estimates near the
truth, one answer per respondent token."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from privdb.local.survey import PROTOCOLS
from serverfixtures import Server, make_server_db

TRUTH = {"never": 1500, "former": 600, "current": 900}


def privdb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "privdb", *args], input=stdin, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("surveys") / "db"
    tokens = make_server_db(path, people=50)
    server = Server(path).start()
    try:
        yield server, tokens
    finally:
        server.stop()


def _answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.txt"
    path.write_text("".join(f"{value}\n" for value, n in TRUTH.items() for _ in range(n)))
    return path


def test_a_survey_over_the_server(served: tuple[Server, dict[str, str]], tmp_path: Path) -> None:
    server, tokens = served
    remote = ["--url", server.url]
    made = privdb("survey", "create", "smoking", "--protocol", "krr", "--epsilon", "2", "--open",
                  "--open-limit", "3000", "--values", "never,former,current", *remote,
                  "--token", tokens["owner"])  # fmt: skip
    assert made.returncode == 0, made.stderr
    collect = made.stdout.strip()
    sent = privdb("survey", "submit", "smoking", str(_answers(tmp_path)), *remote, "--token", collect)
    assert sent.returncode == 0, sent.stderr
    assert "sent 3,000 randomised responses" in sent.stdout
    for token in (tokens["owner"], tokens["alice"], collect):  # any token reads it, its collection token too
        shown = privdb("survey", "estimate", "smoking", *remote, "--token", token, "--format", "json")
        assert shown.returncode == 0, shown.stderr
    found = json.loads(shown.stdout)
    assert found["n"] == 3000 and [e["value"] for e in found["estimates"]] == list(TRUTH)
    assert found["access"] == {"open": True, "open_limit": 3000, "open_responses": 3000,
                               "respondent_tokens": 0, "respondent_tokens_used": 0}  # fmt: skip
    for e in found["estimates"]:
        # k-RR at ε = 2 over 3 values, n = 3000: each count within 4.5 standard errors of the truth
        # (false failure ≤ 3 × 7e-6); the 95% interval is count ± 1.96 se
        assert abs(e["count"] - TRUTH[e["value"]]) <= 4.5 * e["std_error"]
        assert e["ci95"][0] == pytest.approx(e["count"] - 1.96 * e["std_error"], rel=1e-3, abs=1e-6)
    table = privdb("survey", "estimate", "smoking", *remote, "--token", tokens["owner"])
    assert "3,000 responses, ε = 2 per person" in table.stdout and "current" in table.stdout
    csv = privdb("survey", "estimate", "smoking", *remote, "--token", tokens["owner"], "--format", "csv")
    assert csv.stdout.splitlines()[0] == "value,count,share,std_error,ci95_low,ci95_high"
    listed = privdb("survey", "list", *remote, "--token", tokens["owner"], "--format", "json")
    assert json.loads(listed.stdout)[0]["spec"]["domain"] == list(TRUTH)
    assert httpx.get(f"{server.url}/v1/surveys/smoking").status_code == 401  # but a token is needed


def test_refusals_are_clear_and_send_nothing(served: tuple[Server, dict[str, str]], tmp_path: Path) -> None:
    server, tokens = served
    remote = ["--url", server.url]
    made = privdb("survey", "create", "votes", "--protocol", "binary", "--epsilon", "1", "--values", "no,yes",
                  *remote, "--token", tokens["owner"])  # fmt: skip
    collect = made.stdout.strip()
    bad = privdb("survey", "submit", "votes", *remote, "--token", collect, stdin="yes\nmaybe\n")
    assert (
        bad.returncode == 2 and "1 of 2 answers are not values of the survey's domain (no, yes)" in bad.stderr
    )
    assert "maybe" not in bad.stderr.split("domain")[0]  # the answer itself is never echoed back
    shown = json.loads(
        privdb("survey", "estimate", "votes", *remote, "--token", collect, "--format", "json").stdout
    )
    assert shown["n"] == 0
    analyst = privdb("survey", "create", "x", "--protocol", "krr", "--epsilon", "1", "--values", "a,b",
                     *remote, "--token", tokens["alice"])  # fmt: skip
    assert analyst.returncode == 2 and "Traceback" not in analyst.stderr
    wrong = privdb("survey", "create", "x", "--protocol", "rappor", *remote, "--token", tokens["owner"])
    assert wrong.returncode == 2 and "krr" in wrong.stderr


def test_respondent_tokens_send_one_answer_each(
    served: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    """A survey is closed by default: its collection token reads but does not send; `privdb survey tokens`
    issues one-time tokens, each of which sends exactly one randomised answer, once."""
    server, tokens = served
    remote = ["--url", server.url]
    made = privdb("survey", "create", "pets", "--protocol", "krr", "--epsilon", "1", "--values", "cat,dog",
                  *remote, "--token", tokens["owner"])  # fmt: skip
    collect = made.stdout.strip()
    shut = privdb("survey", "submit", "pets", *remote, "--token", collect, stdin="cat\n")
    assert shut.returncode == 2 and "[forbidden]" in shut.stderr and "privdb survey tokens" in shut.stderr
    issued = privdb("survey", "tokens", "pets", "--count", "3", *remote, "--token", tokens["owner"])
    assert issued.returncode == 0, issued.stderr
    respondents = issued.stdout.split()
    assert len(set(respondents)) == 3
    for respondent, answer in zip(respondents, ["cat", "dog", "cat"], strict=True):
        sent = privdb("survey", "submit", "pets", *remote, "--token", respondent, stdin=answer + "\n")
        assert sent.returncode == 0 and "sent 1 randomised responses" in sent.stdout, sent.stderr
    again = privdb("survey", "submit", "pets", *remote, "--token", respondents[0], stdin="dog\n")
    assert again.returncode == 2 and "[limit_reached]" in again.stderr and "one response" in again.stderr
    two = privdb("survey", "submit", "pets", *remote, "--token", respondents[1], stdin="dog\ncat\n")
    assert two.returncode == 2 and "exactly one response" in two.stderr
    shown = json.loads(
        privdb("survey", "estimate", "pets", *remote, "--token", respondents[2], "--format", "json").stdout
    )
    assert shown["n"] == 3 and shown["access"]["respondent_tokens_used"] == 3 and not shown["access"]["open"]
    by_analyst = privdb("survey", "tokens", "pets", "--count", "1", *remote, "--token", tokens["alice"])
    assert by_analyst.returncode == 2 and "owner" in by_analyst.stderr
    to_file = tmp_path / "tokens.txt"
    written = privdb("survey", "tokens", "pets", "--count", "2", "-o", str(to_file), *remote,
                     "--token", tokens["owner"])  # fmt: skip
    assert written.returncode == 0 and len(to_file.read_text().split()) == 2
    assert to_file.stat().st_mode & 0o077 == 0  # bearer secrets: the owner's eyes only


def test_a_survey_on_a_database_directory(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert privdb("grant", "--db", db, "a", "--epsilon", "1").returncode == 0
    made = privdb("survey", "create", "fruit", "--db", db, "--protocol", "oue", "--epsilon", "1",
                  "--values", "apple,pear")  # fmt: skip
    assert made.returncode == 0, made.stderr
    sent = privdb("survey", "submit", "fruit", "--db", db, stdin="apple\npear\napple\n")
    assert sent.returncode == 0 and "sent 3 randomised responses" in sent.stdout
    shown = json.loads(privdb("survey", "estimate", "fruit", "--db", db, "--format", "json").stdout)
    assert shown["n"] == 3 and [e["value"] for e in shown["estimates"]] == ["apple", "pear"]
    assert privdb("survey", "list", "--db", str(tmp_path / "typo")).returncode == 2
    issued = privdb("survey", "tokens", "fruit", "--count", "2", "--db", db)
    assert issued.returncode == 0 and len(issued.stdout.split()) == 2


def test_the_protocol_choices_are_the_protocols_there_are() -> None:
    from typing import get_args

    from privdb.cli.survey import Protocol

    assert set(get_args(Protocol)) == set(PROTOCOLS)
