"""The class-size histogram stays readable at large sizes: bins on the 1-2-5 sequence, every class and
record counted once."""

from __future__ import annotations

from privdb.anonymize.report_page import SizeBin, histogram_png, size_bins


def test_few_sizes_get_a_bar_each() -> None:
    assert size_bins({"10": 3, "12": 1}) == [SizeBin(10, 10, 3, 30), SizeBin(12, 12, 1, 12)]


def test_many_sizes_are_binned_one_two_five() -> None:
    sizes = {str(s): 2 for s in range(10, 60_000, 7)}  # 8,570 distinct sizes from 10 to 59,996
    bins = size_bins(sizes)
    assert [b.label for b in bins[:4]] == ["10–19", "20–49", "50–99", "100–199"]
    assert bins[-1].label == "50,000–99,999" and len(bins) == 12  # three per decade
    assert sum(b.classes for b in bins) == 2 * len(sizes)
    assert sum(b.records for b in bins) == sum(2 * int(s) for s in sizes)
    png = histogram_png({"class_sizes": sizes, "achieved": {"k": 10}})
    assert png[:4] == b"\x89PNG"
