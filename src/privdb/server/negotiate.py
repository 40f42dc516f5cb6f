"""Which form an answer goes out in: JSON (DESIGN.md's shape, the default) or an Arrow IPC stream, when the
request's ``Accept`` header names ``application/vnd.apache.arrow.stream`` and prefers it to JSON. Errors are
JSON whatever the header asks (server/errors.py): a client that asks for Arrow reads the status first.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import Response
from pydantic import TypeAdapter

from privdb.result import Result
from privdb.result_arrow import MEDIA_TYPE, write_stream

__all__ = ["ARROW_RESPONSE", "answer_response", "wants_arrow"]

_JSON = TypeAdapter(dict[str, Any])  # what FastAPI writes a dict[str, Any] answer with
_VARY = {"Vary": "Accept"}  # a cache must not hand one form to a client that asked for the other

# for the OpenAPI document: the 200 answer in both forms
ARROW_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The answer: JSON by default; an Arrow IPC stream (the columns of "
        "Result.to_pandas(), the privacy facts in the schema metadata) with "
        f"`Accept: {MEDIA_TYPE}`",
        "content": {MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
    }
}


def _quality(accept: str) -> dict[str, float]:
    """Each media range of an Accept header with its q (1 when not given; 0 when unreadable)."""
    out: dict[str, float] = {}
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media:
            out[media.lower()] = max(q, out.get(media.lower(), 0.0))
    return out


def wants_arrow(accept: str | None) -> bool:
    """True when the header names Arrow's stream type with q > 0 and no JSON range has a higher q
    (``*/*`` alone, a browser's header, keeps JSON)."""
    if not accept:
        return False
    quality = _quality(accept)
    arrow = quality.get(MEDIA_TYPE, 0.0)
    json_q = max(quality.get(m, 0.0) for m in ("application/json", "application/*", "*/*"))
    return arrow > 0 and arrow >= json_q


def answer_response(answer: Result, accept: str | None) -> Response:
    """The answer in the form the request asks for. The JSON is written here, in the request's thread,
    as FastAPI would write the dict: returning bytes spares the hand-off its response validation costs."""
    if wants_arrow(accept):
        return Response(write_stream(answer.to_arrow()), media_type=MEDIA_TYPE, headers=_VARY)
    return Response(_JSON.dump_json(answer.to_dict()), media_type="application/json", headers=_VARY)
