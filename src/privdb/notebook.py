"""``%%privdb``: a Jupyter cell magic that runs the cell's DP-SELECT on a privdb connection and shows the
answer (its table with intervals, cost and chart; ``Result._repr_html_``). Needs IPython (the optional extra
``privdb[notebook]``)::

    %load_ext privdb
    conn = privdb.connect("mydb", analyst="alice")      # or privdb.connect("http://…", token=…)

    %%privdb conn -o answer
    DP-SELECT 1 sex, COUNT(*) AS n FROM people GROUP BY sex

The answer is the cell's value (so also ``_``) and, with ``-o NAME``, stored in ``NAME``. Instead of a
variable the line may name a server's URL with ``--token VAR``: the name of a variable, or an environment
variable, holding the token (so the token is never written in the notebook). A refusal or failure prints
its code and message, as the CLI does, never a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from privdb.api import Connection
from privdb.client import RemoteConnection
from privdb.errors import PrivdbError
from privdb.result import Result

__all__ = ["PrivdbMagics", "load_ipython_extension"]


@magics_class
class PrivdbMagics(Magics):  # IPython is typed loosely: pyproject's mypy override for this module
    """The ``%%privdb`` cell magic, with the server sessions it opened (one per URL and token)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self._remote: dict[tuple[str, str], RemoteConnection] = {}

    def _namespace(self) -> dict[str, Any]:
        """The notebook's variables."""
        if self.shell is None:
            raise UsageError("%%privdb runs in an IPython shell or Jupyter kernel")
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def _connection(self, target: str, token: str | None) -> Connection | RemoteConnection:
        """The connection the magic's line names: a notebook variable, or a server URL and its token."""
        namespace = self._namespace()
        if target.startswith(("http://", "https://")):
            if not token:
                raise UsageError(f"%%privdb {target} needs --token VAR: a variable holding the token")
            if token in namespace:
                secret = str(namespace[token])
            elif token in os.environ:
                secret = os.environ[token]
            else:
                raise UsageError(f"--token {token}: no such variable or environment variable")
            if (target, secret) not in self._remote:
                self._remote[target, secret] = RemoteConnection(target, secret)
            return self._remote[target, secret]
        found = namespace.get(target)
        if not isinstance(found, Connection | RemoteConnection):
            what = "is not defined" if target not in namespace else f"is a {type(found).__name__}"
            raise UsageError(
                f"%%privdb {target}: {target} {what}; name a variable holding privdb.connect(…), or a "
                "server URL with --token VAR"
            )
        return found

    @magic_arguments()
    @argument("connection", help="a variable holding privdb.connect(…), or a server's http(s):// URL")
    @argument("-o", "--out", help="also store the answer in this variable")
    @argument("--token", help="with a URL: the variable (or environment variable) holding the token")
    @cell_magic
    def privdb(self, line: str, cell: str) -> Result | None:
        """Run the cell's DP-SELECT on a privdb connection: ``%%privdb conn [-o NAME]``."""
        args = parse_argstring(self.privdb, line)
        query = cell.strip()
        if not query:
            raise UsageError("%%privdb: the cell is empty; write a DP-SELECT under the magic's line")
        if args.out and not args.out.isidentifier():  # refused before the query runs: nothing spent
            raise UsageError(f"-o {args.out}: not a Python variable name")
        conn = self._connection(args.connection, args.token)
        try:
            answer = conn.sql(query)
        except PrivdbError as err:
            print(f"error ({err.code}): {err.message}", file=sys.stderr)
            return None
        if args.out:
            self._namespace()[args.out] = answer
        return answer

    def close(self) -> None:
        """Close the server sessions the magic opened."""
        for conn in self._remote.values():
            conn.close()
        self._remote.clear()


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext privdb.notebook`` (or ``%load_ext privdb``): register ``%%privdb``."""
    ipython.register_magics(PrivdbMagics)
