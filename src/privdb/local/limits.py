"""The documented limits on sending survey responses (docs/server.md, docs/security.md).

A survey is closed unless its owner opens it; an open survey's collection token may add
``DEFAULT_OPEN_LIMIT`` responses in all unless the owner declares another limit (at most
``MAX_OPEN_LIMIT``), and at most ``OPEN_RATE`` per ``RATE_WINDOW`` seconds. A respondent token adds exactly
one response. The server takes at most ``MAX_BATCH`` responses per request from any token, and issues at
most ``MAX_ISSUE`` respondent tokens per request.
"""

from __future__ import annotations

__all__ = ["DEFAULT_OPEN_LIMIT", "MAX_BATCH", "MAX_ISSUE", "MAX_OPEN_LIMIT", "OPEN_RATE", "RATE_WINDOW"]

MAX_BATCH = 1_000  # responses per request to the server (any token)
MAX_ISSUE = 10_000  # respondent tokens issued per request
DEFAULT_OPEN_LIMIT = 1_000  # responses an open survey's collection token may add in all, unless declared
MAX_OPEN_LIMIT = 1_000_000
OPEN_RATE = 5_000  # responses a collection token may add per window
RATE_WINDOW = 60.0  # seconds
