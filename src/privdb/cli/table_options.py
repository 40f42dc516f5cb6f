"""Options and helpers the commands over a table file share (``anonymize``, ``check``, ``risk``, ``linkage``,
``publish safepub``): the quasi-identifier, sensitive-column and hierarchy options, the checks of an output
path made before any work, the progress bar over a command's steps, and the held-out classifier's two lines
(``anonymize --target``, ``publish safepub --utility-target``, ``publish synthetic --target``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from privdb.cli.core import console, errors
from privdb.errors import InvalidParameter

if TYPE_CHECKING:
    from privdb.publish.evaluation import Split

__all__ = [
    "BetaOption",
    "DeltaDisclosureOption",
    "EnhancedBetaOption",
    "EstimatorOption",
    "FixLabelsOption",
    "HierarchiesOption",
    "KMapEstimatorOption",
    "PopulationOption",
    "QiOption",
    "SamplingFractionOption",
    "SensitiveOption",
    "SignificanceOption",
    "Steps",
    "check_output",
    "hierarchy_frames",
    "print_held_out",
    "qi_columns",
    "writable",
]

QiOption = Annotated[str, typer.Option("--qi", help="comma-separated quasi-identifier columns")]
SensitiveOption = Annotated[
    str | None, typer.Option("--sensitive", help="the sensitive column (for l and t)")
]
HierarchiesOption = Annotated[
    Path | None, typer.Option("--hierarchies", help="directory of COLUMN.csv hierarchies (ARX's format)")
]
# the privacy models' options, alike in `check` (measure any table) and `anonymize` (enforce them)
BetaOption = Annotated[float | None, typer.Option(help="basic β-likeness of --sensitive")]
EnhancedBetaOption = Annotated[float | None, typer.Option(help="enhanced β-likeness of --sensitive")]
DeltaDisclosureOption = Annotated[
    float | None, typer.Option(help="δ-disclosure privacy of --sensitive (natural log)")
]
KMapEstimatorOption = Annotated[str, typer.Option(help="k-map's estimate: poisson or zero-truncated-poisson")]
SignificanceOption = Annotated[float, typer.Option(help="k-map estimate's significance level")]
EstimatorOption = Annotated[str, typer.Option(help="population uniqueness: dankar, pitman, zayatz or snb")]
PopulationOption = Annotated[
    Path | None, typer.Option(help="the population table (raw values) for δ-presence and k-map")
]
SamplingFractionOption = Annotated[
    float | None, typer.Option(help="the table's share of its population, e.g. 0.01")
]
FixLabelsOption = Annotated[
    bool,
    typer.Option(
        "--fix-labels",
        help="rename a hierarchy's lo-hi labels that exclude their own values to the span of those values "
        "(without it such a hierarchy is refused, its bad rows listed)",
    ),
]


def qi_columns(text: str, option: str = "--qi") -> list[str]:
    """The comma-separated column names of ``option``, at least one."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise InvalidParameter(f"{option} needs at least one column, e.g. {option} age,zip,sex")
    return names


def check_output(path: Path | None, allowed: tuple[str, ...], option: str) -> None:
    """Refuse an output path of ``option`` that does not end in one of ``allowed`` or cannot be written."""
    if path is not None and path.suffix.lower() not in allowed:
        raise InvalidParameter(f"{option} must end in {' or '.join(allowed)}, got {path.name!r}")
    writable(path, option)


def writable(path: Path | None, option: str) -> None:
    """Refuse an output path whose folder does not exist or cannot be written, before any work."""
    if path is None:
        return
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InvalidParameter(
            f"{option} {str(path)!r}: the folder {str(folder)!r} does not exist; create it first"
        )
    if not os.access(folder, os.W_OK) or path.is_dir():
        raise InvalidParameter(f"{option} {str(path)!r} cannot be written here; choose another path")


def hierarchy_frames(directory: Path | None, columns: list[str], fix_labels: bool) -> dict[str, Any] | None:
    """The hierarchies of ``columns`` read from ``--hierarchies`` (ARX's COLUMN.csv files), or None."""
    if directory is None:
        return None
    from privdb.anonymize import load_hierarchies

    return dict(load_hierarchies(directory, columns, fix_labels=fix_labels))


RELEASE_SCORES = ("train_release_test_held_out", "train_raw_test_held_out")


def print_held_out(
    split: Split, scores: Mapping[str, Any], what: str, keys: tuple[str, str] = RELEASE_SCORES
) -> None:
    """The held-out classifier's lines: which rows the release left out, then the accuracies on them of the
    classifier trained on the ``what`` rows (``scores[keys[0]]``) and on the raw training rows
    (``scores[keys[1]]``). Plain text: a column's name is printed as it is, never read as Rich markup."""
    from privdb.publish.evaluation import accuracy_line

    out = console()
    for line in (split.line(), accuracy_line(scores, scores[keys[0]], scores[keys[1]], what)):
        out.print(line, highlight=False)


class Steps:
    """A progress bar over a command's steps on stderr, with the step's name and the time elapsed
    (silent when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),  # a file name is printed as it is
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=errors(),
            transient=True,
        )
        self.task = self.bar.add_task("", total=total)
        self.begun = False

    def __enter__(self) -> Steps:
        if self.bar.console.is_terminal:
            self.bar.start()
        return self

    def next(self, description: str) -> None:
        """Finish the step under way (if any) and name the next one."""
        self.bar.update(self.task, description=description, advance=1 if self.begun else 0)
        self.begun = True

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()
