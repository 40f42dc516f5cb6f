"""Empirical ε auditing of privdb's own mechanisms (``privdb audit``)."""

from privdb.audit.auditor import AuditResult, audit, clopper_pearson
from privdb.audit.targets import BROKEN, CORRECT, Target, build_targets

__all__ = [
    "BROKEN",
    "CORRECT",
    "AuditResult",
    "Target",
    "audit",
    "build_targets",
    "clopper_pearson",
]


def run(
    names: list[str] | None = None, *, samples: int = 100_000, confidence: float = 0.95
) -> list[AuditResult]:
    """Audit the named mechanisms (default: every correct one)."""
    targets = build_targets()
    chosen = names or list(CORRECT)
    return [
        audit(
            name,
            targets[name].draw0,
            targets[name].draw1,
            epsilon=targets[name].epsilon,
            delta=targets[name].delta,
            samples=samples,
            confidence=confidence,
        )
        for name in chosen
    ]
