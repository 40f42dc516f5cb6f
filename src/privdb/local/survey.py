"""A declared survey of the local model: its protocol from a JSON spec, and already-randomised responses
from JSON, for the server's collection endpoints.

Spec: ``{"protocol": "coin" | "alpha" | "flip" | "binary" | "krr" | "oue" | "olh", "domain": [...],
"epsilon": ε, "alpha": α, "p": p}`` (binary protocols take two domain values, default ``["no", "yes"]``;
``binary`` is the flip protocol chosen for ``epsilon``). Responses, as people's devices send them:

- binary and k-RR: the randomised value itself, e.g. ``"yes"``;
- OUE: the list of domain values whose bit the person set, e.g. ``["A", "C"]``;
- OLH: ``[a, b, y]``, the person's hash seeds and randomised bucket.

The collector keeps only the support counts and the number of reports (what the estimator needs), so a
survey's state is small whatever its size, and batches add up in any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privdb.errors import InvalidParameter
from privdb.local.estimators import SupportEstimator
from privdb.local.oracles import HashReports, OLHProtocol, OUEProtocol, UnaryReports
from privdb.local.protocols import BinaryProtocol, KaryProtocol

__all__ = ["PROTOCOLS", "Survey"]

PROTOCOLS = ("coin", "alpha", "flip", "binary", "krr", "oue", "olh")
MAX_DOMAIN = 100_000


def _number(spec: dict[str, Any], key: str, protocol: str) -> float:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameter(f"the {protocol} protocol needs a number {key!r} in the survey's spec")
    return float(value)


class Survey:
    """A survey's protocol, domain and estimator state (support counts and n)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        protocol = spec.get("protocol")
        if protocol not in PROTOCOLS:
            raise InvalidParameter(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        binary = protocol in ("coin", "alpha", "flip", "binary")
        domain = spec.get("domain", ["no", "yes"] if binary else None)
        if not isinstance(domain, list) or not domain or len(domain) > MAX_DOMAIN:
            raise InvalidParameter(f"domain must be a non-empty list of at most {MAX_DOMAIN:,} values")
        if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in domain):
            raise InvalidParameter("domain values must be strings or integers")
        if len(set(domain)) != len(domain):
            raise InvalidParameter("domain values must be distinct")
        if binary and len(domain) != 2:
            raise InvalidParameter(f"the {protocol} protocol is yes/no: its domain has two values [no, yes]")
        self.spec = dict(spec, domain=domain)
        self.name: str = protocol
        self.domain: list[Any] = domain
        self._index = {v: i for i, v in enumerate(domain)}
        d = len(domain)
        if protocol == "coin":
            self.protocol: Any = BinaryProtocol.coin()
        elif protocol == "alpha":
            self.protocol = BinaryProtocol.alpha(_number(spec, "alpha", protocol))
        elif protocol == "flip":
            self.protocol = BinaryProtocol.flip(_number(spec, "p", protocol))
        elif protocol == "binary":
            self.protocol = BinaryProtocol.for_epsilon(_number(spec, "epsilon", protocol))
        elif protocol == "krr":
            self.protocol = KaryProtocol(epsilon=_number(spec, "epsilon", protocol), d=d)
        elif protocol == "oue":
            self.protocol = OUEProtocol(epsilon=_number(spec, "epsilon", protocol), d=d)
        else:
            self.protocol = OLHProtocol(epsilon=_number(spec, "epsilon", protocol), d=d)
        self.epsilon = float(self.protocol.epsilon)

    def estimator(self, support: list[int] | None = None, n: int = 0) -> SupportEstimator:
        est: SupportEstimator = self.protocol.estimator()
        if support is not None:
            est.support = np.asarray(support, dtype=np.int64)
            est.n = int(n)
        return est

    def _codes(self, values: list[Any]) -> np.ndarray:
        try:
            return np.fromiter((self._index[v] for v in values), dtype=np.int64, count=len(values))
        except (KeyError, TypeError):
            raise InvalidParameter(
                "a response is not a value of the survey's domain; send the randomised value as the "
                "randomiser returned it"
            ) from None

    def reports(self, responses: Any) -> Any:
        """Decode a batch of JSON responses into the protocol's report type (never echoing a response)."""
        if not isinstance(responses, list) or not responses:
            raise InvalidParameter("responses must be a non-empty list")
        if self.name in ("coin", "alpha", "flip", "binary"):
            return self._codes(responses).astype(bool)
        if self.name == "krr":
            return self._codes(responses)
        if self.name == "oue":
            if not all(isinstance(r, list) for r in responses):
                raise InvalidParameter("an OUE response is the list of domain values whose bit was set")
            sets = [np.unique(self._codes(r)) for r in responses]
            indptr = np.concatenate([[0], np.cumsum([s.size for s in sets])]).astype(np.int64)
            indices = np.concatenate(sets).astype(np.uint32) if indptr[-1] else np.zeros(0, np.uint32)
            return UnaryReports(len(self.domain), indptr, indices)
        triples = np.asarray(responses, dtype=object)
        if (
            triples.ndim != 2
            or triples.shape[1] != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in triples.ravel())
        ):
            raise InvalidParameter("an OLH response is [a, b, y]: the hash seeds and the randomised bucket")
        a, b, y = (triples[:, i].astype(np.int64) for i in range(3))
        return HashReports(self.protocol.prime, self.protocol.g, a, b, y)

    def support(self, responses: Any) -> tuple[list[int], int]:
        """One batch's support counts and size: all the collector keeps of it."""
        est = self.estimator().add(self.reports(responses))
        return [int(x) for x in est.support], int(est.n)

    def estimate(self, support: list[int], n: int) -> dict[str, Any]:
        """The current estimate of every value: count, share, standard error, 95% interval, and the
        projection onto the simplex (post-processing)."""
        out: dict[str, Any] = {"protocol": self.name, "epsilon": self.epsilon, "n": n, "estimates": []}
        if n == 0:
            return out
        freq = self.estimator(support, n).frequencies()
        lo, hi = freq.ci95
        projected = freq.projected()
        out["estimates"] = [
            {
                "value": v,
                "count": float(freq.counts[i]),
                "share": float(freq.frequencies[i]),
                "std_error": float(freq.std_errors[i]),
                "ci95": [float(lo[i]), float(hi[i])],
                "projected_share": float(projected[i]),
            }
            for i, v in enumerate(self.domain)
        ]
        return out
