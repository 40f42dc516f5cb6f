"""Reading a saved synthesiser's folder (privdb.publish.synthmodel), checked before anything is sampled.

A model file is input like any other: it may have been edited, truncated or written by another program. Each
part is refused, with one line naming the field and the column or clique it is in, unless it is one a
release could have written (docs/publish.md, "Saved models"):

- ``model.json`` is JSON nested at most :data:`MAX_DEPTH` levels (looked at before it is parsed, so a deep
  file is a refusal, not Python's ``RecursionError``), with finite numbers only (no ``NaN``, ``Infinity``
  nor ``1e400``), of a known format and version, with exactly the known fields;
- a column has a known type; labels that are distinct scalars, at least one, with ``None`` as the last
  one exactly when it has a NULL cell; bounds that are both absent or both finite, in order, with a finite
  width, on a number column only (and within ±2⁵³ for an integer column, whose values are drawn as 64-bit
  integers); labels of the kind its values are drawn from (a range name per bin of a binned number,
  integers for an integer column, numbers for a float one); groups that split its cells exactly;
- a clique names known columns, each once, and every column is in some clique;
- ``arrays.npz`` holds exactly one real-valued table per clique whose shape — read from its header before
  its data, so a small file cannot expand into a huge one — is its columns' cell counts, at most
  :data:`MAX_CELLS` cells in all; its entries are finite, non-negative and sum to 1 (within
  :data:`SUM_TOLERANCE`).
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.lib.format as npy
from numpy.typing import NDArray

from privdb.catalog.metadata import COLUMN_TYPES
from privdb.errors import InvalidParameter
from privdb.publish.histogram import Domain

__all__ = ["FORMAT", "MAX_CELLS", "MAX_DEPTH", "SUM_TOLERANCE", "VERSION", "ModelParts", "read_model"]

FORMAT, VERSION = "privdb-synthetic-model", 1
MAX_DEPTH = 8  # a release writes 5 levels (the model, its columns, a column, its groups, a group)
MAX_CELLS = 2**25  # every clique's table together (268 MB of float64; AIM caps its models at 80 MB)
SUM_TOLERANCE = 1e-6
_INT_RANGE = 2.0**53  # an integer column's bounds: its drawn values are exact as float64 and fit int64
_TOP = {"format", "version", "method", "epsilon", "delta", "rho", "table", "ledger", "created", "columns",
        "cliques", "measured", "bounds"}  # fmt: skip
_COLUMN = {"name", "type", "labels", "lower", "upper", "null", "groups"}
_METHODS = ("mst", "aim", "mwem")


@dataclass(frozen=True)
class ModelParts:
    """What a checked folder holds: each column's domain, type and groups, the cliques and their tables,
    and the release's own fields (``info``)."""

    domains: list[Domain]
    types: list[str]
    groups: list[list[list[int]]]
    cliques: list[tuple[str, ...]]
    tables: list[NDArray[np.float64]]
    info: dict[str, Any]


def _refuse(what: str) -> InvalidParameter:
    return InvalidParameter(f"saved model: {what}; refusing the file")


def read_model(folder: Path) -> ModelParts:
    """The parts of the model saved in ``folder``, every one checked (module doc)."""
    if not (folder / "model.json").is_file() or not (folder / "arrays.npz").is_file():
        raise InvalidParameter(f"{str(folder)!r} is not a saved model: it needs model.json and arrays.npz")
    body = _read_json(folder / "model.json")
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise InvalidParameter(f"{str(folder)!r}: not a {FORMAT} version {VERSION} file")
    if body.get("version") != VERSION or isinstance(body.get("version"), bool):
        raise InvalidParameter(
            f"{str(folder)!r}: not a {FORMAT} version {VERSION} file (version {_shown(body.get('version'))}"
            ": sample it with the privdb that saved it)"
        )
    _fields(body, _TOP, "the model")
    info = _info(body)
    columns = _list(body["columns"], "columns", at_least=1)
    domains: list[Domain] = []
    types: list[str] = []
    groups: list[list[list[int]]] = []
    for k, spec in enumerate(columns):
        domain, kind, cells = _column(spec, k)
        if domain.column in {d.column for d in domains}:
            raise _refuse(f"column {domain.column!r} is listed twice")
        domains.append(domain)
        types.append(kind)
        groups.append(cells)
    names = [d.column for d in domains]
    cliques = _cliques(body["cliques"], names)
    _measured(body["measured"], names)
    _bounds(body["bounds"], names)
    shapes = [tuple(len(groups[names.index(a)]) for a in clique) for clique in cliques]
    tables = _read_tables(folder / "arrays.npz", cliques, shapes)
    return ModelParts(domains, types, groups, cliques, tables, info)


