"""Held-out rows for a release's utility report (issue 31): split before the release, test on unseen rows.

A classifier trained on a release and tested on real rows only measures the release honestly if those rows
took no part in it. So when a report with a target column is asked (``--target``, SafePub's
``--utility-target``), the rows are split **before** the release: each row is held out when a keyed hash of
its privacy unit's value (or, without one, of the row's whole content, as text) falls below ``share`` (0.3 by
default) of the hash's range, the key fixed by ``seed`` (0). The release is computed from the other rows only,
and the report tests on the held-out ones.

Why a hash and not a shuffle: whether a row is held out depends on that row (its unit) alone, so adding or
removing one unit changes the training rows by that unit's rows only. The release of the training rows is then
exactly as private as a release of the whole table (the same ε, δ and one charge): a stable selection
followed by the release, nothing held out is in it. A shuffle's positions move when a row comes or goes. All
rows of a unit fall on one side, so no person is both learnt from and tested on.

``generalise_like`` maps held-out raw values onto the labels a generalised release uses, and
``release_classifier`` scores a generalised release (``privdb anonymize``, ``privdb publish safepub``) with
privdb.publish.utility's classifier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import STAR, hierarchy_frame, text
from privdb.anonymize.cells import pair_covered, parse_intervals
from privdb.anonymize.hierarchy import Hierarchy
from privdb.errors import InvalidParameter
from privdb.publish.safepub import Published
from privdb.publish.safepub_search import PublicHierarchy
from privdb.publish.utility import fit_and_score, majority_share

__all__ = [
    "HOLDOUT",
    "SPLIT_SEED",
    "Split",
    "accuracy_line",
    "check_share",
    "generalise_like",
    "generalised_test",
    "held_out",
    "release_classifier",
    "safepub_classifier",
    "split_rows",
]

HOLDOUT = 0.3
SPLIT_SEED = 0
Bools = NDArray[np.bool_]
_PAIRS = 2_000_000  # (value, label) pairs checked per block by generalise_like


@dataclass(frozen=True)
class Split:
    """The rows a release is computed from (``train``) and the rows only its report sees (``test``)."""

    train: pd.DataFrame
    test: pd.DataFrame
    share: float
    seed: int
    unit: str | None

    def describe(self) -> dict[str, Any]:
        """The split as the JSON report states it."""
        return {"held_out_share": self.share, "seed": self.seed,
                "by": f"privacy unit {self.unit!r}" if self.unit else "row content",
                "release_rows": len(self.train), "held_out_rows": len(self.test),
                "note": "the release is computed from release_rows only; held_out_rows are never in it and "
                        "are the classifier's test rows"}  # fmt: skip

    def line(self) -> str:
        """One line for the command's output."""
        total = len(self.train) + len(self.test)
        return (
            f"the release covers {len(self.train):,} of {total:,} rows: {len(self.test):,} "
            f"(~{self.share:.0%}, seed {self.seed}) were held out for the utility report and are not in it"
        )


def check_share(share: float) -> float:
    """``--holdout``: the share of rows held out, in (0, 1)."""
    if not 0 < share < 1:
        raise InvalidParameter(f"--holdout must be a share in (0, 1), e.g. 0.3; got {share:g}")
    return share


def held_out(
    frame: pd.DataFrame, share: float = HOLDOUT, seed: int = SPLIT_SEED, unit: str | None = None
) -> Bools:
    """Per row: whether it is held out — its keyed hash (of its ``unit`` column, else of its whole content, as
    text) is below ``share`` of the hash's range (module doc)."""
    check_share(share)
    if not 0 <= seed < 10**14:
        raise InvalidParameter(f"the split's seed must be a whole number in [0, 1e14), got {seed}")
    keyed = frame[[unit]] if unit is not None else frame
    hashes = pd.util.hash_pandas_object(keyed.astype(str), index=False, hash_key=f"ho{seed:014d}")
    return np.asarray(hashes.to_numpy(dtype=np.uint64) < np.uint64(int(share * 2.0**64)), dtype=bool)


def split_rows(
    frame: pd.DataFrame, share: float = HOLDOUT, seed: int = SPLIT_SEED, unit: str | None = None
) -> Split:
    """The rows ``held_out`` keeps for the report, and the others for the release; each side in row order."""
    held = held_out(frame, share, seed, unit)
    return Split(
        frame.loc[~held].reset_index(drop=True), frame.loc[held].reset_index(drop=True), share, seed, unit
    )


