"""The HTTP client: ``privdb.connect("http://host:port", token=…)`` returns a :class:`RemoteConnection` with
the methods of the embedded :class:`privdb.api.Connection` (``sql``, ``explain``, ``budget``, ``tables``, and
for the owner ``grant``, ``revoke``, ``owner_sql``, ``load``, ``budget_of``, ``log``), and the local model's
surveys (``create_survey``, ``issue_survey_tokens``, ``surveys``, ``survey``, ``submit_survey``,
``add_responses``).

Errors come back as the same :class:`privdb.errors.PrivdbError` subclasses, chosen by the server's code.
Answers to ``sql`` are asked for as Arrow streams (``arrow=False``: JSON); a server that answers JSON
anyway (an older one) is read as JSON.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import httpx

from privdb import errors
from privdb.catalog.metadata_file import load_metadata
from privdb.catalog.querylog import LogOptions
from privdb.catalog.reading import ReadOptions
from privdb.catalog.typed import APPEND_KEEPS_METADATA, declared_types
from privdb.local.limits import MAX_BATCH, MAX_ISSUE
from privdb.result import Result
from privdb.result_arrow import MEDIA_TYPE, read_stream

if TYPE_CHECKING:  # each imported where it is used: a query, budget or explain needs none of them
    import pandas as pd

    from privdb.local.survey import SpecParts
    from privdb.mechanisms.randomness import RandomSource

Spec = str | Path | dict[str, Any] | None  # privacy metadata: a YAML file or its dict
Progress = Callable[[int, int], None]  # bytes sent so far, bytes to send
_CHUNK = 2**20  # bytes read and sent at a time

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
        errors.RequestTooLarge,
        errors.LimitReached,
    )
}


class RemoteConnection:
    """A session with a privdb server, as the principal the token speaks for."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0, arrow: bool = True) -> None:
        if not token:
            raise errors.InvalidParameter("connecting to a server needs token=… (printed by `privdb grant`)")
        self.url = url.rstrip("/")
        self.arrow = arrow  # ask for answers as Arrow streams (JSON stays acceptable)
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
        return self._json(self._send(method, path, **kwargs))

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.HTTPError as err:
            raise errors.ServerUnreachable(
                f"cannot reach the privdb server at {self.url} ({type(err).__name__}); is `privdb serve` "
                "running there?"
            ) from None

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        """The JSON body of a success; a failure's JSON error raised as its PrivdbError."""
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
        if code == "rate_limited":
            raise errors.RateLimited(message, float(response.headers.get("Retry-After") or 60))
        raise _BY_CODE.get(code, errors.InvalidParameter)(message)

    # ---- analysts
    def sql(self, query: str, parameters: Mapping[str, Any] | None = None) -> Result:
        """Answer a DP-SELECT, paid from this token's budget (``parameters``: the values of its ``@name``
        parameters); read from the server's Arrow stream when ``arrow`` (the default), the same Result as
        from its JSON."""
        accept = {"Accept": f"{MEDIA_TYPE}, application/json;q=0.5"} if self.arrow else {}
        body: dict[str, Any] = {"sql": query} | ({"parameters": dict(parameters)} if parameters else {})
        response = self._send("POST", "/v1/query", json=body, headers=accept)
        if not response.is_success or response.headers.get("content-type", "") != MEDIA_TYPE:
            return Result.from_dict(self._json(response))  # errors are JSON whatever was asked for
        import pyarrow as pa  # type: ignore[import-untyped]  # an Arrow answer: read by Arrow (and its errors)

        try:
            return Result.from_arrow(read_stream(response.content))
        except (pa.ArrowException, ValueError, KeyError) as err:
            raise errors.InternalError(
                f"the server's Arrow answer could not be read ({type(err).__name__}); "
                "connect with arrow=False to read JSON, and please report it"
            ) from None

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
        group: str | None = None,
        query_epsilon: float | None = None,
        query_delta: float | None = None,
    ) -> str:
        body = {
            "name": analyst,
            "epsilon": epsilon,
            "delta": delta,
            "tables": tables,
            "expires_in": expires_in,
            "group": group,
            "query_epsilon": query_epsilon,
            "query_delta": query_delta,
        }
        return str(self._call("POST", "/v1/analysts", json=body)["token"])

    def set_shared_budget(
        self,
        *,
        table: str | None = None,
        group: str | None = None,
        epsilon: float,
        delta: float = 0.0,
        renew: str | float | None = None,
    ) -> dict[str, Any]:
        """Set a table's lifetime budget or a budget group's (owner); ``renew``: a refill period (``30d``)."""
        body = {"table": table, "group": group, "epsilon": epsilon, "delta": delta, "renew": renew}
        result: dict[str, Any] = self._call("POST", "/v1/budgets", json=body)
        return result

    def shared_budgets(self) -> list[dict[str, Any]]:
        """Every table lifetime budget and budget group (owner)."""
        result: list[dict[str, Any]] = self._call("GET", "/v1/budgets")
        return result

    def publish(self, method: str, table: str, /, **options: Any) -> dict[str, Any]:
        """Publish a table once with a DP guarantee (owner; the server's POST /v1/publish); ``method=`` among
        the options is the release's own method option (e.g. synthetic's mst or aim)."""
        result: dict[str, Any] = self._call(
            "POST", "/v1/publish", json={"method": method, "table": table, "options": options}
        )
        return result

    def class_losses(self) -> list[dict[str, Any]]:
        """Personalised tables: the ε each class of units has lost so far (owner)."""
        result: list[dict[str, Any]] = self._call("GET", "/v1/budgets/classes")
        return result

    def revoke(self, analyst: str) -> None:
        self._call("DELETE", f"/v1/analysts/{analyst}")

    def budget_of(self, analyst: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/budget", params={"analyst": analyst})
        return result

    def owner_sql(self, sql: str) -> pd.DataFrame:
        """Raw SQL on the server's engine; ``frame.attrs["truncated"]`` says the server cut the rows."""
        import pandas as pd  # a frame is built here only

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
        *,
        append: bool = False,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Upload a file with its metadata (a dict, or a YAML file as for ``privdb load``), or with
        ``append`` add its rows to the table (which keeps its metadata). Read here with ``options`` (CSV,
        Parquet, JSON, Excel, as a local load reads it); the server checks the metadata against the file's
        columns before any row is sent (``POST /v1/uploads``), then the file streams to the server's disk as
        CSV (``PUT /v1/uploads/{id}``), ``progress(sent, total)`` called as the bytes go. A CSV's bad lines
        left out here (``options.skip_bad_lines``) are counted in ``skipped_lines``, and text columns of
        mostly numbers told in ``mixed_columns``."""
        from privdb.catalog.upload import FileToSend, too_large  # optional: DuckDB reads the file to send

        if append and metadata is not None:
            raise errors.InvalidParameter(APPEND_KEEPS_METADATA)
        spec = _spec(metadata, table)
        options = replace(options or ReadOptions(), declared=declared_types(spec))
        with tempfile.TemporaryDirectory(prefix="privdb-send-") as folder:
            with FileToSend(Path(source), options) as file:
                body = {"name": table, "metadata": spec, "columns": file.columns, "append": append}
                slot = self._call("POST", "/v1/uploads", json=body)
            upload, limit, types = str(slot["upload"]), slot.get("max_bytes"), slot.get("types") or {}
            try:  # an append's file is read as the table's types, as a local append reads it
                exact = tuple((name.lower(), kind) for name, kind in types.items())
                with FileToSend(Path(source), replace(options, types=exact)) as file:
                    written = file.write(Path(folder))
                if limit is not None and written.size > int(limit):
                    raise errors.RequestTooLarge(too_large(written.size, int(limit)))
                response = self._send(
                    "PUT", f"/v1/uploads/{upload}", content=_chunks(written.path, written.size, progress),
                    headers={"Content-Type": "text/csv", "Content-Length": str(written.size)},
                    timeout=httpx.Timeout(self._http.timeout.connect, read=None),
                )  # fmt: skip
            except BaseException:
                with contextlib.suppress(errors.PrivdbError):  # not sent: the server forgets it now
                    self._send("DELETE", f"/v1/uploads/{upload}")
                raise
        result: dict[str, Any] = self._json(response)
        if written.skipped:
            result["skipped_lines"] = written.skipped
        if written.mixed and not append:  # an append reads the file as the table's types, whatever it holds
            result["mixed_columns"] = [m.to_dict() | {"message": m.message()} for m in written.mixed]
        return result

    # ---- surveys of the local model (docs/server.md): respondents randomise here, never on the server
    def create_survey(
        self, name: str, protocol: str, *, open_limit: int | None = None, **parts: Unpack[SpecParts]
    ) -> dict[str, Any]:
        """Declare a survey (owner): its protocol, ``values`` (the domain), and ε (or α, p); the answer
        holds the survey's ``collect_token``, shown once. Closed unless ``open_limit`` is given: then its
        collection token may send that many responses in all (docs/security.md)."""
        from privdb.local.survey import survey_spec  # optional: the local model (pandas), for surveys only

        body = survey_spec(protocol, **parts) | {"name": name}
        if open_limit is not None:
            body |= {"open": True, "open_limit": open_limit}
        result: dict[str, Any] = self._call("POST", "/v1/surveys", json=body)
        return result

    def issue_survey_tokens(self, name: str, count: int) -> list[str]:
        """``count`` one-time respondent tokens of the survey (owner), each sending exactly one response."""
        tokens: list[str] = []
        while len(tokens) < count:
            ask = min(count - len(tokens), MAX_ISSUE)
            tokens += self._call("POST", f"/v1/surveys/{name}/tokens", json={"count": ask})["tokens"]
        return tokens

    def surveys(self) -> list[dict[str, Any]]:
        """Every survey's name, spec and number of responses (a collection token: its own survey)."""
        result: list[dict[str, Any]] = self._call("GET", "/v1/surveys")
        return result

    def survey(self, name: str) -> dict[str, Any]:
        """The survey's spec and current estimate per value with 95% intervals (any token, or the survey's
        own collection token)."""
        result: dict[str, Any] = self._call("GET", f"/v1/surveys/{name}")
        return result

    def add_responses(self, name: str, responses: list[Any]) -> dict[str, Any]:
        """Send already-randomised responses (as :meth:`privdb.local.survey.Survey.randomize` makes them),
        in requests of at most ``MAX_BATCH`` responses and about 4 MiB each."""
        result: dict[str, Any] = {"name": name, "added": 0, "n": 0}
        for batch in _batches(responses):
            sent = self._call("POST", f"/v1/surveys/{name}/responses", json={"responses": batch})
            result = {"name": name, "added": result["added"] + sent["added"], "n": sent["n"]}
        return result

    def submit_survey(
        self, name: str, answers: Sequence[Any], *, rng: RandomSource | None = None
    ) -> dict[str, Any]:
        """Randomise true answers *here* with the survey's declared protocol and ε (fetched from the
        server), then send only the randomised responses (with a respondent token: one answer). A batch
        refused midway leaves the earlier batches counted; ``n`` is the survey's total."""
        from privdb.local.survey import Survey  # optional: the local model (pandas), for surveys only

        survey = Survey(self.survey(name)["spec"])
        return self.add_responses(name, survey.randomize(answers, rng=rng))


_BATCH_BYTES = 4 * 2**20  # JSON per request: well under the server's default 16 MiB body limit


def _batches(responses: list[Any]) -> Iterator[list[Any]]:
    """Consecutive runs of at most ``MAX_BATCH`` responses whose JSON stays under ``_BATCH_BYTES`` (OUE
    responses can be long)."""
    if not responses:
        raise errors.InvalidParameter("no responses to send")
    batch: list[Any] = []
    size = 0
    for response in responses:
        length = len(json.dumps(response)) + 2
        if batch and (size + length > _BATCH_BYTES or len(batch) == MAX_BATCH):
            yield batch
            batch, size = [], 0
        batch.append(response)
        size += length
    yield batch


def _chunks(path: Path, size: int, progress: Progress | None) -> Iterator[bytes]:
    """The file's bytes, a chunk at a time, telling ``progress`` how many have gone."""
    sent = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            yield chunk
            sent += len(chunk)
            if progress is not None:
                progress(sent, size)


def _spec(metadata: Spec, table: str) -> dict[str, Any] | None:
    """Metadata to send: a dict as given, a YAML file read here (the server cannot see the owner's files)."""
    if isinstance(metadata, str | Path):
        return load_metadata(metadata, table)
    return metadata
