"""The public names of each package are pinned: adding one is a decision, removing one a break."""

from __future__ import annotations

import pytest

import privdb
import privdb.audit
import privdb.errors
import privdb.mechanisms


def test_exports_are_pinned() -> None:
    assert set(privdb.__all__) == {"Connection", "PrivdbError", "Result", "__version__", "connect", "decide"}
    assert all(getattr(privdb, name) is not None for name in privdb.__all__)  # lazy names resolve
    assert set(privdb.errors.__all__) == {
        "BudgetExhausted",
        "DatabaseInUse",  # issue 15: a --db command meets a running server's lock
        "EngineUnavailable",
        "Forbidden",
        "InternalError",
        "InvalidParameter",
        "LimitReached",  # issue 25: a respondent token's one response, an open survey's limit
        "ParseError",
        "QueryFailed",
        "PrivdbError",
        "RateLimited",  # issue 25: a collection token past its rate (429)
        "RawAccessDenied",
        "RequestTooLarge",  # issue 25: 413 as an error of the tree (the client raised InvalidParameter)
        "ServerUnreachable",
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


def test_an_unreachable_server_is_a_connection_error() -> None:
    """Issue 15: ``privdb.connect("http://unreachable")`` raised ``InvalidParameter``; it is a connection
    error (``ServerUnreachable``, also a Python ``ConnectionError``) that says what to check."""
    from bench.harness.ports import free_port

    from privdb.errors import ServerUnreachable

    port = free_port()  # a port nothing listens on
    with pytest.raises(ConnectionError) as err:
        privdb.connect(f"http://127.0.0.1:{port}", token="x").budget()
    assert isinstance(err.value, ServerUnreachable)
    assert err.value.code == "server_unreachable" and "privdb serve" in err.value.message