def _read_json(path: Path) -> Any:
    """``model.json`` parsed, after its depth was checked; non-finite numbers refused."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidParameter(f"saved model {str(path)!r} cannot be read: {type(err).__name__}") from None
    depth = _depth(text)
    if depth > MAX_DEPTH:
        raise _refuse(f"model.json is nested {depth} levels deep, more than the {MAX_DEPTH} a model has")

    def finite(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):
            raise _refuse(f"model.json holds the number {number[:20]}, beyond a float's range")
        return value

    def constant(name: str) -> float:
        raise _refuse(f"model.json holds {name}: every number of a model is finite")

    try:
        return json.loads(text, parse_float=finite, parse_constant=constant)
    except ValueError as err:  # JSONDecodeError, or an integer of more digits than Python converts
        raise _refuse(f"model.json is not JSON ({str(err).splitlines()[0][:80]})") from None


def _depth(text: str) -> int:
    """How deeply ``text``'s arrays and objects nest (brackets inside strings not counted); stops counting
    once past :data:`MAX_DEPTH`."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def _fields(spec: Any, known: set[str], what: str) -> None:
    if not isinstance(spec, dict):
        raise _refuse(f"{what} must be an object")
    unknown, missing = sorted(set(spec) - known), sorted(known - set(spec))
    if unknown:
        raise _refuse(f"unknown field {unknown[0]!r} in {what}")
    if missing:
        raise _refuse(f"field {missing[0]!r} is missing from {what}")


def _list(value: Any, what: str, *, at_least: int = 0) -> list[Any]:
    if not isinstance(value, list):
        raise _refuse(f"{what} must be a list")
    if len(value) < at_least:
        raise _refuse(f"{what} must hold at least {at_least}")
    return value


def _number(value: Any) -> bool:
    """A JSON number (a bool is not one), finite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _info(body: dict[str, Any]) -> dict[str, Any]:
    """The release's own fields, checked."""
    for name in ("epsilon", "delta", "rho"):
        if not _number(body[name]) or body[name] < 0 or (name == "delta" and body[name] >= 1):
            raise _refuse(f"{name} must be a number ≥ 0" + (" and below 1" if name == "delta" else ""))
    if body["method"] not in _METHODS:
        raise _refuse("method must be mst, aim or mwem")
    if not isinstance(body["table"], str) or not body["table"]:
        raise _refuse("table must be a name")
    ledger = body["ledger"]
    if ledger is not None:
        _fields(ledger, {"id", "time"}, "ledger")
        if not isinstance(ledger["id"], int) or isinstance(ledger["id"], bool) or not _number(ledger["time"]):
            raise _refuse("ledger must be {id: an integer, time: a number}, or null")
    if body["created"] is not None and not _number(body["created"]):
        raise _refuse("created must be a time (a number) or null")
    return {k: body[k] for k in _TOP - {"columns", "cliques", "format", "version"}}


def _column(spec: Any, k: int) -> tuple[Domain, str, list[list[int]]]:
    """Column ``k``'s domain, type and groups (module doc)."""
    named = isinstance(spec, dict) and isinstance(spec.get("name"), str) and spec["name"]
    where = f"column {spec['name']!r}" if named else f"column {k + 1}"
    _fields(spec, _COLUMN, where)
    name = spec["name"]
    if not named:
        raise _refuse(f"{where}'s name must be a text")
    kind = spec["type"]
    if kind not in COLUMN_TYPES:
        raise _refuse(f"{where}: type {kind!r} is not one of {', '.join(COLUMN_TYPES)}")
    null = spec["null"]
    if not isinstance(null, bool):
        raise _refuse(f"{where}: null must be true or false")
    labels = _list(spec["labels"], f"{where}: labels")
    real = labels[:-1] if null and labels else labels
    if null and (not labels or labels[-1] is not None):
        raise _refuse(f"{where}: with null true, the last label must be null (the NULL cell)")
    if not real:
        raise _refuse(f"{where}: labels name no cell")
    for label in real:
        if not (isinstance(label, str | bool) or _number(label)):
            raise _refuse(f"{where}: label {_shown(label)} is not a text, a number or a truth value")
    if len(set(real)) != len(real):
        raise _refuse(f"{where}: a label is listed twice (labels must be distinct cells)")
    lower, upper = _column_bounds(spec["lower"], spec["upper"], kind, where)
    binned = lower is not None and isinstance(real[0], str)
    if binned and not all(isinstance(x, str) for x in real):
        raise _refuse(f"{where}: a binned number's labels must all be its bins' names")
    if not binned and kind in ("int", "float"):
        integral = kind == "int"
        if not all(_number(x) and (not integral or float(x).is_integer()) for x in real):
            kind_of = (
                "an int column's labels must be integers"
                if integral
                else "a float column's labels must be numbers"
            )
            raise _refuse(f"{where}: {kind_of} (its values), or its bins' names with bounds")
        if integral and any(abs(x) > _INT_RANGE for x in real):
            raise _refuse(f"{where}: an int column's labels must lie within ±2^53")
    cells = _groups(spec["groups"], len(labels), where)
    return Domain(name, tuple(labels), lower, upper, null), kind, cells


