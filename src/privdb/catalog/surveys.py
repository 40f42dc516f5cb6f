"""The catalog's surveys of the local model: spec, estimator state, and who may add responses.

A survey row keeps the spec, the support counts and number of reports (never a response), the hash of its
collection token, and its openness: ``open_limit`` NULL for a closed survey (responses come only with
respondent tokens, or from the owner), else how many responses its collection token may add in all, with
``open_n`` added so far and the collection token's current rate window (``window_start``, ``window_n``).
``survey_respondents`` holds the hash of each one-time respondent token and when it was used.

Every addition is one write transaction (the store's write lock, :mod:`privdb.accounting.sqlstore`): the
check of the token's allowance and the addition of the counts commit together or not at all, so two
concurrent submissions with one respondent token add one response, on SQLite and on PostgreSQL alike. The
policy (limits, rates) is the caller's (:mod:`privdb.local.store`); the catalog applies what it is given.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Literal

from privdb.accounting.sqlstore import Cursor, SQLStore
from privdb.errors import Forbidden, InvalidParameter, LimitReached, RateLimited, UnknownTable

__all__ = ["SURVEY_ADDED", "SURVEY_SCHEMA", "Collection", "SurveyRecords"]

SURVEY_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS surveys (name TEXT PRIMARY KEY, spec TEXT NOT NULL,"
    " collect_sha256 TEXT NOT NULL, n INTEGER NOT NULL, support TEXT NOT NULL, created REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS survey_respondents (token_sha256 TEXT PRIMARY KEY, survey TEXT NOT NULL,"
    " created REAL NOT NULL, used REAL)",
)
SURVEY_ADDED = (
    ("surveys", "open_limit", "INTEGER"),  # responses the collection token may add in all (NULL: closed)
    ("surveys", "open_n", "INTEGER"),  # responses the collection token added (NULL: none)
    ("surveys", "window_start", "REAL"),  # the collection token's current rate window
    ("surveys", "window_n", "INTEGER"),
)

Via = Literal["owner", "collector", "respondent"]


@dataclass(frozen=True)
class Collection:
    """How one addition of responses is allowed: by whom, with which token, at what rate."""

    via: Via = "owner"
    token: str | None = None  # the respondent token (``via="respondent"``)
    rate: int = 0  # responses per window for a collection token
    window: float = 60.0  # seconds


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class SurveyRecords:
    """The survey half of :class:`privdb.catalog.store.Catalog` (which mixes it in over its store)."""

    _store: SQLStore

    def create_survey(self, name: str, spec: dict[str, Any], d: int, *, open_limit: int | None = None) -> str:
        """Declare a survey; returns its collection token (for reading the spec, and for sending when the
        survey is open: at most ``open_limit`` responses in all), shown once."""
        token = secrets.token_urlsafe(32)
        with self._store.cursor() as cur:
            added = cur.execute(
                "INSERT INTO surveys (name, spec, collect_sha256, n, support, created, open_limit, open_n) "
                "VALUES (?, ?, ?, 0, ?, ?, ?, 0) ON CONFLICT (name) DO NOTHING",
                (name, json.dumps(spec), _hash(token), json.dumps([0] * d), time.time(), open_limit),
            ).rowcount
        if added == 0:
            raise InvalidParameter(f"a survey {name!r} exists already; choose another name")
        return token

    def survey(self, name: str) -> tuple[dict[str, Any], int, list[int]]:
        """The survey's spec, number of reports and support counts."""
        with self._store.cursor() as cur:
            row = cur.execute("SELECT spec, n, support FROM surveys WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise UnknownTable(f"no survey {name!r}; the owner declares surveys with POST /v1/surveys")
        return dict(json.loads(row[0])), int(row[1]), list(json.loads(row[2]))

    def surveys(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every survey's (or the one named's) name, spec, number of responses and who may send them."""
        where, args = ("WHERE s.name = ? ", (name,)) if name is not None else ("", ())
        with self._store.cursor() as cur:
            rows = cur.execute(
                "SELECT s.name, s.spec, s.n, s.open_limit, s.open_n, COUNT(r.token_sha256), COUNT(r.used) "
                f"FROM surveys s LEFT JOIN survey_respondents r ON r.survey = s.name {where}"
                "GROUP BY s.name, s.spec, s.n, s.open_limit, s.open_n ORDER BY s.name",
                args,
            ).fetchall()
        return [{"name": r[0], "spec": json.loads(r[1]), "n": r[2], "access": _access(*r[3:])} for r in rows]

    def survey_access(self, name: str) -> dict[str, Any]:
        """Who may send to the survey: open (with its limit and use) or closed, and its respondent tokens."""
        found = self.surveys(name)
        if not found:
            raise UnknownTable(f"no survey {name!r}")
        return dict(found[0]["access"])

    def survey_token(self, token: str) -> tuple[str, Via] | None:
        """The survey a token sends to, and whether it is its collection token or a respondent token."""
        digest = _hash(token)
        with self._store.cursor() as cur:
            row = cur.execute(
                "SELECT survey FROM survey_respondents WHERE token_sha256 = ?", (digest,)
            ).fetchone()
            if row is not None:
                return str(row[0]), "respondent"
            row = cur.execute("SELECT name FROM surveys WHERE collect_sha256 = ?", (digest,)).fetchone()
        return None if row is None else (str(row[0]), "collector")

    def is_collector(self, name: str, token: str) -> bool:
        with self._store.cursor() as cur:
            row = cur.execute("SELECT collect_sha256 FROM surveys WHERE name = ?", (name,)).fetchone()
        return row is not None and secrets.compare_digest(str(row[0]), _hash(token))

    def issue_respondent_tokens(self, name: str, count: int) -> list[str]:
        """``count`` new one-time respondent tokens of the survey (each adds one response), shown once."""
        tokens = [secrets.token_urlsafe(32) for _ in range(count)]
        now = time.time()
        with self._store.transaction(durable=False) as cur:
            if cur.execute("SELECT 1 FROM surveys WHERE name = ?", (name,)).fetchone() is None:
                raise UnknownTable(f"no survey {name!r}")
            for token in tokens:
                cur.execute(
                    "INSERT INTO survey_respondents VALUES (?, ?, ?, NULL)", (_hash(token), name, now)
                )
        return tokens

    def add_to_survey(self, name: str, support: list[int], n: int, how: Collection | None = None) -> int:
        """Add one batch's support counts, atomically with the check and use of the sender's allowance
        (a respondent token's one response; an open survey's limit and its collection token's rate)."""
        how = how or Collection()
        with self._store.transaction(durable=False) as cur:
            row = cur.execute("SELECT n, support FROM surveys WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise UnknownTable(f"no survey {name!r}")
            if how.via == "respondent":
                _use_respondent_token(cur, name, how.token or "", n)
            elif how.via == "collector":
                _use_collection_token(cur, name, n, how)
            total = [a + b for a, b in zip(json.loads(row[1]), support, strict=True)]
            cur.execute(
                "UPDATE surveys SET n = ?, support = ? WHERE name = ?",
                (int(row[0]) + n, json.dumps(total), name),
            )
        return int(row[0]) + n


def _access(open_limit: int | None, open_n: int | None, issued: int, used: int) -> dict[str, Any]:
    return {
        "open": open_limit is not None,
        "open_limit": open_limit,
        "open_responses": int(open_n or 0),
        "respondent_tokens": int(issued),
        "respondent_tokens_used": int(used),
    }


def _use_respondent_token(cur: Cursor, name: str, token: str, n: int) -> None:
    if n != 1:
        raise InvalidParameter(f"a respondent token sends exactly one response, not {n:,}")
    taken = cur.execute(
        "UPDATE survey_respondents SET used = ? WHERE token_sha256 = ? AND survey = ? AND used IS NULL",
        (time.time(), _hash(token), name),
    ).rowcount
    if taken != 1:
        raise LimitReached(
            "this respondent token has sent its one response already (each respondent token adds exactly "
            "one); nothing was added"
        )


def _use_collection_token(cur: Cursor, name: str, n: int, how: Collection) -> None:
    limit, used, start, in_window = cur.execute(
        "SELECT open_limit, open_n, window_start, window_n FROM surveys WHERE name = ?", (name,)
    ).fetchone()
    if limit is None:
        raise Forbidden(
            f"survey {name!r} is closed: its collection token reads the survey but does not send; send "
            "with a respondent token (the owner issues them: privdb survey tokens), or the owner declares "
            "an open survey (--open)"
        )
    used = int(used or 0)
    if used + n > int(limit):
        raise LimitReached(
            f"survey {name!r} is open for {int(limit):,} responses from its collection token and has taken "
            f"{used:,}; this batch of {n:,} would pass the limit, so nothing was added: send at most "
            f"{int(limit) - used:,}, or respondents send with respondent tokens"
        )
    now = time.time()
    if start is None or now - float(start) >= how.window:
        start, in_window = now, 0
    if int(in_window or 0) + n > how.rate:
        wait = float(start) + how.window - now
        raise RateLimited(
            f"the collection token may send {how.rate:,} responses per {how.window:g} seconds and has "
            f"sent {int(in_window or 0):,} in this window; nothing was added: send again in {wait:.0f} s "
            "(Retry-After)",
            retry_after=wait,
        )
    cur.execute(
        "UPDATE surveys SET open_n = ?, window_start = ?, window_n = ? WHERE name = ?",
        (used + n, start, int(in_window or 0) + n, name),
    )
