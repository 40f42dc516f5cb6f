"""Warm starts: a command handed to a process that has already imported privdb (issue 40).

A command's start is mostly imports (Typer, sqlglot, NumPy, DuckDB, privdb's SQL path: over a second on a
2-core machine, 4× a bare ``import duckdb`` before any work). The first ``privdb`` command of a user starts,
beside itself, a *warm process* that imports all that once and then waits on a Unix socket; each later
command connects, hands over its argument list, working directory, environment, umask, resource limits and
its standard streams (the file descriptors themselves), and the warm process forks a fresh copy of itself
that becomes the command: the same code, run from the same pristine state a new process would have (no
database is open in the warm process, no command has run there, no secret is kept: its environment is
emptied once it has imported). The caller relays Ctrl-C and other signals and ends with the command's own
exit status (or dies of the same signal).

Where this is not the same as a fresh process it is not used: ``privdb serve`` (a supervised, long-running
process belongs to its own service), a caller profiling its imports, a source file of a loaded module changed
since the warm process imported it (the warm process then ends and the command runs cold), a working
directory holding a module that would shadow a loaded one. The warm process ends after ``PRIVDB_WARM_IDLE``
seconds without a command (600 by default); ``PRIVDB_WARM=0`` turns warm starts off.

Security: the socket lives in a directory only its user can open (``$XDG_RUNTIME_DIR/privdb`` or
``/tmp/privdb-<uid>``, 0700, refused if it is not theirs), and both ends check the other's user id
(``SO_PEERCRED``). The noise needs nothing from the warm process: every request keys its ChaCha20 stream from
``os.urandom`` afresh (mechanisms/randomness.py), so two forked commands share no randomness
(tests/test_warm.py checks their answers are independent).

Modules: ``address`` (where the socket is, and the key that tells interpreters apart), ``wire`` (the
messages), ``caller`` (the ``privdb`` side), ``server`` (the warm process and its per-command keeper) and
``become`` (what the forked copy does to become the caller's command).
"""

from privdb.cli.warm.caller import hand_over

__all__ = ["hand_over"]
