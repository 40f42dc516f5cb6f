"""Issue 37: `privdb sample` refuses every inconsistent model with one line naming what is wrong and where.
A real model (the command line's `publish synthetic --save-model`, MWEM on the example people: a binned float
column, an integer column labelled by its values, categories with a NULL cell) is corrupted by hypothesis in
every way the issue lists — probabilities all zero, negative, NaN or infinite, not summing to 1, an entry of
1e308; bounds NaN, infinite, too far apart or reversed; labels missing, repeated or of the wrong kind;
groups, cliques and shapes that disagree; JSON nested deeper than the limit; unknown versions — and each is
refused with privdb's error; random replacements anywhere in the file are refused or sample finite rows,
never a traceback; the model as saved still samples."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from privdb.cli import app
from privdb.errors import InvalidParameter
from privdb.publish.modelfile import MAX_DEPTH
from privdb.publish.synthmodel import SeededSource, load_model
from publishfixtures import example_people

runner = CliRunner()
COLUMNS = ["sex", "education", "age", "income"]
CLIQUE = "clique [sex, education, age, income]"

Body = dict[str, Any]
Arrays = dict[str, np.ndarray]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model saved by the real command line."""
    root = tmp_path_factory.mktemp("model")
    db = example_people(root / "db")
    args = ["publish", "synthetic", "people", "--db", str(db), "--epsilon", "1", "--delta", "1e-9",
            "--rows", "50", "-o", str(root / "s.csv"), "--columns", ",".join(COLUMNS), "--method", "mwem",
            "--bins", "income=8", "--save-model", str(root / "m")]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.stderr
    return root / "m"


