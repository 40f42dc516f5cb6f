"""Rebuild tests/zetasql_corpus.py's cases from ZetaSQL's compliance tests (issue 39).

    python tests/zetasql_build.py /path/to/zetasql.git     (a clone or a bare mirror of google/zetasql)

Reads the four ``.test`` files with ``git show HEAD:…`` (nothing of theirs is stored), renames their tables
and columns to privdb's, asks each query at ε ≤ 1000, runs it on DuckDB and SQLite (tests/zetasql_check.py)
and writes the cases with the outcome privdb gives, after the corpus module's own header (its text up to
``CASES``, kept as written). Run it after a change that moves a case; tests/test_zetasql_corpus.py then pins
the outcomes and the figures.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

FILES = ("anonymization", "anonymization_errors", "differential_privacy", "differential_privacy_errors")
RENAME = (
    ("TestTableWithUid2", "units_shared"),
    ("TestTableWithUid3", "units_skewed"),
    ("TestTableWithUid4", "units_null"),
    ("TestTableWithoutUid", "rows_only"),
    ("TestTableWithUid", "units"),
    ("int64_val", "ival"),
    ("double_val", "dval"),
)
START = "CASES: list[Case] = ["


def _split(text: str) -> list[str]:
    """``text`` split at its top-level commas (not inside brackets or quotes)."""
    out, depth, cur, quote = [], 0, "", ""
    for ch in text:
        if quote:
            cur += ch
            quote = "" if ch == quote else quote
            continue
        if ch in "\"'":
            quote, cur = ch, cur + ch
            continue
        depth += (ch in "{[(<") - (ch in "}])>")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [x.strip() for x in out]


def _proto(text: str) -> dict[str, Any] | None:
    """A text-format protocol buffer (ZetaSQL's PROTO reports: ``value { int_value: 8 … }``) as a dict of
    its fields, or None when ``text`` is not one."""
    stack: list[dict[str, Any]] = [{}]
    name, scalar = "", False
    for token in re.findall(r"[{}]|[A-Za-z_]\w*\s*:|[^\s{}]+", text):
        if token == "{" and name and not scalar:
            stack[-1][name] = {}
            stack.append(stack[-1][name])
            name = ""
        elif token == "}" and len(stack) > 1 and not name:
            stack.pop()
        elif token.endswith(":") and not name:
            name, scalar = token[:-1].strip(), True
        elif scalar:
            stack[-1][name] = _value(token)
            name, scalar = "", False
        elif re.fullmatch(r"[A-Za-z_]\w*", token) and not name:
            name = token
        else:
            return None
    return stack[0] if len(stack) == 1 and stack[0] and not name else None


def _value(text: str) -> Any:
    if text.startswith("{") and text.endswith("}") and (proto := _proto(text[1:-1])) is not None:
        return proto
    if text == "NULL":
        return None
    if text in ("true", "false"):
        return text == "true"
    if text[:1] in "\"'":
        return text[1:-1]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    try:
        return json.loads(text)  # a JSON report
    except ValueError:
        return ["raw", text]


def _expected(text: str) -> tuple[tuple[tuple[Any, ...], ...] | None, str]:
    """ZetaSQL's expected rows (None: none to compare) and its refusal, in short."""
    text = text.strip().split("\n\nNOTE")[0].strip()
    if text.startswith("ERROR:"):
        return None, re.sub(r"^generic::\w+:\s*", "", text.splitlines()[0][6:].strip())[:70]
    match = re.match(r"ARRAY<STRUCT<(.*?)>>\s*\[(.*)\]\s*$", text, re.S)
    if not match:
        return None, ""
    body = re.sub(r"^(unknown|known) order:", "", match.group(2).strip()).strip()
    rows = []
    for row in _split(body):
        if not (row.startswith("{") and row.endswith("}")):
            return None, ""
        values = tuple(_value(v) for v in _split(row[1:-1]))
        if any(isinstance(v, list) for v in values):
            return None, ""
        rows.append(values)
    return tuple(rows), ""


def _rewrite(query: str) -> str:
    for theirs, ours in RENAME:
        query = re.sub(rf"\b{theirs}\b", ours, query)

    def cap(m: re.Match[str]) -> str:
        try:
            return m.group(1) + ("1000" if float(m.group(2)) > 1000 else m.group(2))
        except ValueError:
            return m.group(0)

    return re.sub(r"(epsilon\s*=\s*)([0-9.eE+]+)", cap, query, flags=re.I)


def read_cases(git_dir: str) -> list[dict[str, Any]]:
    cases = []
    for name in FILES:
        path = f"HEAD:zetasql/compliance/testdata/{name}.test"
        text = subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", path], check=True, capture_output=True, text=True
        ).stdout
        for block in text.split("\n==\n"):
            lines = block.strip("\n").splitlines()
            if any(line.startswith("[prepare_database") for line in lines) or "--" not in lines:
                continue
            cut = lines.index("--")
            names = [m.group(1) for line in lines[:cut] if (m := re.match(r"\[name=(.*)\]", line))]
            given = [m.group(1) for line in lines[:cut] if (m := re.match(r"\[parameters=(.*)\]", line))]
            query = [line for line in lines[:cut] if not line.startswith(("[", "#"))]
            if names:
                rows, error = _expected("\n".join(lines[cut + 1 :]).split("\n--\n")[0])
                cases.append(
                    {
                        "name": names[0],
                        "query": _rewrite("\n".join(query).strip()),
                        "rows": rows,
                        "error": error,
                        "parameters": _parameters(given[0]) if given else (),
                    }
                )
    return cases


