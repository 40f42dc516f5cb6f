"""Bind parameters are values and only values (privdb.server.pgwire.params, .literals): whatever the value
and whatever stands around its ``$n``, the statement privdb parses has the structure of the one written,
with one literal where the ``$n`` was, and that literal reads back as the value. The attack that made
``income > 0 -$1`` with ``$1 = -10`` into ``income > 0 --10 …`` (the rest of the line a comment) is
replayed over a real server."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import duckdb
import psycopg
import pytest
import sqlglot
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sqlglot import exp
from sqlglot.dialects import DuckDB, Postgres

from pgwirefixtures import PSQL, PgServed, start_pg_server
from privdb.errors import PrivdbError
from privdb.server.pgwire import params
from privdb.server.pgwire.literals import literal
from privdb.server.pgwire.params import count_parameters, substitute
from privdb.sql.front.limits import DIALECT

INT8, INT2, FLOAT8, NUMERIC, TEXT, UNKNOWN, BOOL, DATE, TIMESTAMP = 20, 21, 701, 1700, 25, 0, 16, 1082, 1114

# what may stand before and after a $n: operators that could join a sign or a quote, none, comments
BEFORE = ["x > 0 -", "x > 0-", "x > 0 - ", "x > -", "x +", "x*", "x/", "x > (", "x = ", "x=", "x IN (1,",
          "x IN (", "NOT ", "x > 0 AND ", "x > 1 -- note\n AND y <", "x > /* $2 */"]  # fmt: skip
AFTER = ["", " AND age < 0", "AND age < 0", ")", ") AND y", "-1 > 0", "*2 > 1", "/ 2 > 1", "--c\n AND y",
         "/* c */ IS NULL", "::INT > 0", ", 2)", ".5 > 1", "e5 > 1", "\n AND y", " ^ 2 > 1",
         "\n'b' = x", " IS NOT NULL", "[1] > 0", " COLLATE nocase = 'a'"]  # fmt: skip
SPACES = st.sampled_from(["", " ", "\n", "  "])
TRICKY = st.sampled_from(["'", "''", "\\", "\\'", "--", "/*", "*/", "$1", "$$", "$tag$", "\n", "\r\n", "é",
                          "💥", " ", "E'", "U&'", ";", "\t", "\u00a0", "\u2028"])  # fmt: skip
TEXTS = st.one_of(st.text(), st.lists(TRICKY, max_size=8).map("".join)).filter(lambda t: "\x00" not in t)


@st.composite
def values(draw: st.DrawFn) -> tuple[bytes, int, Any]:
    """(value as sent in text format, its OID, the value it stands for)."""
    kind = draw(st.sampled_from(["text", "unknown", "int", "float", "numeric", "bool", "date", "timestamp"]))
    if kind in ("text", "unknown"):
        text = draw(TEXTS)
        return text.encode(), TEXT if kind == "text" else UNKNOWN, text
    if kind == "int":
        n = draw(st.integers(-(2**63), 2**63 - 1))
        return str(n).encode(), INT8, n
    if kind == "float":
        x = draw(st.floats(allow_nan=False, allow_infinity=False))
        return repr(x).encode(), FLOAT8, x
    if kind == "numeric":
        d = draw(st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30))
        return str(d).encode(), NUMERIC, d
    if kind == "bool":
        b = draw(st.booleans())
        spelled = ["t", "true", "yes", "on", "1"] if b else ["f", "false", "no", "off", "0"]
        return draw(st.sampled_from(spelled)).encode(), BOOL, b
    if kind == "date":
        day = draw(st.dates())
        return day.isoformat().encode(), DATE, day
    stamp = draw(st.datetimes())
    return stamp.isoformat(sep=" ").encode(), TIMESTAMP, stamp


def _tree(text: str) -> exp.Expression:
    return sqlglot.parse_one(text, read=DIALECT)


def _placeholder(written: str) -> str:
    """A literal of the same form as ``written`` with fixed content: what the value's literal must parse
    like, wherever it stands."""
    if written.startswith("CAST('"):
        return re.sub(r"'(?:[^']|'')*'", "'2000-01-01'", written, count=1)
    if written.startswith("'"):
        return "'__v__'"
    if written.startswith("("):
        return "(-7)"
    return written if written in ("TRUE", "FALSE", "NULL") else "7"


def _placed(tree: exp.Expression, placeholder: exp.Expression, value: exp.Expression) -> exp.Expression:
    """``tree`` with the ``placeholder`` node replaced by ``value``."""
    return tree.transform(lambda n: value.copy() if n == placeholder else n)


def _read_back(text: str) -> Any:
    """What DuckDB reads the literal ``text`` as."""
    return duckdb.sql(f"SELECT {text}").fetchall()[0][0]


def _comments(tree: exp.Expression) -> list[str]:
    return sorted(c for node in tree.walk() for c in node.comments or [])


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(BEFORE), SPACES, SPACES, st.sampled_from(AFTER), values())
def test_no_value_changes_the_statements_structure(
    before: str, left: str, right: str, after: str, value: tuple[bytes, int, Any]
) -> None:
    """The parsed statement is the one written with its ``$1`` replaced by one literal of the value:
    no operator joins a sign, no quote ends early, no comment begins or ends."""
    sent, oid, _ = value
    written = f"SELECT a FROM t WHERE {before}{left}$1{right}{after}"
    assume(count_parameters(written) == 1)  # `$1e5` is no parameter
    bound = substitute(written, [sent], [oid], [])  # its own check refuses any change of structure
    one = literal(sent, oid, False, 1)
    mark = _placeholder(one)
    try:
        reference = _tree(written.replace("$1", f" {mark} "))
    except sqlglot.errors.SqlglotError:
        return  # not SQL whatever stands there: the token check inside substitute is what holds
    got = _tree(bound)
    expected = _placed(reference, _tree(f"SELECT {mark}").selects[0], _tree(f"SELECT {one}").selects[0])
    assert got == expected
    assert got.sql(dialect=DIALECT, comments=False) == expected.sql(dialect=DIALECT, comments=False)
    assert _comments(got) == _comments(reference)


@settings(max_examples=400, deadline=None)
@given(values())
def test_each_value_reads_back_as_itself(value: tuple[bytes, int, Any]) -> None:
    """DuckDB (the engine) reads the literal as the value; a text value is one string token of it."""
    sent, oid, meant = value
    text = literal(sent, oid, False, 1)
    got = _read_back(text)
    if isinstance(meant, float):
        assert float(got) == meant
    elif isinstance(meant, Decimal):
        assert Decimal(text.strip("()")) == meant and float(got) == pytest.approx(float(meant))
    else:
        assert got == meant
    if oid in (TEXT, UNKNOWN):
        tokens = [(t.token_type.name, t.text) for t in DuckDB().tokenize(f"SELECT {text}")]
        assert tokens[1:] == [("STRING", meant)]


@pytest.mark.parametrize("dialect", [DuckDB, Postgres])
def test_a_backslash_is_no_escape_so_a_value_ending_in_one_stays_quoted(dialect: Any) -> None:
    """sqlglot's DuckDB and PostgreSQL tokenizers (and DuckDB itself) read ``\\`` inside '…' as itself:
    a value ending in a backslash cannot end its quotes early and turn the next value into SQL."""
    bound = substitute("SELECT $1, $2", [b"a\\", b", 1) --"], [TEXT, TEXT], [])
    assert bound == "SELECT 'a\\', ', 1) --'"
    tokens = [(t.token_type.name, t.text) for t in dialect().tokenize(bound)]
    assert tokens == [("SELECT", "SELECT"), ("STRING", "a\\"), ("COMMA", ","), ("STRING", ", 1) --")]
    assert duckdb.sql(bound).fetchall() == [("a\\", ", 1) --")]


def test_the_measured_attack_is_one_operand() -> None:
    bound = substitute("SELECT * FROM people WHERE income > 0 -$1 AND age < 0", [b"-10"], [INT2], [])
    assert bound == "SELECT * FROM people WHERE income > 0 - (-10) AND age < 0"
    where = _tree(bound).args["where"].this
    assert isinstance(where, exp.And)  # the AND survives: no comment swallowed it


@pytest.mark.parametrize(
    ("sent", "oid", "binary", "expected"),
    [
        (b"42", INT8, False, "42"),
        (b" -7 ", 23, False, "(-7)"),
        (struct.pack("!h", -3), INT2, True, "(-3)"),
        (struct.pack("!q", 2**62), INT8, True, str(2**62)),
        (b"1e-05", FLOAT8, False, "1e-05"),
        (b"-2.5", FLOAT8, False, "(-2.5)"),
        (b"-0", FLOAT8, False, "(-0.0)"),
        (struct.pack("!d", 0.1), FLOAT8, True, "0.1"),
        (struct.pack("!f", 0.5), 700, True, "0.5"),
        (b"1.50", NUMERIC, False, "1.50"),
        (b"1e5", NUMERIC, False, "1E+5"),
        (b"-3", NUMERIC, False, "(-3)"),
        (struct.pack("!hhHh2H", 2, 0, 0x4000, 3, 12, 3400), NUMERIC, True, "(-12.340)"),  # -12.340
        (struct.pack("!hhHhH", 1, 1, 0, 0, 5), NUMERIC, True, "50000"),  # 5 × 10000¹
        (b"t", BOOL, False, "TRUE"),
        (b" OFF", BOOL, False, "FALSE"),
        (b"\x01", BOOL, True, "TRUE"),
        (b"2024-02-29", DATE, False, "CAST('2024-02-29' AS DATE)"),
        (struct.pack("!i", 1), DATE, True, "CAST('2000-01-02' AS DATE)"),
        (b"2024-02-29T10:00:00.25", TIMESTAMP, False, "CAST('2024-02-29 10:00:00.250000' AS TIMESTAMP)"),
        (b"2024-02-29 10:00:00+05:00", TIMESTAMP, False, "CAST('2024-02-29 10:00:00' AS TIMESTAMP)"),
        (struct.pack("!q", 1_000_000), TIMESTAMP, True, "CAST('2000-01-01 00:00:01' AS TIMESTAMP)"),
        (b"it's", TEXT, False, "'it''s'"),
        (b"30", UNKNOWN, False, "'30'"),  # unknown: text, as PostgreSQL types an untyped literal
        ("é".encode(), 1043, True, "'é'"),
        (b"2024-01-01 00:00:00+00", 1184, False, "'2024-01-01 00:00:00+00'"),  # another type: text
        (None, INT8, False, "NULL"),
    ],
)
def test_each_type_is_written_as_its_literal(
    sent: bytes | None, oid: int, binary: bool, expected: str
) -> None:
    assert literal(sent, oid, binary, 1) == expected


@pytest.mark.parametrize(
    ("text", "sent", "oids", "formats", "code", "words"),
    [
        ("SELECT $1", [b"maybe"], [BOOL], [], "invalid_parameter", "not a boolean"),
        ("SELECT $1", [b"o"], [BOOL], [], "invalid_parameter", "not a boolean"),
        ("SELECT $1", [b"70000"], [INT2], [], "invalid_parameter", "out of range for type smallint"),
        ("SELECT $1", [b"1_000"], [INT8], [], "invalid_parameter", "not a whole number"),
        ("SELECT $1", [b"\xd9\xa1"], [INT8], [], "invalid_parameter", "not a whole number"),  # Arabic 1
        ("SELECT $1", [b"1e400"], [FLOAT8], [], "invalid_parameter", "not a finite number"),
        ("SELECT $1", [b"NaN"], [FLOAT8], [], "invalid_parameter", "not a finite number"),
        ("SELECT $1", [b"Infinity"], [NUMERIC], [], "invalid_parameter", "not a finite number"),
        ("SELECT $1", [b"a\x00b"], [TEXT], [], "invalid_parameter", "NUL"),
        ("SELECT $1", [b"\xff"], [TEXT], [], "invalid_parameter", "UTF-8"),
        ("SELECT $1", [b"31/12/2024"], [DATE], [], "invalid_parameter", "YYYY-MM-DD"),
        ("SELECT $1", [b"infinity"], [TIMESTAMP], [], "invalid_parameter", "timestamp"),
        ("SELECT $1", [b"\x01\x02"], [INT8], [1], "invalid_parameter", "8 bytes"),
        ("SELECT $1", [b"\x02"], [BOOL], [1], "invalid_parameter", "one byte"),
        ("SELECT $1", [b"\x00\x00\x00\x00\xc0\x00\x00\x00"], [NUMERIC], [1], "invalid_parameter", "finite"),
        ("SELECT $1", [b"\x00" * 16], [2950], [1], "unsupported_query", "OID 2950"),  # a binary uuid
        ("SELECT $0", [], [], [], "parse_error", "no parameter $0"),
        ("SELECT $99999", [], [], [], "parse_error", "no parameter $99999"),
        ("SELECT $1, $2", [b"1"], [], [], "protocol_violation", "requires 2"),
        ("SELECT 1", [b"1"], [], [], "protocol_violation", "requires 0"),
        ("SELECT $1", [b"1"], [], [0, 0], "protocol_violation", "2 parameter formats"),
    ],
)  # fmt: skip
def test_a_value_its_type_cannot_hold_is_refused_clearly(
    text: str, sent: list[bytes | None], oids: list[int], formats: list[int], code: str, words: str
) -> None:
    with pytest.raises(PrivdbError) as refused:
        substitute(text, sent, oids, formats)
    assert refused.value.code == code and words in refused.value.message
    if code == "invalid_parameter" and "$" in text:
        assert refused.value.message.startswith("parameter $1: ")


def test_parameters_are_counted_as_postgresql_counts_them() -> None:
    assert count_parameters("SELECT '$1', \"$2\", $$ $3 $$ -- $4\n /* $5 */ FROM t") == 0
    assert count_parameters("SELECT $2, $1 FROM t WHERE x$3 = 1") == 2  # x$3 is a name
    assert substitute("SELECT $1", [b"1", b"2"], [TEXT, INT8], []) == "SELECT '1'"  # declared: 2 values
    # set apart where the literal would touch a token; `$1e` is no parameter to the tokenizer (it reads
    # the number 1e): it stays, and the parse refuses it as PostgreSQL refuses its trailing junk
    assert substitute("SELECT 1$1, $1.5, $1e, $1::INT", [b"5"], [INT8], []) == "SELECT 1 5, 5 .5, $1e, 5::INT"


def test_a_literal_that_would_change_the_structure_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last check holds even if a literal were wrong (here one made to open a comment)."""
    monkeypatch.setattr(params, "literal", lambda *args: "1 --")
    with pytest.raises(PrivdbError, match="change the statement's structure") as refused:
        substitute("SELECT a FROM t WHERE x > $1 AND y < 0", [b"1"], [INT8], [])
    assert refused.value.code == "invalid_parameter"