def _column_bounds(lower: Any, upper: Any, kind: str, where: str) -> tuple[float | None, float | None]:
    if lower is None and upper is None:
        return None, None
    if not (_number(lower) and _number(upper)):
        raise _refuse(f"{where}: lower and upper must both be finite numbers, or both null")
    if kind not in ("int", "float", "bool"):
        raise _refuse(f"{where}: a {kind} column has no bounds (lower and upper are for numbers)")
    if lower > upper:
        raise _refuse(f"{where}: its bounds are reversed (lower {lower:g} > upper {upper:g})")
    if not math.isfinite(float(upper) - float(lower)):
        raise _refuse(f"{where}: its bounds are too far apart for a float (upper − lower overflows)")
    if kind == "int" and max(abs(lower), abs(upper)) > _INT_RANGE:
        raise _refuse(f"{where}: an int column's bounds must lie within ±2^53")
    return float(lower), float(upper)


def _groups(value: Any, cells: int, where: str) -> list[list[int]]:
    groups = _list(value, f"{where}: groups", at_least=1)
    for group in groups:
        members = _list(group, f"{where}: each group")
        if not members or not all(isinstance(c, int) and not isinstance(c, bool) for c in members):
            raise _refuse(f"{where}: each group must be a non-empty list of cell numbers")
    if sorted(c for g in groups for c in g) != list(range(cells)):
        raise _refuse(f"{where}: groups must split its {cells} cells exactly (each cell in one group)")
    return [list(g) for g in groups]


def _cliques(value: Any, names: Sequence[str]) -> list[tuple[str, ...]]:
    cliques = []
    for spec in _list(value, "cliques", at_least=1):
        clique = _list(spec, "each clique", at_least=1)
        shown = [a if isinstance(a, str) and len(a) <= 40 else _shown(a) for a in clique[:6]]
        if not all(isinstance(a, str) and a in names for a in clique):
            raise _refuse(f"clique [{', '.join(shown)}] names an unknown column")
        if len(set(clique)) != len(clique):
            raise _refuse(f"clique [{', '.join(shown)}] names a column twice")
        cliques.append(tuple(clique))
    missing = [n for n in names if not any(n in c for c in cliques)]
    if missing:
        raise _refuse(f"column {missing[0]!r} is in no clique (every column must be in some clique)")
    return cliques


def _measured(value: Any, names: Sequence[str]) -> None:
    for spec in _list(value, "measured"):
        if not all(isinstance(a, str) and a in names for a in _list(spec, "each measured clique")):
            raise _refuse("measured names an unknown column")


def _bounds(value: Any, names: Sequence[str]) -> None:
    if not isinstance(value, dict):
        raise _refuse("bounds must be an object {column: [lower, upper]}")
    for column, pair in value.items():
        if column not in names:
            raise _refuse(f"bounds name {column!r}, which is not a column")
        if not (isinstance(pair, list) and len(pair) == 2 and all(_number(x) for x in pair)):
            raise _refuse(f"bounds of column {column!r} must be [lower, upper], finite numbers")
        if pair[0] > pair[1]:
            raise _refuse(f"bounds of column {column!r} are reversed ({pair[0]:g} > {pair[1]:g})")


def _read_tables(
    path: Path, cliques: Sequence[tuple[str, ...]], shapes: Sequence[tuple[int, ...]]
) -> list[NDArray[np.float64]]:
    """Each clique's table, its header checked before its data is read."""
    if sum(math.prod(s) for s in shapes) > MAX_CELLS:
        raise _refuse(f"its cliques' tables would hold more than {MAX_CELLS:,} cells")
    wanted = {f"clique_{i}.npy" for i in range(len(cliques))}
    tables = []
    try:
        with zipfile.ZipFile(path) as archive:
            if set(archive.namelist()) != wanted:
                raise _refuse("arrays.npz must hold clique_0 … one table per clique, and no other")
            for i, (clique, shape) in enumerate(zip(cliques, shapes, strict=True)):
                tables.append(_table(archive, i, clique, shape))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:  # a refusal above passes through
        raise _refuse(f"arrays.npz cannot be read ({type(err).__name__})") from None
    return tables


def _table(
    archive: zipfile.ZipFile, i: int, clique: tuple[str, ...], shape: tuple[int, ...]
) -> NDArray[np.float64]:
    where = f"the table of clique [{', '.join(clique)}]"
    with archive.open(f"clique_{i}.npy") as header:
        version = npy.read_magic(header)
        read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        found, _, dtype = read(header)
    if tuple(found) != shape:
        raise _refuse(f"{where} has shape {tuple(found)}, not its columns' cell counts {shape}")
    if dtype.kind not in "fiu" or dtype.hasobject:
        raise _refuse(f"{where} holds {dtype} values, not numbers")
    with archive.open(f"clique_{i}.npy") as data:
        table = np.asarray(npy.read_array(data, allow_pickle=False), dtype=np.float64)
    if not np.all(np.isfinite(table)):
        raise _refuse(f"{where} holds a value that is not a finite number (NaN or infinite)")
    if np.any(table < 0):
        raise _refuse(f"{where} holds a negative probability")
    with np.errstate(over="ignore"):
        total = float(table.sum())
    if not abs(total - 1.0) <= SUM_TOLERANCE:
        raise _refuse(f"{where}'s probabilities sum to {total:.6g}, not 1")
    return table


def _shown(value: Any) -> str:
    """A value of the file as a message shows it: short, one line."""
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"
