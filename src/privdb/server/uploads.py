"""A table's file over HTTP in two requests, so that no file sits in the server's memory and a refusal costs
no upload (docs/server.md, "Loading over the server"):

- ``POST /v1/uploads {"name", "metadata", "columns", "append"}`` (the owner): everything that can be checked
  before the data is: the name, the metadata against the file's columns and types as the owner's machine read
  them (privdb.catalog.upload), or for an append the table and its columns' names. Returns an upload id,
  used once within ``LIFETIME`` seconds (at most ``MAX_PENDING`` wait at a time), the owner's size limit,
  and for an append the table's column types (the client reads the file as them, naming a bad line).
- ``PUT /v1/uploads/{id}`` with the CSV as its body: streamed as it arrives, never past the owner's
  ``--max-load-bytes``, into a file of :func:`upload_file`; then loaded or appended (which checks everything
  again, on the data) and the file removed, whatever happened.
- ``DELETE /v1/uploads/{id}``: the client gave up before sending.

Where the server keeps an upload while it loads it (this path's and ``POST /v1/tables``'s): ``DIR/uploads/``
in the database directory (0700), one folder per request (0700, a random name) holding ``upload.csv`` (0600,
the name a refused line is reported in), removed when the load ends — and, if a crash stopped the process
first, at the server's next start (:func:`clear_uploads`): an upload holds the owner's raw rows. Never the
system's temporary folder: a file left there outlives the database's own permissions and its owner's
clean-up.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from privdb.catalog.typed import APPEND_KEEPS_METADATA
from privdb.catalog.upload import sent_options, too_large
from privdb.crashpoint import crash_point
from privdb.database import Database
from privdb.errors import InvalidParameter, RequestTooLarge
from privdb.private_files import FOLDER_MODE, open_private, private_dir
from privdb.server.bodies import Body

__all__ = ["LIFETIME", "MAX_PENDING", "UPLOADS", "UploadIn", "Uploads", "clear_uploads", "upload_file"]

UPLOADS = "uploads"  # DIR/uploads/
LIFETIME = 3600.0  # seconds an upload id waits for its data
MAX_PENDING = 16  # upload ids waiting at once; the oldest is forgotten past this
_FLUSH = 2**20  # bytes gathered before a write to the file


class UploadIn(Body):
    name: str = Field(max_length=64)
    metadata: dict[str, Any] | None = Field(default=None, description="the table's (none for an append)")
    columns: dict[str, str] = Field(
        description="the file's columns as the owner's machine read them: name → DuckDB type, in order"
    )
    append: bool = Field(default=False, description="add the rows to the table instead of replacing it")


@dataclass(frozen=True)
class _Slot:
    name: str
    spec: dict[str, Any] | None
    columns: dict[str, str]
    append: bool
    expires: float


class Uploads:
    """One server's pending uploads, and the private folder their files stream into."""

    def __init__(self, db: Database, max_bytes: int | None) -> None:
        self.db, self.max_bytes = db, max_bytes
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()

    def open(self, body: UploadIn) -> dict[str, Any]:
        """Check what can be checked before the data, and keep it under a new upload id."""
        if body.append:
            if body.metadata is not None:
                raise InvalidParameter(APPEND_KEEPS_METADATA)
            meta = self.db.check_append(body.name, body.columns)
            types = self.db.stored_types(meta.name)  # the client reads the file as these: bad lines named
        else:
            self.db.check_load(body.name, body.metadata or {}, body.columns)
            types = None
        upload = secrets.token_urlsafe(16)
        now = time.monotonic()
        with self._lock:
            for key in [k for k, slot in self._slots.items() if slot.expires < now]:
                del self._slots[key]
            while len(self._slots) >= MAX_PENDING:
                del self._slots[next(iter(self._slots))]
            self._slots[upload] = _Slot(body.name, body.metadata, body.columns, body.append, now + LIFETIME)
        return {"upload": upload, "max_bytes": self.max_bytes} | ({"types": types} if types else {})

    def forget(self, upload: str) -> dict[str, Any]:
        """Drop an upload id whose data will not come."""
        with self._lock:
            found = self._slots.pop(upload, None) is not None
        return {"upload": upload, "deleted": found}

    async def receive(self, upload: str, request: Request) -> dict[str, Any]:
        """Stream the body to a private file, then load it (in a worker thread) and remove it."""
        with self._lock:
            slot = self._slots.pop(upload, None)
        if slot is None or slot.expires < time.monotonic():
            raise InvalidParameter(
                "no such upload waiting (each is used once, within an hour): POST /v1/uploads first"
            )
        declared = request.headers.get("content-length", "")
        if self.max_bytes is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise RequestTooLarge(too_large(int(declared), self.max_bytes))
        with upload_file(self.db.path) as path:
            await self._save(request, path)
            crash_point("upload-written")
            return await run_in_threadpool(self._load, slot, path)

    async def _save(self, request: Request, path: Path) -> None:
        """The body into ``path`` (empty, 0600: writing keeps its mode) as it arrives, a megabyte at a time,
        refused past the limit."""
        handle = open_private(path, "wb")
        try:
            size, pending = 0, bytearray()
            async for chunk in request.stream():
                size += len(chunk)
                if self.max_bytes is not None and size > self.max_bytes:
                    raise RequestTooLarge(too_large(size, self.max_bytes))
                pending += chunk
                if len(pending) >= _FLUSH:
                    await run_in_threadpool(handle.write, bytes(pending))
                    pending.clear()
            if pending:
                await run_in_threadpool(handle.write, bytes(pending))
        finally:
            handle.close()

    def _load(self, slot: _Slot, path: Path) -> dict[str, Any]:
        options = sent_options(slot.columns)
        if slot.append:
            meta = self.db.append(slot.name, path, options)
        else:
            meta = self.db.load(slot.name, path, slot.spec or {}, options)
        return self.db.loaded(meta)


@contextlib.contextmanager
def upload_file(db_dir: Path) -> Iterator[Path]:
    """A new, empty owner-only ``upload.csv`` in a folder of its own in ``DIR/uploads/`` (module doc), for the
    block to write the upload into (writing keeps its mode); removed after, with its folder."""
    own = private_dir(db_dir / UPLOADS) / secrets.token_hex(8)
    own.mkdir(mode=FOLDER_MODE)
    os.chmod(own, FOLDER_MODE)  # whatever the umask
    try:
        path = own / "upload.csv"
        open_private(path, exclusive=True).close()
        yield path
    finally:
        shutil.rmtree(own, ignore_errors=True)


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