def _parameters(text: str) -> tuple[tuple[str, Any], ...]:
    """ZetaSQL's ``[parameters=1 as lower,3 as upper]``: (name, value) pairs."""
    pairs = (re.fullmatch(r"\s*(.+?)\s+as\s+(\w+)\s*", part) for part in _split(text))
    return tuple((m.group(2), _value(m.group(1))) for m in pairs if m is not None)


def _why(query: str, name: str, detail: str, status: str, error: str) -> str:
    """The key of DIFFERENCES a case that is not as ZetaSQL's has (the first that fits)."""
    if status == "match" or (status == "refused" and error):
        return ""
    if error:
        return (
            "approx_bounds"
            if "Bin count" in error
            else "default_delta"
            if "delta" in name
            else "answered_error"
        )
    rules = (
        (status == "differs" and "bounding_report" in detail, "bounding_report"),
        (status == "differs" and _wider_than_owner(query), "owner_bounds"),
        (bool(re.search(r"report", query, re.I)), "report"),
        ("no released row" in detail and "None)" in detail and "PUBLIC_GROUPS" in query, "empty_group"),
        ("UNION" in query, "union"),
        ("min_privacy_units_per_group" in query, "min_units"),
        ("group_selection_epsilon" in query, "options"),
        (bool(re.search("QUANTILES|APPROX_QUANTILE", query, re.I)), "quantiles"),
        ("not public" in detail, "plain_over_private"),
        ("cannot be read" in detail, "nested_cte"),
        ("@" in query, "params"),
        (bool(re.search(r"(ABS|IF)\s*\(", query)), "expression"),
    )
    return next((key for fits, key in rules if fits), "other")


def _wider_than_owner(query: str) -> bool:
    """Bounds in the query past the owner's [-10, 10] (tests/zetasql_corpus.py's metadata)."""
    pairs = re.findall(r"(?:CLAMPED BETWEEN|=>\s*\()\s*(-?[\d.]+)\s*(?:AND|,)\s*(-?[\d.]+)", query)
    return any(abs(float(x)) > 10 for pair in pairs for x in pair)


def _needle(detail: str) -> str:
    code, _, message = detail.partition(": ")
    return f"{code}: {re.split(r' [(]line [0-9]', message)[0][:40]}"


def _query_lines(query: str) -> list[str]:
    if "\n" not in query and len(query) < 90:
        return [f"        {query!r},"]
    out = ["        ("]
    lines = query.split("\n")
    for k, line in enumerate(lines):
        piece = line + ("\n" if k < len(lines) - 1 else "")
        while len(piece) > 90:
            cut = piece.rfind(" ", 0, 90)
            cut = cut if cut > 10 else 90
            out.append(f"            {piece[:cut]!r}")
            piece = piece[cut:]
        out.append(f"            {piece!r}")
    return [*out, "        ),"]


def write(cases: list[dict[str, Any]], out: Path, header: str) -> None:
    lines = [header + START]
    for c in cases:
        lines += ["    Case(", f"        {c['name']!r},", *_query_lines(c["query"])]
        lines += [f"        rows={c['rows']!r},"] if c["rows"] is not None else []
        lines += [f"        parameters={c['parameters']!r},"] if c.get("parameters") else []
        fields = (("error", c["error"]), ("outcome", c.get("outcome", "refused")))
        fields += (("why", c.get("why")), ("needle", c.get("needle")), ("sqlite_refused", c.get("sqlite")))
        lines += [f"        {key}={value!r}," for key, value in fields if value]
        lines.append("    ),")
    out.write_text("\n".join([*lines, "]"]) + "\n")


def main(git_dir: str) -> None:
    import importlib

    import zetasql_check
    import zetasql_corpus
    from privdb.database import Database

    out = HERE / "zetasql_corpus.py"
    header = out.read_text().split(START)[0]
    cases = read_cases(git_dir)
    write(cases, out, header)  # the cases first, to run them
    runs = {}
    for engine in ("duckdb", "sqlite"):
        path = Path(tempfile.mkdtemp())
        db = Database(path / "db")
        if engine == "duckdb":
            zetasql_check.load_duckdb(db)
        else:
            zetasql_check.load_sqlite(db, path / "zeta.db")
        db.grant("a", epsilon=1e15, delta=0.999)
        corpus = importlib.reload(zetasql_corpus)
        runs[engine] = [zetasql_check.outcome(db, case) for case in corpus.CASES]
        db.close()
    for c, (status, detail), (lite, lite_detail) in zip(cases, runs["duckdb"], runs["sqlite"], strict=True):
        c["outcome"], c["why"] = status, _why(c["query"], c["name"], detail, status, c["error"])
        c["needle"] = _needle(detail) if status == "refused" else ""
        c["sqlite"] = lite == "refused" and "SQLite engine cannot run" in lite_detail != detail
        if status == "internal" or (lite != status and not c["sqlite"]):
            print("look at", c["name"], status, lite, detail[:120], lite_detail[:120])
    write(cases, out, header)


if __name__ == "__main__":
    main(sys.argv[1])