@pytest.fixture(scope="module")
def parts(saved: Path) -> tuple[Body, Arrays]:
    body = json.loads((saved / "model.json").read_text())
    with np.load(saved / "arrays.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    return body, arrays


def test_the_saved_model_is_what_the_corruptions_assume_and_it_samples(saved: Path) -> None:
    model = load_model(saved)
    assert model.cliques == [tuple(COLUMNS)] and model.info["method"] == "mwem"
    income, age = model.domains[3], model.domains[2]
    assert isinstance(income.labels[0], str) and income.lower is not None  # binned, with its bounds
    assert isinstance(age.labels[0], int) and age.null  # one cell a value, and a NULL cell
    rows = model.sample(2_000, SeededSource(5))
    assert len(rows) == 2_000 and np.isfinite(rows["income"].dropna().astype(float)).all()
    assert income.upper is not None and rows["income"].dropna().between(income.lower, income.upper).all()
    drawn = runner.invoke(app, ["sample", str(saved), "--rows", "20", "--seed", "1"])
    assert drawn.exit_code == 0 and len(drawn.stdout.strip().splitlines()) == 21


# a corruption: it changes the body and arrays given (copies) and may return model.json's text instead of
# the body's; the refusal's message must hold ``expected``
Corrupt = Callable[[Body, Arrays], str | None]


def _column(body: Body, name: str) -> dict[str, Any]:
    return next(c for c in body["columns"] if c["name"] == name)


def _tables(data: st.DataObject, shape: tuple[int, ...]) -> tuple[Corrupt, str]:
    at = tuple(data.draw(st.integers(0, n - 1), label="at") for n in shape)
    kind = data.draw(st.sampled_from(["zero", "negative", "nan", "inf", "huge", "scaled", "shape", "text",
                                      "complex", "missing", "extra"]), label="table")  # fmt: skip

    def put(value: float) -> Corrupt:
        def change(body: Body, arrays: Arrays) -> None:
            arrays["clique_0"] = arrays["clique_0"].copy()
            arrays["clique_0"][at] = value

        return change

    if kind == "zero":
        return (lambda b, a: a.update(clique_0=np.zeros(shape))), f"{CLIQUE}'s probabilities sum to 0, not 1"
    if kind == "negative":
        return put(
            -data.draw(st.floats(1e-300, 1e300), label="minus")
        ), f"{CLIQUE} holds a negative probability"
    if kind in ("nan", "inf"):
        value = {"nan": float("nan"), "inf": data.draw(st.sampled_from([np.inf, -np.inf]))}[kind]
        return put(value), f"{CLIQUE} holds a value that is not a finite number"
    if kind == "huge":
        return put(data.draw(st.floats(1.5, 1e308), label="huge")), f"{CLIQUE}'s probabilities sum to"
    if kind == "scaled":
        factor = data.draw(st.floats(0, 100).filter(lambda f: abs(f - 1) > 1e-4), label="factor")
        return (lambda b, a: a.update(clique_0=a["clique_0"] * factor)), f"{CLIQUE}'s probabilities sum to"
    if kind == "shape":
        axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
        return (lambda b, a: a.update(clique_0=np.delete(a["clique_0"], 0, axis=axis))), f"{CLIQUE} has shape"
    if kind in ("text", "complex"):
        cast = {"text": str, "complex": complex}[kind]
        return (lambda b, a: a.update(clique_0=a["clique_0"].astype(cast))), "values, not numbers"
    if kind == "missing":
        return (lambda b, a: a.clear()), "one table per clique"
    return (lambda b, a: a.update(clique_1=a["clique_0"])), "one table per clique"


def _bounds(data: st.DataObject) -> tuple[Corrupt, str]:
    which = data.draw(st.sampled_from(["lower", "upper"]), label="bound")
    kind = data.draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "reversed", "null", "text",
                                      "apart", "true"]), label="bounds")  # fmt: skip

    def literal(body: Body, arrays: Arrays) -> str:
        _column(body, "income")[which] = "@LITERAL@"
        return json.dumps(body).replace('"@LITERAL@"', kind)

    def set_to(value: Any) -> Corrupt:
        def change(body: Body, arrays: Arrays) -> None:
            _column(body, "income")[which] = value

        return change

    if kind in ("NaN", "Infinity", "-Infinity"):
        return literal, f"model.json holds {kind}"
    if kind == "1e400":
        return literal, "beyond a float's range"
    if kind == "reversed":
        gap = data.draw(st.floats(1e-6, 1e12), label="gap")

        def reverse(body: Body, arrays: Arrays) -> None:
            income = _column(body, "income")
            income["lower"], income["upper"] = income["upper"] + gap, income["lower"]

        return reverse, "column 'income': its bounds are reversed"
    if kind == "apart":

        def apart(body: Body, arrays: Arrays) -> None:
            _column(body, "income").update(lower=-1.5e308, upper=1.5e308)

        return apart, "column 'income': its bounds are too far apart"
    value = {"null": None, "text": "0", "true": True}[kind]
    return set_to(value), "column 'income': lower and upper must both be finite numbers, or both null"


