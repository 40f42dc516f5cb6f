"""The public names of each package are pinned: adding one is a decision, removing one a break."""

from __future__ import annotations

import privdb
import privdb.audit
import privdb.errors
import privdb.mechanisms


def test_exports_are_pinned() -> None:
    assert set(privdb.__all__) == {"Connection", "PrivdbError", "Result", "__version__", "connect", "decide"}
    assert all(getattr(privdb, name) is not None for name in privdb.__all__)  # lazy names resolve
    assert set(privdb.errors.__all__) == {
        "BudgetExhausted",
        "EngineUnavailable",
        "Forbidden",
        "InternalError",
        "InvalidParameter",
        "ParseError",
        "QueryFailed",
        "PrivdbError",
        "RawAccessDenied",
        "Unauthorized",
        "UnknownColumn",
        "UnknownTable",
        "UnsupportedQuery",
    }
    assert set(privdb.mechanisms.__all__) == {
        "AdditiveNoise",
        "AlphaProtocol",
        "BinaryRandomizedResponse",
        "CoinProtocol",
        "DiscreteGaussian",
        "Estimate",
        "ExponentialMechanism",
        "FlipProtocol",
        "Gaussian",
        "Geometric",
        "HeadsSayYes",
        "KaryRandomizedResponse",
        "Laplace",
        "Mechanism",
        "PrivacyCost",
        "RandomSource",
        "SecureRandom",
        "SeededRandom",
        "analytic_gaussian_sigma",
        "epsilon_of",
        "gaussian_delta",
    }
    for name in privdb.mechanisms.__all__:
        assert hasattr(privdb.mechanisms, name)


def test_error_codes_match_design() -> None:
    codes = {
        cls.code
        for cls in vars(privdb.errors).values()
        if isinstance(cls, type) and issubclass(cls, privdb.errors.PrivdbError)
    }
    assert {
        "parse_error",
        "unsupported_query",
        "unknown_table",
        "unknown_column",
        "raw_access_denied",
        "budget_exhausted",
        "invalid_parameter",
        "unauthorized",
        "forbidden",
    } <= codes
    err = privdb.errors.BudgetExhausted("left: ε=0")
    assert err.to_dict() == {"error": {"code": "budget_exhausted", "message": "left: ε=0"}}
