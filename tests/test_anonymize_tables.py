"""``read_table`` / ``write_table``: the fast Arrow paths give what DuckDB's ``.df()`` and pandas'
``to_csv`` gave before (the release format of DESIGN.md), on Adult and on awkward tables."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from privdb.anonymize import anonymize
from privdb.anonymize.tables import read_table, staged_table, write_table

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv"
AWKWARD = {
    "gaps.csv": "a,d,t,x,b,s\n1,2024-01-02,2024-01-02 10:00:00,1.5,true,x\n,2024-02-03,,,false,\n"
    '3,,2024-01-02 11:00:00,2.0,,"y,z"\n',
    "quotes.csv": 'a,x,s\n1,1e20,x\n2,,\n3,0.1,"say ""hi"""\n',
    "floats.csv": "a,x,s\n1,1e20,x\n2,,\n3,0.1,hi there\n4,2.0,\n",
    "semicolon.csv": "a;s\n1;x\n2;y, z\n",
    "alone.csv": "s\nx\n\ny\n",
}


def _reference(path: Path) -> pd.DataFrame:
    con = duckdb.connect()
    try:
        return con.execute("SELECT * FROM read_csv_auto(?)", [str(path)]).df()
    finally:
        con.close()


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_read_and_write_match_duckdb_and_pandas(tmp_path: Path, name: str) -> None:
    source = tmp_path / name
    source.write_text(AWKWARD[name])
    frame, delimiter = read_table(source)
    pd.testing.assert_frame_equal(frame, _reference(source))  # same dtypes, values, gaps
    write_table(frame, tmp_path / "out.csv", delimiter)
    assert (tmp_path / "out.csv").read_text() == frame.to_csv(index=False, sep=delimiter)


def test_a_release_is_written_byte_for_byte_as_pandas_writes_it(tmp_path: Path) -> None:
    frame, delimiter = read_table(ADULT)
    pd.testing.assert_frame_equal(frame, _reference(ADULT))
    released = anonymize(frame, ["age", "sex", "education", "native-country"], k=10).table
    write_table(released, tmp_path / "r.csv", delimiter)
    assert (tmp_path / "r.csv").read_text() == released.to_csv(index=False, sep=delimiter)


def test_parquet_reads_like_duckdb(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1, 2, None], "s": ["x", None, "z"], "f": [0.5, 1.0, 2.5]})
    frame.to_parquet(tmp_path / "t.parquet")
    got, delimiter = read_table(tmp_path / "t.parquet")
    con = duckdb.connect()
    want = con.execute("SELECT * FROM read_parquet(?)", [str(tmp_path / "t.parquet")]).df()
    con.close()
    assert delimiter == ","
    pd.testing.assert_frame_equal(got, want)


def test_a_staged_release_appears_only_when_committed(tmp_path: Path) -> None:
    """``staged_table`` writes in the background; the file appears (the bytes ``write_table`` writes) only at
    ``commit()``; leaving without it (the report refused, Ctrl-C) leaves neither the file nor a hidden one."""
    frame = pd.DataFrame({"age": [f"[{i}-{i + 9}]" for i in range(0, 5000, 10)], "n": range(500)})
    write_table(frame, tmp_path / "plain.csv", ";")
    with staged_table(frame, tmp_path / "out.csv", ";") as commit:
        assert not (tmp_path / "out.csv").exists()
        commit()
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()
    with pytest.raises(RuntimeError, match="refused"), staged_table(frame, tmp_path / "never.csv", ";"):
        raise RuntimeError("the report refused the release")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "plain.csv"]


def test_a_failed_background_write_is_raised_at_commit(tmp_path: Path) -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise ValueError("cannot be spelt")

    frame = pd.DataFrame({"a": [Unprintable(), Unprintable()], "b": [1, 2]})
    target = tmp_path / "out.csv"
    with pytest.raises(ValueError, match="cannot be spelt"), staged_table(frame, target) as commit:
        commit()
    assert list(tmp_path.iterdir()) == []


def test_a_frame_made_in_the_writers_thread_is_written_and_its_failure_raised(tmp_path: Path) -> None:
    """``staged_table`` given a function makes the frame in the writer's thread: the same bytes, and a
    failure of the function raised by ``commit()`` with nothing left behind."""
    frame = pd.DataFrame({"zip": ["130**", "148**"], "n": [1, 2]})
    made_in: list[str] = []

    def make() -> pd.DataFrame:
        made_in.append(threading.current_thread().name)
        return frame

    with staged_table(make, tmp_path / "out.csv", ";") as commit:
        commit()
    write_table(frame, tmp_path / "plain.csv", ";")
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()
    assert made_in == ["privdb-write-release"]

    def refuse() -> pd.DataFrame:
        raise ValueError("no rows to shuffle")

    refused = pytest.raises(ValueError, match="no rows to shuffle")
    with refused, staged_table(refuse, tmp_path / "x.csv") as commit:
        commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "plain.csv"]