def _labels(data: st.DataObject, body: Body) -> tuple[Corrupt, str]:
    name = data.draw(st.sampled_from(COLUMNS), label="column")
    size = len(_column(body, name)["labels"])
    at = data.draw(st.integers(0, size - 2), label="label")  # a real label, not the NULL one
    kind = data.draw(st.sampled_from(["drop", "twice", "nested", "no null", "empty", "fraction", "groups",
                                      "group member", "type", "null flag"]), label="labels")  # fmt: skip
    where = f"column {name!r}"

    def change(body: Body, arrays: Arrays) -> None:
        column = _column(body, name)
        labels = column["labels"]
        if kind == "drop":
            del labels[at]
        elif kind == "twice":
            labels[(at + 1) % (size - 1)] = labels[at]
        elif kind == "nested":
            labels[at] = [labels[at]]
        elif kind == "no null":
            labels[-1] = "NULL"
        elif kind == "empty":
            column["labels"] = []
        elif kind == "fraction":
            _column(body, "age")["labels"][at % 101] = at + 0.5
        elif kind == "groups":
            groups = column["groups"]
            groups[at % len(groups)].append(data.draw(st.sampled_from([0, size, -1])))
        elif kind == "group member":
            column["groups"][0][0] = data.draw(st.sampled_from(["0", 0.5, True, [0], None]))
        elif kind == "type":
            column["type"] = data.draw(st.sampled_from(["string", "", "INT", "number"]))
        else:
            column["null"] = data.draw(st.sampled_from([1, "yes", None]))

    expected = {
        "drop": f"{where}: groups must split its {size - 1} cells exactly",
        "twice": f"{where}: a label is listed twice",
        "nested": f"{where}: label [",
        "no null": f"{where}: with null true, the last label must be null",
        "empty": f"{where}: with null true, the last label must be null",
        "fraction": "column 'age': an int column's labels must be integers",
        "groups": f"{where}: groups must split its {size} cells exactly",
        "group member": f"{where}: each group must be a non-empty list of cell numbers",
        "type": f"{where}: type",
        "null flag": f"{where}: null must be true or false",
    }[kind]
    return change, expected


def _structure(data: st.DataObject) -> tuple[Corrupt, str]:
    kinds = ["unknown", "twice", "uncovered", "no cliques", "not a list", "column twice", "missing field",
             "extra field"]  # fmt: skip
    kind = data.draw(st.sampled_from(kinds), label="structure")

    def change(body: Body, arrays: Arrays) -> None:
        clique = body["cliques"][0]
        if kind == "unknown":
            clique[data.draw(st.integers(0, 3))] = data.draw(st.sampled_from(["nosuch", "", "Age"]))
        elif kind == "twice":
            clique[1] = clique[0]
        elif kind == "uncovered":
            clique.pop()
        elif kind == "no cliques":
            body["cliques"] = []
        elif kind == "not a list":
            body["cliques"] = "sex,education"
        elif kind == "column twice":
            body["columns"].append(copy.deepcopy(body["columns"][0]))
        elif kind == "missing field":
            del body["columns"][1][data.draw(st.sampled_from(["labels", "groups", "lower", "null"]))]
        else:
            body["columns"][1]["weights"] = []

    expected = {
        "unknown": "names an unknown column",
        "twice": "clique [sex, sex, age, income] names a column twice",
        "uncovered": "column 'income' is in no clique",
        "no cliques": "cliques must hold at least 1",
        "not a list": "cliques must be a list",
        "column twice": "column 'sex' is listed twice",
        "missing field": "is missing from column 'education'",
        "extra field": "unknown field 'weights' in column 'education'",
    }[kind]
    return change, expected


def _top(data: st.DataObject) -> tuple[Corrupt, str]:
    kind = data.draw(st.sampled_from(["version", "format", "epsilon", "delta", "ledger", "deep", "not json",
                                      "bytes"]), label="top")  # fmt: skip
    version = data.draw(st.one_of(st.integers().filter(lambda v: v != 1), st.text(max_size=5),
                                  st.just(1.5), st.just(True)), label="version")  # fmt: skip
    depth = data.draw(st.integers(MAX_DEPTH + 1, 200_000), label="depth")
    ledger, ledger_refusal = data.draw(st.sampled_from([
        ({"id": "1", "time": 0}, "ledger must be {id: an integer, time: a number}, or null"),
        ({"id": 1}, "field 'time' is missing from ledger"),
        ([1, 2], "ledger must be an object"),
        (7, "ledger must be an object"),
    ]), label="ledger")  # fmt: skip

    def change(body: Body, arrays: Arrays) -> str | None:
        if kind == "version":
            body["version"] = version
        elif kind == "format":
            body["format"] = "privdb-synthetic-model-2"
        elif kind == "epsilon":
            body["epsilon"] = data.draw(st.sampled_from([-1, "1", None, [1]]))
        elif kind == "delta":
            body["delta"] = data.draw(st.sampled_from([1, 1.5, -1e-9]))
        elif kind == "ledger":
            body["ledger"] = ledger
        elif kind == "deep":
            body["measured"] = "@DEEP@"
            return json.dumps(body).replace('"@DEEP@"', "[" * depth + "]" * depth)
        elif kind == "not json":
            return json.dumps(body)[: data.draw(st.integers(1, 200))]
        return None

    expected = {
        "version": "not a privdb-synthetic-model version 1 file",
        "format": "not a privdb-synthetic-model version 1 file",
        "epsilon": "epsilon must be a number ≥ 0",
        "delta": "delta must be a number ≥ 0 and below 1",
        "ledger": ledger_refusal,
        "deep": f"more than the {MAX_DEPTH} a model has",
        "not json": "model.json is not JSON",
        "bytes": "cannot be read",
    }[kind]
    if kind == "bytes":
        return (lambda b, a: b"\xff\xfe not utf-8 \x80".decode("latin-1")), expected
    return change, expected


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as where:
        yield Path(where)


