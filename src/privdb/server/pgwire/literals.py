"""One bound parameter's value as one SQL literal, typed by the parameter's OID (privdb.server.pgwire.params
writes it into the statement).

    int2, int4, int8, oid       a whole number in the type's range: 42, (-10)
    float4, float8              a finite number, Python's shortest repr: 0.1, 1e-05, (-2.5)
    numeric                     a finite decimal, as written: 1.50, 1E+5, (-3)
    bool                        TRUE or FALSE (PostgreSQL's spellings: t, yes, on, 1, …)
    date, timestamp             CAST('2024-01-31' AS DATE), CAST('2024-01-31 10:00:00' AS TIMESTAMP)
    text, varchar, unknown (0)  a quoted string, quotes doubled: 'it''s'
    any other type              a quoted string (the engine converts it where it is used)
    NULL                        NULL

Each is one operand wherever it stands: a negative number is parenthesised, so no neighbouring operator
can join its sign (``0 -$1`` is ``0 - (-10)``, never the comment ``0 --10``), and a date is a CAST, since
in ``DATE '…'::INT`` the ``::`` would bind the string alone. A string is quoted with its quotes doubled and
nothing else: in privdb's tokenizer (sqlglot's DuckDB dialect), in DuckDB and in PostgreSQL
(standard_conforming_strings) a backslash inside ``'…'`` is an ordinary character, so a value ending in one
cannot end the quote. A value the type cannot hold (``maybe`` for a bool, ``1e400`` for a float8, text with
a NUL, bytes that are not UTF-8) is refused, as PostgreSQL refuses it at Bind.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import TypeVar

from privdb.errors import InvalidParameter, UnsupportedQuery

__all__ = ["BOOL", "DATE", "TEXTS", "TIMESTAMP", "literal"]

BOOL, NUMERIC, DATE, TIMESTAMP = 16, 1700, 1082, 1114
# OID: (name, struct format, lowest, highest)
_INTS = {
    21: ("smallint", "!h", -(2**15), 2**15 - 1),
    23: ("integer", "!i", -(2**31), 2**31 - 1),
    20: ("bigint", "!q", -(2**63), 2**63 - 1),
    26: ("oid", "!I", 0, 2**32 - 1),
}
_FLOATS = {700: ("real", "!f"), 701: ("double precision", "!d")}
TEXTS = {0, 18, 19, 25, 705, 1042, 1043}  # unknown, char, name, text, unknown, bpchar, varchar
_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_EPOCH = dt.datetime(2000, 1, 1)  # PostgreSQL's binary dates and timestamps count from it
T = TypeVar("T")


def literal(value: bytes | None, oid: int, binary: bool, n: int) -> str:
    """The literal of parameter ``$n``: ``value`` in text (``binary`` False) or binary format."""
    if value is None:
        return "NULL"
    try:
        return _binary(value, oid) if binary else _text(_decoded(value), oid)
    except (InvalidParameter, UnsupportedQuery) as err:
        raise type(err)(f"parameter ${n}: {err.message}") from None


def _decoded(value: bytes) -> str:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidParameter("the value is not valid UTF-8 text") from None
    if "\x00" in text:
        raise InvalidParameter("text may not hold the character NUL (0x00), as in PostgreSQL")
    return text


def _text(text: str, oid: int) -> str:
    """The literal of a value sent in text format."""
    trimmed = text.strip()
    if oid in _INTS:
        if not _WHOLE.fullmatch(trimmed):
            raise InvalidParameter(f"{text!r} is not a whole number ({_INTS[oid][0]})")
        return _whole(int(trimmed), oid)
    if oid in _FLOATS:
        if not _DECIMAL.fullmatch(trimmed) or not math.isfinite(float(trimmed)):
            raise InvalidParameter(f"{text!r} is not a finite number ({_FLOATS[oid][0]})")
        return _float(float(trimmed), oid)
    if oid == NUMERIC:
        if not _DECIMAL.fullmatch(trimmed):
            raise InvalidParameter(f"{text!r} is not a finite number (numeric)")
        return _decimal(Decimal(trimmed))
    if oid == BOOL:
        return "TRUE" if _truth(trimmed.lower(), text) else "FALSE"
    if oid == DATE:
        if not _ISO_DATE.fullmatch(trimmed):
            raise InvalidParameter(f"{text!r} is not a date; send dates as YYYY-MM-DD")
        return _date(_read(lambda: dt.date.fromisoformat(trimmed), text, "date"))
    if oid == TIMESTAMP:
        stamp = _read(lambda: dt.datetime.fromisoformat(trimmed), text, "timestamp")
        return _timestamp(stamp.replace(tzinfo=None))  # PostgreSQL ignores a zone given to a timestamp
    return _string(text)


def _binary(value: bytes, oid: int) -> str:
    """The literal of a value sent in binary format (PostgreSQL's send/recv formats)."""
    if oid in _INTS:
        return _whole(_unpack(_INTS[oid][1], value)[0], oid)
    if oid in _FLOATS:
        return _float(_unpack(_FLOATS[oid][1], value)[0], oid)
    if oid == NUMERIC:
        return _decimal(_numeric(value))
    if oid == BOOL:
        if value not in (b"\x00", b"\x01"):
            raise InvalidParameter("a binary bool is one byte, 0 or 1")
        return "TRUE" if value == b"\x01" else "FALSE"
    if oid == DATE:
        (days,) = _unpack("!i", value)
        return _date(_read(lambda: _EPOCH.date() + dt.timedelta(days=days), f"{days} days", "date"))
    if oid == TIMESTAMP:
        (micros,) = _unpack("!q", value)
        moment = _read(lambda: _EPOCH + dt.timedelta(microseconds=micros), f"{micros} µs", "timestamp")
        return _timestamp(moment)
    if oid in TEXTS:
        return _string(_decoded(value))
    raise UnsupportedQuery(f"a binary value of type OID {oid} is not supported; send it as text")


def _unpack(fmt: str, value: bytes) -> tuple[int | float, ...]:
    try:
        return struct.unpack(fmt, value)
    except struct.error:
        raise InvalidParameter(f"a binary value of {struct.calcsize(fmt)} bytes was expected") from None


def _whole(number: int | float, oid: int) -> str:
    name, _, lowest, highest = _INTS[oid]
    whole = int(number)
    if not lowest <= whole <= highest:
        raise InvalidParameter(f"{whole} is out of range for type {name}")
    return _signed(str(whole), whole < 0)


def _float(number: int | float, oid: int) -> str:
    value = float(number)
    if not math.isfinite(value):
        raise InvalidParameter(f"{value!r} is not a finite number ({_FLOATS[oid][0]})")
    return _signed(repr(value), math.copysign(1.0, value) < 0)


def _decimal(number: Decimal) -> str:
    if not number.is_finite():
        raise InvalidParameter(f"{number} is not a finite number (numeric)")
    return _signed(str(number), number.is_signed())


def _signed(text: str, negative: bool) -> str:
    """A number's literal: parenthesised when negative, so it is one operand wherever it stands."""
    return f"({text})" if negative else text


def _truth(word: str, text: str) -> bool:
    """PostgreSQL's boolean input: one of its words or a prefix of one, but not the ambiguous ``o``."""
    if word and word != "o":
        if any(t.startswith(word) for t in _TRUE):
            return True
        if any(f.startswith(word) for f in _FALSE):
            return False
    raise InvalidParameter(f"{text!r} is not a boolean; send true or false")


def _read(read: Callable[[], T], text: str, kind: str) -> T:
    try:
        return read()
    except (ValueError, OverflowError):
        raise InvalidParameter(f"{text!r} is not a {kind} privdb can read (ISO 8601)") from None


def _date(day: dt.date) -> str:
    return f"CAST('{day.isoformat()}' AS DATE)"  # not DATE '…': its cast would bind a `::` after it


def _timestamp(stamp: dt.datetime) -> str:
    return f"CAST('{stamp.isoformat(sep=' ')}' AS TIMESTAMP)"


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _numeric(value: bytes) -> Decimal:
    """PostgreSQL's binary numeric: digit count, weight (of the first base-10000 digit), sign, display
    scale, then the digits; built exactly (no rounding context), with ``scale`` digits after the point."""
    malformed = InvalidParameter("a binary numeric must be finite and well formed")
    if len(value) < 8:
        raise malformed
    count, weight, sign, scale = struct.unpack("!hhHh", value[:8])
    if sign not in (0x0000, 0x4000) or count < 0 or scale < 0 or len(value) != 8 + 2 * count:
        raise malformed
    groups = struct.unpack(f"!{count}H", value[8:])
    if any(g > 9999 for g in groups):
        raise malformed
    digits, exponent = "".join(f"{g:04d}" for g in groups), 4 * (weight - count + 1)
    if exponent > -scale:  # whole groups beyond the last digit sent: zeros
        digits, exponent = digits + "0" * (exponent + scale), -scale
    elif exponent < -scale:  # digits past the display scale: PostgreSQL sends only zeros there
        cut = -scale - exponent
        if digits[-cut:].strip("0"):
            raise malformed
        digits, exponent = digits[:-cut], -scale
    return Decimal((1 if sign == 0x4000 else 0, tuple(int(c) for c in digits or "0"), exponent))
