"""``privdb anonymize --algorithm mondrian`` writes byte for byte the release it wrote before issue 30's
speed-up, on Adult and on the first 100,000 rows of the harder 1,000,000-row Adult variant of
``bench.anonymize`` (the speed-up changed how partitions are computed and written, never which); and, since
issue 40's, the release and the report it wrote before on the first 100,000 rows of the hardest variant
(``replicate_adult(..., hardest=True)``; digests computed with commit 674344b the same way).

The expected SHA-256 digests were computed with the code before the change (commit d9a2f28)::

    git archive d9a2f28 src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src python -m privdb anonymize TABLE.csv --qi QI --sensitive salary-class \\
        --k 10 --seed 1 -o out.csv --report r.json        # (and the other options of each case below)
    sha256sum out.csv

where TABLE.csv is ``data/adult/adult.csv`` or the harder variant (``harder_100k`` below, made by
``bench.harness.data.replicate_adult`` and pinned by its own digest) written with ``to_csv(sep=";",
index=False)``; the partitions' digests (ids and sizes, as int64 bytes) likewise with ``partition``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bench.harness.data import load_adult, replicate_adult
from numpy.typing import NDArray
from typer.testing import CliRunner

from privdb.anonymize import anonymize
from privdb.anonymize.mondrian import partition
from privdb.anonymize.mondrian_codes import encode
from privdb.anonymize.release import GeneralizedColumn, _categorical, publishable
from privdb.cli import app

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = "age,workclass,education,marital-status,occupation,race,sex,native-country"
SEED = 20261123  # bench.anonymize.spec.SEED

# SHA-256 of the first 100,000 rows of bench.harness.data.replicate_adult(adult, 1_000_000, SEED, harder=True)
# written as above: the table the harder variant's digests were computed on
HARDER_100K = "602691d3086719155ced8cb6da17fa2c0a583fb64c8c052af4d747c46af5b694"

# likewise for replicate_adult(adult, 1_000_000, SEED, hardest=True)
HARDEST_100K = "f07c69f4aa4d3e1c3c2e4fede340f1f464881c62206d9e11cfe7fe2f536c42ff"

runner = CliRunner()


def _first_rows(tmp_path_factory: pytest.TempPathFactory, name: str, digest: str, **variant: bool) -> Path:
    """A variant's first 100,000 rows as CSV, checked against its digest first: a change to the generator
    fails here, by name, rather than as a changed release."""
    path = tmp_path_factory.mktemp(name) / f"{name}100k.csv"
    replicate_adult(load_adult(), 1_000_000, SEED, **variant).iloc[:100_000].to_csv(
        path, sep=";", index=False
    )
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, (
        f"bench.harness.data.replicate_adult({variant}) no longer writes the table the {name} variant's "
        "digests were computed on; restore it (the digests pin the release, not the generator)"
    )
    return path


@pytest.fixture(scope="module")
def harder_100k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The harder variant's first 100,000 rows as CSV (checked against HARDER_100K)."""
    return _first_rows(tmp_path_factory, "harder", HARDER_100K, harder=True)


@pytest.fixture(scope="module")
def hardest_100k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hardest variant's first 100,000 rows as CSV (checked against HARDEST_100K)."""
    return _first_rows(tmp_path_factory, "hardest", HARDEST_100K, hardest=True)


def _release_digest(table: Path, out: Path, *options: str) -> str:
    args = ["anonymize", str(table), "--qi", QI, "--sensitive", "salary-class", *options]
    result = runner.invoke(app, [*args, "-o", str(out), "--report", str(out.with_suffix(".json"))])
    assert result.exit_code == 0, result.output
    return hashlib.sha256(out.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("options", "digest"),
    [
        (("--k", "10", "--seed", "1"), "45f89ba5f1134f465fd1fbc13a784e9f38a1ad16d581725c0ad79e2c6a735054"),
        (
            ("--k", "5", "--l", "2", "--seed", "2"),
            "3c84c9b70dee0497d4e045866fa587a72ee5cc9f019d0981d22180fc51877827",
        ),
        (
            ("--k", "5", "--t", "0.2", "--seed", "3"),
            "fb3629453688def47e9dd52fbc6f193a9742b7ddfafea5988efef95206ba0e0e",
        ),
        (
            ("--k", "10", "--hierarchies", str(ADULT / "hierarchies"), "--fix-labels", "--seed", "4"),
            "9c24dfa28e1ade16a5ef700581b19f971f619ad4640b5ce7427c044c7d988ec5",
        ),
    ],
    ids=["k10", "k5-l2", "k5-t0.2", "k10-hierarchies"],
)
def test_adult_release_is_byte_identical_to_before(
    tmp_path: Path, options: tuple[str, ...], digest: str
) -> None:
    assert _release_digest(ADULT / "adult.csv", tmp_path / "out.csv", *options) == digest


