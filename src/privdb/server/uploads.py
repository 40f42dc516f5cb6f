"""Where the server keeps an upload while it loads it: ``DIR/uploads/`` in the database directory (0700),
one file per request (0600, a random name), removed when the load ends — and, if a crash stopped the
process first, at the server's next start (:func:`clear_uploads`): an upload holds the owner's raw rows.

Never the system's temporary folder: a file left there outlives the database's own permissions and its
owner's clean-up.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from privdb.private_files import open_private, private_dir

__all__ = ["UPLOADS", "clear_uploads", "upload_file"]

UPLOADS = "uploads"


@contextlib.contextmanager
def upload_file(db_dir: Path, suffix: str = ".csv") -> Iterator[Path]:
    """A new, empty owner-only file in ``DIR/uploads/`` for the block to write the upload into (writing
    keeps its mode), removed after."""
    path = private_dir(db_dir / UPLOADS) / f"{secrets.token_hex(8)}{suffix}"
    try:
        open_private(path, exclusive=True).close()
        yield path
    finally:
        path.unlink(missing_ok=True)


def clear_uploads(db_dir: Path) -> int:
    """Remove what ``DIR/uploads/`` holds (left by a crash: a live load's upload is its process's, and a
    server starts only once it holds the data file, which no other process is loading into); how many."""
    folder = db_dir / UPLOADS
    if not folder.is_dir():
        return 0
    removed = 0
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed += 1
    return removed
