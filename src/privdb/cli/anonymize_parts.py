"""The parts of ``privdb anonymize`` around the algorithm: reading the table (file or database), checking
the columns to write and the classifier's target, the report's classifier and the release's row order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privdb.errors import InvalidParameter

__all__ = [
    "MODEL_KEYS", "SEARCH_KEYS", "as_aggregated", "check_target", "check_written", "classifier",
    "database_table", "number", "pairs", "shuffler",
]  # fmt: skip

MODEL_KEYS = ("sampling_fraction", "k_map_derived_k")
SEARCH_KEYS = (
    "search", "nodes", "evaluations", "time_limit", "complete", "seed", "weights", "weighted_loss",
    "local_recoding",
)  # fmt: skip


def pairs(text: str | None, option: str) -> dict[str, str]:
    """``a=x,b=y`` as a dict, each column once."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise InvalidParameter(
                f"{option} takes COLUMN=VALUE pairs separated by commas, got {part.strip()!r}"
            )
        if name.strip() in out:
            raise InvalidParameter(f"{option} names {name.strip()!r} twice: give each column once")
        out[name.strip()] = value.strip()
    return out


def number(text: str, option: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidParameter(f"{option} takes numbers, e.g. age=2, got {text!r}") from None


def as_aggregated(frame: Any, released: Any, aggregates: dict[str, str]) -> Any:
    """The original with its microaggregated columns as released: the report measures generalisation,
    and a class mean is no generalisation of its records (its coverage and loss are not measured)."""
    if not aggregates:
        return frame
    out = frame.copy()
    for c in aggregates:
        out[c] = released[c]
    return out


def check_target(target: str | None, written: list[str], holdout: float) -> None:
    """--target must be a written column (the classifier learns it from the release); --holdout a share."""
    if target is None and 0 < holdout < 1:
        return  # nothing more to check: privdb.publish (and SciPy's statistics) stays unloaded
    from privdb.publish.evaluation import check_share
    from privdb.publish.utility import require_classifier

    check_share(holdout)
    if target is None:
        return
    if target not in written:
        raise InvalidParameter(
            f"--target {target!r} is not written: give a quasi-identifier, --sensitive or a --keep column "
            f"({', '.join(written)})"
        )
    require_classifier()


def classifier(result: Any, split: Any, written: list[str], target: str, loaded: Any) -> dict[str, Any]:
    """The report's classifier: trained on the release's written columns, tested on the held-out rows with
    each quasi-identifier generalised as the release shows it (privdb.publish.evaluation)."""
    from privdb.publish.evaluation import generalised_test, release_classifier

    release = result.table[[c for c in result.table.columns if c in set(written)]]
    test = generalised_test(release, split.test, result.qi, loaded)
    out = release_classifier(release, split.train, split.test, test, target)
    return {**out, "held_out": split.describe()}


def database_table(db: Path, table: str, written: list[str]) -> tuple[Any, str, str | None]:
    """A database's table as a frame (privdb's hidden columns left out), after refusing to write any column
    its metadata marks as identifying: identifier, private_id, the privacy unit (returned: the held-out
    split keeps a unit's rows together)."""
    from privdb.backends.names import quote
    from privdb.database import Database

    with Database(db) as database:
        meta = database.metadata(table)
        marked = {c for c, col in meta.columns.items() if col.identifier or col.private_id}
        marked |= {meta.privacy_unit} if meta.privacy_unit else set()
        named = [c for c in written if c in marked]
        if named:
            raise InvalidParameter(
                f"column {named[0]!r} of {meta.name!r} identifies people (its metadata marks it identifier, "
                "private_id or the privacy unit) and is never published: leave it out of --qi, --sensitive "
                "and --keep"
            )
        listed = ", ".join(quote(c) for c in database.backend.columns(meta.name))
        frame = database.backend.raw(f"SELECT {listed} FROM {quote(meta.name)}")
    return frame, ",", meta.privacy_unit


def check_written(
    frame: Any, written: list[str], kept: list[str], qi: list[str], sensitive: str | None
) -> None:
    """Refuse --keep columns the table lacks or that already have a role."""
    have = [str(c) for c in frame.columns]
    for name in kept:
        if name not in have:
            raise InvalidParameter(f"--keep names {name!r}, not a column of the table ({', '.join(have)})")
        if name in qi or name == sensitive:
            raise InvalidParameter(f"--keep names {name!r}, already a quasi-identifier or --sensitive")
    if len(set(kept)) != len(kept):
        raise InvalidParameter("--keep lists a column twice: list each once")


def shuffler(seed: int | None) -> Any:
    """The release's row order: the CSPRNG, or a seeded source when the owner asked for one (tests)."""
    if seed is None:
        return None
    import warnings

    from privdb.mechanisms.randomness import InsecureRandomWarning, SeededRandom

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomWarning)
        return SeededRandom(seed)
