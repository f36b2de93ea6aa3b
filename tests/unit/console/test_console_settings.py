"""The console's flag, and the one mapping of gRPC codes to HTTP statuses."""

from __future__ import annotations

import grpc
import pytest

from statewrightd import errors
from statewrightd.api.status import HTTP_STATUS, error_json, grpc_code, http_status
from statewrightd.cli import DEV_DEFAULTS, build_parser
from statewrightd.config import ConfigError, config_from
from statewrightd.reasons import Reason


def _config(argv: list[str], env: dict[str, str] | None = None) -> str | None:
    args = build_parser().parse_args(argv)
    base = DEV_DEFAULTS if argv[0] == "dev" else None
    return config_from(args, env=env or {}, base=base).http_listen


def test_the_console_is_on_in_dev_and_off_in_serve_unless_asked() -> None:
    assert _config(["dev"]) == "127.0.0.1:8080"
    assert _config(["serve"]) is None
    assert _config(["serve", "--http-listen", "127.0.0.1:9000"]) == "127.0.0.1:9000"
    assert _config(["serve"], {"STATEWRIGHT_HTTP_LISTEN": "0.0.0.0:8081"}) == "0.0.0.0:8081"
    assert _config(["dev", "--http-listen", "off"]) is None
    assert _config(["dev"], {"STATEWRIGHT_HTTP_LISTEN": "off"}) is None
    with pytest.raises(ConfigError):
        _config(["serve", "--http-listen", "nowhere"])


def test_every_grpc_code_has_an_http_status_and_errors_keep_their_reason() -> None:
    assert set(HTTP_STATUS) == set(grpc.StatusCode)
    cases = {
        errors.InvalidArgument("x", reason="BAD"): 400,
        errors.NotFound("x"): 404,
        errors.Conflict("x"): 409,
        errors.Unauthenticated("x"): 401,
        errors.PermissionDenied("x"): 403,
        errors.RateLimited("x", retry_after=0.25): 429,
        errors.Unavailable("x"): 503,
        errors.DeadlineExceeded("x"): 504,
        errors.FailedPrecondition("x"): 400,
    }
    for error, status in cases.items():
        assert http_status(error) == status, error
        body = error_json(error)["error"]
        assert isinstance(body, dict) and set(body) == {"code", "message", "status", "details"}
        assert (body["code"], body["status"], body["message"]) == (
            status,
            grpc_code(error).name,
            "x",
        )
        info = body["details"][0]
        assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
        assert (info["reason"], info["domain"]) == (error.reason, errors.DOMAIN)
    limited = error_json(errors.RateLimited("x", retry_after=0.25))["error"]
    assert isinstance(limited, dict)
    assert limited["details"][1] == {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "0.250s",
    }
    found = error_json(errors.NotFound("x", metadata={"n": 3}))["error"]
    assert isinstance(found, dict) and found["details"][0]["metadata"] == {"n": "3"}
    plain = error_json(errors.NotFound("x"))["error"]
    assert isinstance(plain, dict) and plain["details"][0]["metadata"] == {}


def test_a_body_over_the_limit_is_413_and_keeps_its_code() -> None:
    error = errors.InvalidArgument("too big", reason=Reason.REQUEST_TOO_LARGE)
    assert http_status(error) == 413 and grpc_code(error) is grpc.StatusCode.INVALID_ARGUMENT
    body = error_json(error)["error"]
    assert isinstance(body, dict) and (body["code"], body["status"]) == (413, "INVALID_ARGUMENT")
