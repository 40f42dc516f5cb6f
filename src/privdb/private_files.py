"""Files private by default: what privdb writes about an owner's data is readable by the owner alone — files
0600, folders 0700 — whatever the umask.

privdb sets the mode itself on what it creates: the database directory, the ledger's SQLite file (created
empty at 0600 before SQLite opens it, so its ``-wal`` and ``-shm``, which SQLite gives the main file's mode,
are 0600 too) and its ``.lock``, the server's uploads and ``serve.json``, saved models. DuckDB creates its
own files (``data.duckdb``, its ``.wal``, the spill folder ``data.duckdb.tmp``) with the process umask, so
opening a database also narrows the process umask to owner-only (:func:`owner_only_umask`: it adds 077 and
never widens it); log files the owner's ``--log-config`` names are created under that umask too.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Any

__all__ = [
    "FILE_MODE",
    "FOLDER_MODE",
    "chmod_private",
    "create_private",
    "open_private",
    "owner_only_umask",
    "private_dir",
]

FILE_MODE = 0o600
FOLDER_MODE = 0o700
_OTHERS = 0o077  # the group's and others' bits


def owner_only_umask() -> None:
    """Narrow the process umask so that files created from now on (by DuckDB too) are owner-only: the bits
    of group and others are added to it, none is taken away."""
    current = os.umask(_OTHERS)  # os.umask sets as it reads; 077 meanwhile is never wider than the result
    os.umask(current | _OTHERS)


def private_dir(path: Path) -> Path:
    """``path`` as a folder, created (with any missing parents) at 0700 if absent; an existing folder keeps
    its mode (the owner's choice)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    for created in missing:
        with contextlib.suppress(OSError):  # another process may have made it: its mode is its own
            os.chmod(created, FOLDER_MODE)
    return path


def create_private(path: Path) -> bool:
    """Create ``path`` as an empty 0600 file if it does not exist; True if this call created it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)  # whatever the umask took away from the owner
    finally:
        os.close(fd)
    return True


def open_private(path: Path, mode: str = "w", *, exclusive: bool = False, **kwargs: Any) -> IO[Any]:
    """``open(path, mode)`` for writing (``"w"``, ``"wb"``), the file created at 0600 if new; an existing
    one is truncated and keeps its mode. ``exclusive``: refuse an existing file (``FileExistsError``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        os.fchmod(fd, FILE_MODE)
    except FileExistsError:
        if exclusive:
            raise
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def chmod_private(path: Path) -> None:
    """Set ``path`` to 0600 (a file another library created, before anything private is written in it)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(path, FILE_MODE)
