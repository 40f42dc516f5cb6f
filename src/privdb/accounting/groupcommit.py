"""Group commit: the write transactions that threads of one process ask for at the same time run as one
store transaction, with one commit (and, when durable, one sync to disk) for all of them.

A server answers many queries at once, and each settles its spend in a synced transaction. Run one after
another, each waits for the store's write lock and then for its own fsync; here the first thread to arrive
*leads*: it takes every job queued so far, runs each in a ``SAVEPOINT`` of one transaction and commits it,
while the jobs that arrive meanwhile queue for the next batch (no timer: a job alone is committed at once,
as before). A job that raises is rolled back to its savepoint alone and its thread gets the error; the
others stand.

Durability is unchanged: a thread returns only after the transaction holding its job has committed — for a
durable one, after SQLite's ``synchronous=FULL`` commit (PostgreSQL's ``synchronous_commit=on``) has synced
it — so no answer leaves before its spend is on disk; if the commit fails, every job of the batch fails.
Atomicity is unchanged: the batch holds the store's write lock throughout (``BEGIN IMMEDIATE``, the writers'
file lock), and each job reads what the jobs before it wrote. How long a job waits depends on the other
requests in flight, never on any data (docs/security.md, timing).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from privdb.accounting.sqlstore import Cursor, SQLStore

__all__ = ["GroupCommit"]

T = TypeVar("T")


class _Job(Generic[T]):
    __slots__ = ("done", "error", "value", "work")

    def __init__(self, work: Callable[[Cursor], T]) -> None:
        self.work = work
        self.value: T | None = None
        self.error: BaseException | None = None
        self.done = False


class GroupCommit:
    """Runs ``work(cursor)`` of concurrent threads in shared write transactions of ``store``; ``durable``
    as :meth:`SQLStore.transaction` takes it."""

    def __init__(self, store: SQLStore, *, durable: bool) -> None:
        self._store, self._durable = store, durable
        self._changed = threading.Condition()
        self._queue: list[_Job[object]] = []
        self._leading = False

    def run(self, work: Callable[[Cursor], T]) -> T:
        """``work`` run in a write transaction, returned once that transaction has committed (synced, if
        durable); what ``work`` raised, or what the commit raised, is raised here."""
        job: _Job[T] = _Job(work)
        with self._changed:
            self._queue.append(job)  # type: ignore[arg-type]
            while not job.done and self._leading:
                self._changed.wait()
            if job.done:
                return self._outcome(job)
            self._leading, batch, self._queue = True, self._queue, []
        try:
            self._commit(batch)
        finally:
            with self._changed:
                self._leading = False
                self._changed.notify_all()
        return self._outcome(job)

    @staticmethod
    def _outcome(job: _Job[T]) -> T:
        if job.error is not None:
            raise job.error
        return job.value  # type: ignore[return-value]

    def _commit(self, batch: list[_Job[object]]) -> None:
        """One transaction for the batch: each job in its savepoint (a job alone needs none: the
        transaction is rolled back for it)."""
        alone = len(batch) == 1
        try:
            with self._store.transaction(durable=self._durable) as cur:
                for job in batch:
                    if alone:
                        job.value = job.work(cur)
                        continue
                    cur.execute("SAVEPOINT privdb_job")
                    try:
                        job.value = job.work(cur)
                    except Exception as err:
                        cur.execute("ROLLBACK TO SAVEPOINT privdb_job")
                        job.error = err
                    cur.execute("RELEASE SAVEPOINT privdb_job")
        except BaseException as err:  # nothing of the transaction stands: every job fails with it (the
            for job in batch:  # leader's own job is in the batch: run() raises it there too)
                if job.error is None:
                    job.error, job.value = err, None
        finally:
            for job in batch:
                job.done = True
