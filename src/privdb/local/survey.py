"""A declared survey of the local model: its protocol from a JSON spec, both of its sides over JSON.

Spec: ``{"protocol": "coin" | "alpha" | "flip" | "binary" | "krr" | "oue" | "olh", "domain": [...],
"epsilon": ε, "alpha": α, "p": p}`` (binary protocols take two domain values, default ``["no", "yes"]``,
in the order no, yes; ``binary`` is the flip protocol chosen for ``epsilon``). The domain is a list of
labels (strings or integers); ``survey.protocol`` computes on their codes ``0 … d−1`` (so callers holding
codes use it directly) and the survey converts labels at its edges.

**The respondent's side** (:meth:`Survey.randomize`, used by ``privdb survey submit`` and the client's
``submit_survey``): true answers, labels of the domain, become randomised responses on the respondent's
machine; only those leave it. **The collector's side** (:meth:`Survey.support`, :meth:`Survey.estimate`,
used by the server) reads responses as people's devices send them:

- binary and k-RR: the randomised value itself, e.g. ``"yes"``;
- OUE: the list of domain values whose bit the person set, e.g. ``["A", "C"]`` (possibly empty);
- OLH: ``[a, b, y]``, the person's hash seeds and randomised bucket.

The collector keeps only the support counts and the number of reports (what the estimator needs), so a
survey's state is small whatever its size, and batches add up in any order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict, Unpack

import numpy as np

from privdb.errors import InvalidParameter
from privdb.local import responses as responses_
from privdb.local.domain import Domain
from privdb.local.estimators import SupportEstimator
from privdb.local.local_hashing import HashReports, OLHProtocol
from privdb.local.protocols import BinaryProtocol, KaryProtocol, LocalProtocol
from privdb.local.unary_encoding import OUEProtocol, UnaryReports
from privdb.mechanisms.randomness import RandomSource
from privdb.text import not_unicode

__all__ = ["BINARY", "PROTOCOLS", "SpecParts", "Survey", "survey_spec"]

PROTOCOLS = ("coin", "alpha", "flip", "binary", "krr", "oue", "olh")
BINARY = ("coin", "alpha", "flip", "binary")
MAX_DOMAIN = 100_000


def _number(spec: dict[str, Any], key: str, protocol: str) -> float:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameter(f"the {protocol} protocol needs a number {key!r} in the survey's spec")
    return float(value)


def _domain(spec: dict[str, Any], binary: bool) -> list[Any]:
    domain = spec.get("domain", ["no", "yes"] if binary else None)
    if not isinstance(domain, list) or not domain or len(domain) > MAX_DOMAIN:
        raise InvalidParameter(f"domain must be a non-empty list of at most {MAX_DOMAIN:,} values")
    if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in domain):
        raise InvalidParameter("domain values must be strings or integers")
    if not_unicode(domain) is not None:
        raise InvalidParameter("domain values must be Unicode text (one holds half of a surrogate pair)")
    if len({str(v) for v in domain}) != len(domain):  # distinct as written too: answers come as text
        raise InvalidParameter("domain values must be distinct (also as text: not both 1 and '1')")
    if binary and len(domain) != 2:
        raise InvalidParameter(
            f"the {spec['protocol']} protocol is yes/no: its domain has two values [no, yes]"
        )
    return domain


def _protocol(spec: dict[str, Any], d: int) -> LocalProtocol[Any]:
    name = spec["protocol"]
    if name == "coin":
        return BinaryProtocol.coin()
    if name == "alpha":
        return BinaryProtocol.alpha(_number(spec, "alpha", name))
    if name == "flip":
        return BinaryProtocol.flip(_number(spec, "p", name))
    epsilon = _number(spec, "epsilon", name)
    if name == "binary":
        return BinaryProtocol.for_epsilon(epsilon)
    if name == "krr":
        return KaryProtocol(epsilon=epsilon, d=d)
    if name == "oue":
        return OUEProtocol(epsilon=epsilon, d=d)
    return OLHProtocol(epsilon=epsilon, d=d)


class SpecParts(TypedDict, total=False):
    """A survey's parameters besides its protocol (which ones a protocol needs: the module docstring)."""

    values: Sequence[str | int] | None  # the domain: the values people answer with
    epsilon: float | None
    alpha: float | None
    p: float | None


def survey_spec(protocol: str, **parts: Unpack[SpecParts]) -> dict[str, Any]:
    """A spec from its parts, the ones left out dropped (checked by :class:`Survey`)."""
    values = parts.get("values")
    spec: dict[str, Any] = {"protocol": protocol, "domain": None if values is None else list(values)}
    spec |= {k: v for k, v in parts.items() if k != "values"}
    return {k: v for k, v in spec.items() if v is not None}


