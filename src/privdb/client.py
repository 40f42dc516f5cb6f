"""The HTTP client: ``privdb.connect("http://host:port", token=…)`` returns a :class:`RemoteConnection` with
the methods of the embedded :class:`privdb.api.Connection` (``sql``, ``explain``, ``budget``, ``tables``, and
for the owner ``grant``, ``revoke``, ``owner_sql``, ``load``, ``budget_of``, ``log``).

Errors come back as the same :class:`privdb.errors.PrivdbError` subclasses, chosen by the server's code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

import httpx
import pandas as pd

from privdb import errors
from privdb.catalog.files import ReadOptions, to_csv_text
from privdb.catalog.querylog import LogOptions
from privdb.result import Result

Spec = str | Path | dict[str, Any] | None  # privacy metadata: a YAML file or its dict

__all__ = ["RemoteConnection"]

_BY_CODE: dict[str, type[errors.PrivdbError]] = {
    cls.code: cls
    for cls in (
        errors.ParseError,
        errors.UnsupportedQuery,
        errors.UnknownTable,
        errors.UnknownColumn,
        errors.RawAccessDenied,
        errors.BudgetExhausted,
        errors.InvalidParameter,
        errors.Unauthorized,
        errors.Forbidden,
        errors.QueryFailed,
        errors.InternalError,
        errors.EngineUnavailable,
    )
}


class RemoteConnection:
    """A session with a privdb server, as the principal the token speaks for."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        if not token:
            raise errors.InvalidParameter("connecting to a server needs token=… (printed by `privdb grant`)")
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RemoteConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as err:
            raise errors.ServerUnreachable(
                f"cannot reach the privdb server at {self.url} ({type(err).__name__}); is `privdb serve` "
                "running there?"
            ) from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success:
            return body
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            raise errors.InternalError(
                f"the server answered HTTP {response.status_code} without an error body"
            )
        code, message = str(error.get("code")), str(error.get("message"))
        if code == "request_too_large":
            raise errors.InvalidParameter(message)
        raise _BY_CODE.get(code, errors.InvalidParameter)(message)

    # ---- analysts
    def sql(self, query: str) -> Result:
        return Result.from_dict(self._call("POST", "/v1/query", json={"sql": query}))

    def explain(self, query: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/explain", json={"sql": query})
        return result

    def budget(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/budget")
        return result

    def tables(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/v1/tables")
        return result

    def log(self, *, analyst: str | None = None, **options: Unpack[LogOptions]) -> list[dict[str, Any]]:
        """The query log (``GET /v1/log``), with the filters and paging of the embedded ``log``."""
        params: dict[str, Any] = {k: v for k, v in options.items() if v is not None and k != "newest_first"}
        if analyst is not None:
            params["analyst"] = analyst
        if options.get("newest_first"):
            params["order"] = "desc"
        result: list[dict[str, Any]] = self._call("GET", "/v1/log", params=params)
        return result

    # ---- the owner
    def grant(
        self,
        analyst: str,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        tables: list[str] | None = None,
        expires_in: float | None = None,
    ) -> str:
        body = {
            "name": analyst,
            "epsilon": epsilon,
            "delta": delta,
            "tables": tables,
            "expires_in": expires_in,
        }
        return str(self._call("POST", "/v1/analysts", json=body)["token"])

    def revoke(self, analyst: str) -> None:
        self._call("DELETE", f"/v1/analysts/{analyst}")

    def budget_of(self, analyst: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/budget", params={"analyst": analyst})
        return result

    def owner_sql(self, sql: str) -> pd.DataFrame:
        """Raw SQL on the server's engine; ``frame.attrs["truncated"]`` says the server cut the rows."""
        body = self._call("POST", "/v1/sql", json={"sql": sql})
        frame = pd.DataFrame(body["rows"], columns=body["columns"])
        frame.attrs["truncated"] = bool(body.get("truncated"))
        return frame

    def attach(
        self, table: str, engine: str, source: str | None = None, metadata: Spec = None
    ) -> dict[str, Any]:
        """Register a table that stays in its own engine; the server opens ``engine``, on its machine. The
        metadata is a dict or a YAML file here, sent as JSON."""
        body = {"name": table, "engine": engine, "source": source, "metadata": _spec(metadata, table)}
        result: dict[str, Any] = self._call("POST", "/v1/attachments", json=body)
        return result

    def load(
        self,
        table: str,
        source: str | Path,
        metadata: str | Path | dict[str, Any] | None = None,
        options: ReadOptions | None = None,
    ) -> dict[str, Any]:
        """Upload a file with its metadata (a dict, or a YAML file as for ``privdb load``): read here with
        ``options`` (CSV, Parquet, JSON, Excel, as a local load reads it) and sent as CSV text."""
        spec = metadata
        if isinstance(metadata, str | Path):
            from privdb.catalog.metadata import load_metadata

            spec = load_metadata(metadata, table)
        text = to_csv_text(Path(source), options or ReadOptions())
        body = {"name": table, "csv": text, "metadata": spec}
        result: dict[str, Any] = self._call("POST", "/v1/tables", json=body)
        return result


def _spec(metadata: Spec, table: str) -> dict[str, Any] | None:
    """Metadata to send: a dict as given, a YAML file read here (the server cannot see the owner's files)."""
    if isinstance(metadata, str | Path):
        from privdb.catalog.metadata import load_metadata

        return load_metadata(metadata, table)
    return metadata
