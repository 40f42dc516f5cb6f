"""'Did you mean …?' for unknown names (as sqlglot's helper does): used by every layer, so it sits at the
bottom beside privdb.errors."""

from __future__ import annotations

import difflib

__all__ = ["did_you_mean"]


def did_you_mean(name: str, choices: list[str]) -> str:
    """A suffix for an error message: the closest known names, or the list of known names."""
    close = difflib.get_close_matches(name.lower(), [c.lower() for c in choices], n=3, cutoff=0.6)
    originals = {c.lower(): c for c in choices}
    if close:
        return "; did you mean " + " or ".join(repr(originals[c]) for c in close) + "?"
    if choices and len(choices) <= 12:
        return "; known: " + ", ".join(sorted(choices))
    return ""