class Survey:
    """A survey's protocol over its domain's labels; both sides' conversions to and from JSON."""

    def __init__(self, spec: dict[str, Any]) -> None:
        name = spec.get("protocol")
        if name not in PROTOCOLS:
            raise InvalidParameter(f"protocol must be one of {', '.join(PROTOCOLS)}, got {name!r}")
        domain = _domain(spec, name in BINARY)
        self.spec = dict(spec, domain=domain)
        self.name: str = name
        self.domain: list[Any] = domain
        self.labels = Domain(domain)
        self.protocol = _protocol(spec, len(domain))
        self.epsilon = float(self.protocol.epsilon)

    # ---- the respondent's side
    def answers(self, lines: Iterable[str]) -> list[Any]:
        """True answers read as text (one per line, blank lines skipped) as labels of the domain; an
        answer outside it is counted, never shown."""
        by_text = {str(v): v for v in self.domain}
        texts = [line.strip() for line in lines if line.strip()]
        if not texts:
            raise InvalidParameter("no answers: give one answer per line (a value of the survey's domain)")
        unknown = sum(1 for t in texts if t not in by_text)
        if unknown:
            shown = ", ".join(str(v) for v in self.domain[:10]) + (", …" if len(self.domain) > 10 else "")
            raise InvalidParameter(
                f"{unknown} of {len(texts)} answers are not values of the survey's domain ({shown}); "
                "write each answer exactly as one of them, one per line"
            )
        return [by_text[t] for t in texts]

    def randomize(self, answers: Sequence[Any], *, rng: RandomSource | None = None) -> list[Any]:
        """Randomise true answers (labels) with the survey's protocol, here: JSON-ready responses, one per
        person, in the forms the module docstring lists. ``rng`` only for reproducible tests."""
        if not len(answers):
            raise InvalidParameter("no answers to randomise")
        codes = self.labels.codes(list(answers), what="answers")
        reports = self.protocol.randomizer(rng=rng).randomize(codes)
        labels = self.domain
        if isinstance(reports, UnaryReports):
            return [[labels[c] for c in reports.report(i).tolist()] for i in range(len(reports))]
        if isinstance(reports, HashReports):
            triples: list[Any] = np.stack([reports.a, reports.b, reports.y], axis=1).tolist()
            return triples
        return [labels[c] for c in np.asarray(reports, dtype=np.int64).tolist()]

    # ---- the collector's side
    def estimator(self, support: list[int] | None = None, n: int = 0) -> SupportEstimator:
        est: SupportEstimator = self.protocol.estimator()
        if support is not None:
            est.support = np.asarray(support, dtype=np.int64)
            est.n = int(n)
        return est

    def reports(self, responses: Any) -> Any:
        """Decode a batch of JSON responses into the protocol's report type, each checked to be one an
        honest randomiser could have sent (:mod:`privdb.local.responses`; never echoing a response)."""
        if not isinstance(responses, list) or not responses:
            raise InvalidParameter("responses must be a non-empty list")
        if self.name in BINARY or self.name == "krr":
            return responses_.direct_codes(self.domain, responses)
        if self.name == "oue":
            return responses_.unary_reports(self.domain, responses)
        assert isinstance(self.protocol, OLHProtocol)
        return responses_.hash_reports(self.protocol, responses)

    def response_range(self) -> tuple[float, float]:
        """The least and the most one response, honest or crafted, adds to any value's count estimate."""
        return responses_.influence(self.estimator())

    def support(self, responses: Any) -> tuple[list[int], int]:
        """One batch's support counts and size: all the collector keeps of it."""
        est = self.estimator().add(self.reports(responses))
        return [int(x) for x in est.support], int(est.n)

    def estimate(self, support: list[int], n: int) -> dict[str, Any]:
        """The current estimate of every value: count, share, standard error, 95% interval of the count,
        and the projection of the shares onto the simplex (post-processing)."""
        out: dict[str, Any] = {"protocol": self.name, "epsilon": self.epsilon, "n": n, "estimates": []}
        out["response_range"] = list(self.response_range())  # what one response can add to a count
        if n == 0:
            return out
        coded = self.estimator(support, n).estimate()
        frame = dataclasses.replace(coded, domain=self.labels).to_frame()  # named by the survey's labels
        out["estimates"] = [
            {
                "value": row["value"],
                "count": float(row["count"]),
                "share": float(row["share"]),
                "std_error": float(row["std_error"]),
                "ci95": [float(row["ci95_low"]), float(row["ci95_high"])],
                "projected_share": float(row["projected_share"]),
            }
            for row in frame.to_dict("records")
        ]
        return out