def generalise_like(
    raw: pd.Series, released: pd.Series, hierarchy: pd.DataFrame | None = None
) -> NDArray[np.object_]:
    """Each raw value as the release would show it: among the release's labels of this column that cover it
    (privdb.anonymize's coverage: itself, ``*``, a hierarchy label, a ``lo-hi`` range, a ``|`` set, a mask),
    the one the release uses most; ``*`` when none but ``*`` does. A full-domain release has one such label
    per value (its level); a Mondrian release may have several overlapping ranges: the most used stands for
    them."""
    counts = released.astype(str).value_counts(sort=True)
    labels = np.asarray([label for label in counts.index if label != STAR], dtype=object)
    codes, values = pd.factorize(raw, use_na_sentinel=False)
    shown = text(np.asarray(values, dtype=object))
    chosen = np.full(len(shown), STAR, dtype=object)
    if len(labels):
        block = max(1, _PAIRS // len(labels))
        for start in range(0, len(shown), block):
            part = shown[start : start + block]
            ok = pair_covered(np.repeat(part, len(labels)), np.tile(labels, len(part)), hierarchy)
            ok = ok.reshape(len(part), len(labels))
            chosen[start : start + block] = np.where(ok.any(axis=1), labels[ok.argmax(axis=1)], STAR)
    return np.asarray(chosen[codes], dtype=object)


def _numbers(labels: pd.Series) -> NDArray[np.float64]:
    """A generalised number as a number: itself, or its ``lo-hi`` range's midpoint; NaN for ``*`` and the rest
    (the classifier takes NaN as missing)."""
    shown = labels.astype(str).to_numpy(dtype=object)
    plain = pd.to_numeric(pd.Series(shown, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    lo, hi = parse_intervals(shown)
    return np.where(np.isnan(plain), (lo + hi) / 2, plain)


def _features(
    frames: Sequence[pd.DataFrame], columns: Sequence[str], numeric: set[str]
) -> list[pd.DataFrame]:
    """The same encoding for every frame: numbers (or their ranges' midpoints) as numbers, every other label
    as a category code shared by all frames."""
    out: list[dict[str, Any]] = [{} for _ in frames]
    for c in columns:
        if c in numeric:
            for i, f in enumerate(frames):
                out[i][c] = _numbers(f[c])
            continue
        joined = pd.concat([f[c].astype(str) for f in frames], ignore_index=True)
        codes = pd.factorize(joined)[0].astype(np.float64)
        at = 0
        for i, f in enumerate(frames):
            out[i][c] = codes[at : at + len(f)]
            at += len(f)
    return [pd.DataFrame(o, columns=list(columns)) for o in out]


def release_classifier(
    release: pd.DataFrame,
    train: pd.DataFrame,
    test: pd.DataFrame,
    test_as_released: pd.DataFrame,
    target: str,
    seed: int = SPLIT_SEED,
) -> dict[str, Any]:
    """Accuracy on the held-out rows (generalised as the release is: ``test_as_released``) of gradient-boosted
    trees trained on the release's records, beside the same trained on the raw training rows and tested on the
    raw held-out rows, and the held-out rows' most frequent target value's share."""
    columns = [c for c in release.columns if c in train.columns]
    features = [c for c in columns if c != target]
    numeric = {c for c in features if pd.api.types.is_numeric_dtype(train[c]) and not
               pd.api.types.is_bool_dtype(train[c])}  # fmt: skip
    rel_x, gen_x = _features([release, test_as_released], features, numeric)
    raw_x, test_x = _features([train, test], features, numeric)
    rel_y, gen_y = release[target].astype(str).to_numpy(), test_as_released[target].astype(str).to_numpy()
    raw_y, test_y = train[target].astype(str).to_numpy(), test[target].astype(str).to_numpy()
    categorical = [c not in numeric for c in features]
    return {
        "target": target, "features": features,
        "train_release_test_held_out": fit_and_score(rel_x, rel_y, gen_x, gen_y, categorical, seed),
        "train_raw_test_held_out": fit_and_score(raw_x, raw_y, test_x, test_y, categorical, seed),
        "majority_class": majority_share(gen_y), "release_records": len(release), "test_rows": len(test),
        "model": "HistGradientBoostingClassifier (numbers or ranges' midpoints; labels as categories)",
        "note": "the held-out rows are generalised as the release is (the target too, if it is generalised); "
                "the raw classifier is tested on their raw values",
    }  # fmt: skip


def generalised_test(
    release: pd.DataFrame, test: pd.DataFrame, qi: Sequence[str], hierarchies: Mapping[str, Hierarchy] | None
) -> pd.DataFrame:
    """The held-out rows' released columns, each quasi-identifier mapped by ``generalise_like`` (with its
    hierarchy, when the release used a given one)."""
    out = test[[c for c in release.columns if c in test.columns]].copy()
    for c in qi:
        if c in out.columns:
            given = (hierarchies or {}).get(c)
            out[c] = generalise_like(
                test[c], release[c], None if given is None else hierarchy_frame(given, c)
            )
    return out


def _share(value: float | None) -> str:
    return "n/a (one class)" if value is None else f"{value:.3f}"


def accuracy_line(classifier: Mapping[str, Any], released: float | None, raw: float | None, what: str) -> str:
    """One line for the command's output: the accuracies on the held-out rows and the majority baseline."""
    return (
        f"predicting {classifier['target']!r} on {classifier['test_rows']:,} held-out rows: trained on the "
        f"{what} rows {_share(released)}, on the raw training rows {_share(raw)}, majority class "
        f"{_share(classifier['majority_class'])}"
    )


def safepub_classifier(
    published: Published, hierarchies: Mapping[str, Hierarchy], split: Split, target: str
) -> dict[str, Any]:
    """A SafePub release's classifier report: the held-out rows generalised exactly as the release is (the
    released node of the public hierarchies), the raw classifier on the quasi-identifiers' raw values."""
    qi = list(published.qi)
    values = {c: split.test[c].to_numpy(dtype=object) for c in qi}
    test = pd.DataFrame(
        {c: PublicHierarchy(hierarchies[c]).generalize(values[c], published.node[c]) for c in qi}
    )
    out = release_classifier(published.table, split.train[qi], split.test[qi], test, target, split.seed)
    return {**out, "held_out": split.describe()}