def test_harder_variant_release_is_byte_identical_to_before(harder_100k: Path, tmp_path: Path) -> None:
    got = _release_digest(harder_100k, tmp_path / "out.csv", "--k", "10", "--seed", "1")
    assert got == "0eb75263a25af1e58137d07dc0c104dd6bb74201663f43b5dfca940f60473762"


@pytest.mark.parametrize(
    ("options", "release", "report"),
    [
        (
            ("--k", "10", "--seed", "1"),
            "5a98760999f703c9524b5c679eb7703e1d510984788bf41489fb52666d2e3d56",
            "f3279e07eafc592ebeac0c9ded8d4c0baa8cd44c6c37a70085dc865dc9292453",
        ),
        (
            ("--k", "5", "--l", "2", "--seed", "2"),
            "3c99eb659f77b43e6b01200a59a4d02f11374a7bb5f6b8236f787b3254b1d3bf",
            None,
        ),
    ],
    ids=["k10", "k5-l2"],
)
def test_hardest_variant_release_and_report_are_as_before(
    hardest_100k: Path, tmp_path: Path, options: tuple[str, ...], release: str, report: str | None
) -> None:
    """The report's digest: its JSON without ``seconds``, keys sorted (``json.dumps(sort_keys=True)``)."""
    assert _release_digest(hardest_100k, tmp_path / "out.csv", *options) == release
    if report is not None:
        body = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
        body.pop("seconds")
        assert hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest() == report


@pytest.mark.parametrize(
    ("strict", "digest", "count"),
    [(True, "076ed6d01776f6e2", 6328), (False, "03deb74c02d697c1", 7314)],
    ids=["strict", "relaxed"],
)
def test_harder_variant_partitions_are_the_same_as_before(
    harder_100k: Path, strict: bool, digest: str, count: int
) -> None:
    table = pd.read_csv(harder_100k, sep=";")
    dims = [encode(table[name], None) for name in QI.split(",")]
    ids, sizes = partition(dims, 10, strict=strict)
    got = hashlib.sha256(ids.astype(np.int64).tobytes() + sizes.astype(np.int64).tobytes()).hexdigest()
    assert (got[:16], len(sizes)) == (digest, count)


class _Tied:
    """A random source whose words tie often (two values), to reach publishable's stable fallback."""

    def words(self, n: int) -> NDArray[np.uint64]:
        return np.arange(n, dtype=np.uint64)[::-1] % np.uint64(2)


def test_publishable_keeps_input_order_between_tied_keys() -> None:
    n = 5001  # large enough that NumPy's fast sort is not stable
    order = publishable(pd.DataFrame({"i": range(n)}), ["i"], _Tied())["i"].tolist()
    assert order == [*range(0, n, 2), *range(1, n, 2)]


@pytest.mark.parametrize("algorithm", ["mondrian", "lattice"])
def test_coded_table_holds_the_values_of_the_table_as_astype_category(algorithm: str) -> None:
    adult = pd.read_csv(ADULT / "adult.csv", sep=";")
    qi = QI.split(",")
    options = (
        {"hierarchies": str(ADULT / "hierarchies"), "fix_labels": True} if algorithm == "lattice" else {}
    )
    result = anonymize(adult, qi, k=10, algorithm=algorithm, **options)  # type: ignore[arg-type]
    coded = result.coded_table()
    assert algorithm == "mondrian" or result.n_suppressed > 0  # the lattice release has '*' rows
    for name in qi:
        pd.testing.assert_series_equal(coded[name], result.table[name].astype("category"))
    rest = [c for c in adult.columns if c not in qi]
    pd.testing.assert_frame_equal(coded[rest], result.table[rest])


def test_coded_labels_sort_by_code_point_as_astype_category_does() -> None:
    """Labels beyond ASCII (accents, capitals, a character outside the BMP, '|' sets) sort as Python sorts
    text, with '*' for suppressed records: the categories ``astype("category")`` makes."""
    texts = ["zürich", "Zug", "é|e", "e|é", "\U0001f600", "Ø", "a-b", "10-20", "9-10"]
    labels = np.array(texts, dtype=object)
    rng = np.random.default_rng(3)
    codes = rng.integers(0, len(labels) - 1, 400).astype(np.int64)  # the last label is never used
    suppressed = rng.random(400) < 0.1
    got = _categorical(GeneralizedColumn(codes, labels), suppressed)
    assert got is not None
    want = pd.Series(np.where(suppressed, "*", labels[codes]), dtype=object).astype("category")
    pd.testing.assert_series_equal(pd.Series(got), want)


def test_small_integers_are_encoded_as_sorting_would() -> None:
    ages = pd.Series(np.random.default_rng(5).integers(-40, 90, 5000), name="age")
    got = encode(ages, None)
    values, inverse = np.unique(ages.to_numpy(dtype=np.float64), return_inverse=True)
    assert got.kind == "num" and got.codes.dtype == np.int32
    assert np.array_equal(got.values, values) and np.array_equal(got.codes, inverse)
    assert list(got.texts) == list(encode(ages.astype(np.float64), None).texts)