# ---- over a real server: the measured attack, and parameters the checks read as literals

pytestmark_server = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgparams") / "db", budget=10.0)
    yield served
    served.server.stop()


@pytestmark_server
def test_the_minus_parameter_attack_answers_as_the_literal_written_by_hand(served: PgServed) -> None:
    """``0 -$1`` with ``$1 = -10`` is 0 − (−10): on the public table no region has code > 10 (the attack's
    comment left ``code > 0``: all 3); the DP count of people with income > 10 and age < 0 is near 0
    (the attack's was the whole table, ~2,000) and is the stored answer of the query written by hand."""
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        public = "SELECT count(*) FROM regions WHERE code > 0 -%s AND code < 100"
        assert conn.execute(public, (-10,), prepare=True).fetchone() == (0,)
        assert conn.execute(public.replace("%s", "(-10)")).fetchone() == (0,)
        assert conn.execute(public, (10,), prepare=True).fetchone() == (3,)
        query = "DP-SELECT 1 COUNT(*) AS n FROM people WHERE income > 0 -%s AND age < 0"
        bound = conn.execute(query, (-10,), prepare=True).fetchone()
        by_hand = conn.execute(query.replace("%s", " (-10)")).fetchone()  # the same query: its stored answer
    assert bound is not None and abs(bound[0]) < 100
    assert by_hand == bound


@pytestmark_server
def test_negative_parameters_are_literals_to_privdbs_checks(served: PgServed) -> None:
    """A parenthesised negative number is still a literal where privdb asks for one (an IN list)."""
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        row = conn.execute(
            "DP-SELECT 1 COUNT(*) AS n FROM people WHERE age IN (%s, %s) AND sex = %s", (-10, 30, "F")
        ).fetchone()
        names = conn.execute(
            "SELECT name FROM regions WHERE code IN (%s, %s) AND name <> %s ORDER BY code", (-1, 2, "x\\")
        ).fetchall()
    assert row is not None and len(row) == 3
    assert names == [("south",)]
