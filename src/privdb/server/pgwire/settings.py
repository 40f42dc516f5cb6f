"""``SET``, ``SHOW``, ``RESET`` and the parameters a PostgreSQL server reports at start-up, per session.

Settings are remembered and shown back (clients set ``extra_float_digits``, ``application_name``,
``DateStyle``…) but change nothing in privdb's answers, except that only UTF-8 is spoken: another
``client_encoding`` is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.server.pgwire.catalog import SERVER_VERSION
from privdb.server.pgwire.encoding import TEXT, Answer
from privdb.server.pgwire.errors import UnknownSetting
from privdb.sql.public.wrapped import Session

__all__ = ["REPORTED", "Settings"]

MAX_SETTINGS = 256  # names a session may set
MAX_VALUE = 4096  # characters of a setting's name or value

# the parameters PostgreSQL reports with ParameterStatus at start-up and whenever they change
REPORTED = (
    "server_version", "server_encoding", "client_encoding", "application_name", "DateStyle",
    "IntervalStyle", "TimeZone", "integer_datetimes", "standard_conforming_strings", "is_superuser",
    "session_authorization",
)  # fmt: skip
_DEFAULTS = {
    "server_version": SERVER_VERSION,
    "server_encoding": "UTF8",
    "client_encoding": "UTF8",
    "application_name": "",
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "TimeZone": "UTC",
    "integer_datetimes": "on",
    "standard_conforming_strings": "on",
    "search_path": '"$user", public',
    "transaction_isolation": "read committed",
    "transaction_read_only": "on",
    "default_transaction_read_only": "on",
    "max_identifier_length": "63",
    "extra_float_digits": "1",
    "lc_collate": "C.UTF-8",
    "lc_ctype": "C.UTF-8",
    "statement_timeout": "0",
    "default_table_access_method": "heap",
    "max_connections": "100",
    "server_version_num": "160000",
}
_ON = {"on", "true", "yes", "1"}


def _budget_value(what: str, upper: float) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.strip().lower() in ("", "off", "none"):
            return ""  # none for this session: plain aggregates of private tables are refused
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not 0 < number <= upper:  # NaN fails too
            raise InvalidParameter(
                f"privdb.{what} is a number in (0, {upper:g}] (the {what} each plain aggregate is answered "
                f"at), not {value[:40]!r}; e.g. SET privdb.{what} = {'0.1' if what == 'epsilon' else '1e-6'}"
            )
        return repr(number)

    return check


def _intervals_value(value: str) -> str:
    if value.strip().lower() not in {"auto", "", "on", "off", "true", "false", "yes", "no", "1", "0"}:
        raise InvalidParameter(f"privdb.intervals is on, off or auto, not {value[:40]!r}")
    return value.strip().lower() or "auto"


# privdb's own settings, checked when set (SET, the start-up packet's options)
_PRIVDB: dict[str, Callable[[str], str]] = {
    "privdb.epsilon": _budget_value("epsilon", 1000.0),
    "privdb.delta": _budget_value("delta", 1.0),
    "privdb.intervals": _intervals_value,
}


def _options(text: str) -> list[tuple[str, str]]:
    """The ``-c name=value`` (and ``--name=value``) settings of the start-up packet's ``options``, as
    libpq's ``options='-c privdb.epsilon=0.1'`` sends them (a backslash escapes a space)."""
    words = re.findall(r"(?:\\.|[^\s])+", text)
    pairs, i = [], 0
    while i < len(words):
        word = words[i].replace("\\ ", " ")
        if word == "-c" and i + 1 < len(words):
            word, i = "--" + words[i + 1].replace("\\ ", " "), i + 1
        if word.startswith("--") and "=" in word:
            name, value = word[2:].split("=", 1)
            pairs.append((name.replace("-", "_") if not name.startswith("privdb.") else name, value))
        i += 1
    return pairs


# SHOW's two-word spellings (SQL standard) of PostgreSQL's parameters: pgcli sends ``show time zone``
_SPELLED = {"time zone": "timezone", "transaction isolation level": "transaction_isolation"}
_SET = re.compile(
    r"^SET\s+(?:SESSION\s+|LOCAL\s+)?(?:(TIME\s+ZONE)\s+(.+)|(NAMES)\s+(.+)|([\w.]+)\s*(?:=|\s+TO\s+)\s*(.+))$",
    re.I | re.S,
)
_SHOW = re.compile(r"^SHOW\s+(.+)$", re.I | re.S)
_RESET = re.compile(r"^RESET\s+(.+)$", re.I | re.S)


