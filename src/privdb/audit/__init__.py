"""Empirical ε auditing of privdb's own mechanisms (``privdb audit``)."""

from privdb.audit.auditor import AuditResult, audit, clopper_pearson
from privdb.audit.targets import BROKEN, CORRECT, Target, build_targets

__all__ = [
    "BROKEN",
    "CORRECT",
    "FAMILY_CONFIDENCE",
    "AuditResult",
    "Target",
    "audit",
    "build_targets",
    "clopper_pearson",
    "run",
]


FAMILY_CONFIDENCE = 1 - 1e-6
"""Default confidence of a whole run: a false alarm on correct mechanisms at most once in a million runs."""


def run(
    names: list[str] | None = None, *, samples: int = 100_000, confidence: float = FAMILY_CONFIDENCE
) -> list[AuditResult]:
    """Audit the named mechanisms (default: every correct one).

    ``confidence`` holds for the run as a whole: each of the ``m`` audits uses ``1 − (1 − confidence)/m``
    (Bonferroni), so the chance that any correct mechanism is flagged is at most ``1 − confidence``. At a
    per-mechanism 95 %, ten correct mechanisms would raise a false alarm in up to 40 % of runs.
    """
    targets = build_targets()
    chosen = names or list(CORRECT)
    each = 1 - (1 - confidence) / len(chosen)
    return [
        audit(
            name,
            targets[name].draw0,
            targets[name].draw1,
            epsilon=targets[name].epsilon,
            delta=targets[name].delta,
            samples=samples,
            confidence=each,
        )
        for name in chosen
    ]