def _write(folder: Path, body: Body, arrays: Arrays, text: str | None, raw: bool = False) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    if raw and text is not None:
        (folder / "model.json").write_bytes(text.encode("latin-1"))
    else:
        (folder / "model.json").write_text(json.dumps(body) if text is None else text, encoding="utf-8")
    np.savez_compressed(folder / "arrays.npz", **arrays)  # type: ignore[arg-type]


def _refused(folder: Path) -> str:
    """The command line's refusal: exit status 2, one line, no traceback; its message."""
    done = runner.invoke(app, ["sample", str(folder), "--rows", "5", "--seed", "0"])
    assert done.exit_code == 2, (done.exit_code, done.stdout[-300:], done.stderr[-500:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_corruption_is_refused_naming_what_and_where(
    data: st.DataObject, parts: tuple[Body, Arrays], workdir: Path
) -> None:
    body, arrays = copy.deepcopy(parts[0]), dict(parts[1])
    family = data.draw(st.sampled_from(["tables", "bounds", "labels", "structure", "top"]), label="family")
    corrupt, expected = {
        "tables": lambda: _tables(data, arrays["clique_0"].shape),
        "bounds": lambda: _bounds(data),
        "labels": lambda: _labels(data, body),
        "structure": lambda: _structure(data),
        "top": lambda: _top(data),
    }[family]()
    text = corrupt(body, arrays)
    _write(workdir / "m", body, arrays, text, raw=expected == "cannot be read")
    with pytest.raises(InvalidParameter) as refused:
        load_model(workdir / "m")
    assert expected in str(refused.value), (expected, str(refused.value))
    assert expected in _refused(workdir / "m")


_SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
_JSON = st.recursive(
    _SCALARS | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value (as the keys and indices leading to it)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_value_replaced_anywhere_is_refused_or_samples_finite_rows(
    data: st.DataObject, parts: tuple[Body, Arrays], workdir: Path
) -> None:
    body = copy.deepcopy(parts[0])
    places = [p for p in _paths(body) if p]
    where = data.draw(st.sampled_from(places), label="where")
    holder = body
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = data.draw(_JSON, label="value")
    _write(workdir / "m", body, dict(parts[1]), None)
    refusal = None
    try:
        model = load_model(workdir / "m")
    except InvalidParameter as err:
        refusal = str(err)
    if refusal is not None:
        assert "\n" not in refusal and refusal.startswith(("saved model: ", repr(str(workdir / "m"))))
        return
    rows = model.sample(200, SeededSource(3))  # what was not refused is a model: it samples
    for domain, kind in zip(model.domains, model.types, strict=True):
        if kind in ("int", "float"):
            values = rows[domain.column].dropna().astype(float)
            assert np.isfinite(values).all()
            if domain.lower is not None and domain.upper is not None and isinstance(domain.labels[0], str):
                assert values.between(domain.lower, domain.upper).all()