class Settings:
    """One session's run-time parameters (names are case-insensitive, as in PostgreSQL)."""

    def __init__(
        self, user: str, owner: bool, startup: dict[str, str], granted: Session | None = None
    ) -> None:
        """``granted``: the analyst's grant's plain-SQL ε and δ, the session's defaults (RESET returns
        to them; ``SET privdb.epsilon = off`` turns plain aggregates off for the session)."""
        self._defaults = dict(_DEFAULTS)
        if granted is not None and granted.epsilon is not None:
            self._defaults["privdb.epsilon"] = repr(granted.epsilon)
            if granted.delta is not None:
                self._defaults["privdb.delta"] = repr(granted.delta)
        self._values = {k.lower(): (k, v) for k, v in self._defaults.items()}
        self.set("session_authorization", user)
        self.set("is_superuser", "on" if owner else "off")
        for name, value in startup.items():
            if name not in ("user", "database", "options", "replication"):
                self.set(name, value)
        for name, value in _options(startup.get("options", "")):
            self.set(name, value)

    def dp_session(self) -> Session:
        """What plain SQL around DP queries is answered with (privdb.sql.public.wrapped): the per-query ε
        and δ of ``privdb.epsilon``/``privdb.delta``, and ``privdb.intervals`` (on, off or auto)."""
        values = {k: v for k, (_, v) in self._values.items() if k.startswith("privdb.")}
        epsilon = values.get("privdb.epsilon")
        delta = values.get("privdb.delta")
        intervals = values.get("privdb.intervals", "auto").lower()
        return Session(
            epsilon=float(epsilon) if epsilon else None,
            delta=float(delta) if delta else None,
            intervals=None if intervals == "auto" else intervals in _ON,
        )

    def get(self, name: str) -> str:
        key = " ".join(name.lower().split())
        key = _SPELLED.get(key, key)
        if key not in self._values:
            raise UnknownSetting(f'unrecognized configuration parameter "{name}"')
        return self._values[key][1]

    def set(self, name: str, value: str) -> str | None:
        """Set a parameter; the canonical name when clients must be told of the change (ParameterStatus).
        A session keeps at most ``MAX_SETTINGS`` names, each value at most ``MAX_VALUE`` characters."""
        key = name.lower()
        if key in _PRIVDB:
            value = _PRIVDB[key](value)
        if len(value) > MAX_VALUE or len(name) > MAX_VALUE:
            raise InvalidParameter(f"a setting's name and value are at most {MAX_VALUE} characters each")
        if key not in self._values and len(self._values) >= MAX_SETTINGS:
            raise InvalidParameter(f"a session keeps at most {MAX_SETTINGS} settings; RESET some first")
        if key == "client_encoding" and value.replace("-", "").upper() not in ("UTF8", "UNICODE"):
            raise UnsupportedQuery(f"privdb speaks UTF-8 only; client_encoding {value!r} is not supported")
        canonical = self._values.get(key, (name, ""))[0]
        self._values[key] = (canonical, "UTF8" if key == "client_encoding" else value)
        return canonical if canonical in REPORTED else None

    def reported(self) -> list[tuple[str, str]]:
        return [(name, self.get(name)) for name in REPORTED]

    def command(self, text: str) -> tuple[Answer, str | None] | None:
        """Answer SET/SHOW/RESET (with the parameter to report, if any); None for any other statement."""
        if (found := _SET.match(text)) is not None:
            groups = found.groups()
            if groups[0]:
                name, value = "TimeZone", groups[1]
            elif groups[2]:
                name, value = "client_encoding", groups[3]
            else:
                name, value = groups[4], groups[5]
            return Answer("SET"), self.set(name, _unquote(value))
        if (found := _RESET.match(text)) is not None:
            name = found.group(1).strip()
            if name.upper() == "ALL":
                return Answer("RESET"), None
            default = next((v for k, v in self._defaults.items() if k.lower() == name.lower()), "")
            return Answer("RESET"), self.set(name, default)
        if (found := _SHOW.match(text)) is not None:
            name = found.group(1).strip().strip('"')
            if name.upper() == "ALL":
                rows = [(k, v, "") for k, v in sorted(self._values.values(), key=lambda kv: kv[0].lower())]
                return Answer("SHOW", ["name", "setting", "description"], [TEXT] * 3, rows), None
            key = " ".join(name.lower().split())
            column = _SPELLED.get(key, key)  # PostgreSQL names the column by the parameter (TimeZone)
            column = self._values[column][0] if column in self._values else column
            return Answer("SHOW", [column], [TEXT], [(self.get(name),)]), None
        return None


def _unquote(value: str) -> str:
    value = value.strip()
    if value.upper() == "DEFAULT":
        return ""
    parts = [p.strip() for p in value.split(",")]
    return ", ".join(p[1:-1].replace("''", "'") if len(p) >= 2 and p[0] == p[-1] == "'" else p for p in parts)
