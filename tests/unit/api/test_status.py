"""Every service error maps to one canonical gRPC code with exactly one ErrorInfo."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from statewrightd import context as caller
from statewrightd import errors
from statewrightd.api.status import error_json, grpc_code, to_grpc_status

MAPPING: list[tuple[type[errors.StatewrightError], grpc.StatusCode, str]] = [
    (errors.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
    (errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS"),
    (errors.Aborted, grpc.StatusCode.ABORTED, "ABORTED"),
    (errors.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION, "FAILED_PRECONDITION"),
    (errors.ResourceExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED, "OVERLOADED"),
    (errors.Unavailable, grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE"),
    (errors.DeadlineExceeded, grpc.StatusCode.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"),
    (errors.Unimplemented, grpc.StatusCode.UNIMPLEMENTED, "NOT_IMPLEMENTED"),
    (errors.Internal, grpc.StatusCode.INTERNAL, "INTERNAL"),
    (errors.Unknown, grpc.StatusCode.UNKNOWN, "OUTCOME_UNKNOWN"),
    (errors.StatewrightError, grpc.StatusCode.INTERNAL, "INTERNAL"),
    # Store errors map through the base they extend, with their own reasons.
    (errors.Conflict, grpc.StatusCode.ABORTED, "REVISION_CONFLICT"),
    (errors.RecordNotFound, grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
    (errors.RecordExists, grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS"),
    (errors.SerializationError, grpc.StatusCode.INVALID_ARGUMENT, "UNSERIALIZABLE_VALUE"),
    (errors.StorageUnavailable, grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"),
    (errors.OutcomeUnknown, grpc.StatusCode.UNKNOWN, "OUTCOME_UNKNOWN"),
    (errors.Overloaded, grpc.StatusCode.RESOURCE_EXHAUSTED, "OVERLOADED"),
]


def _infos(status: grpc.Status) -> list[error_details_pb2.ErrorInfo]:
    details = dict(status.trailing_metadata)["grpc-status-details-bin"]
    assert isinstance(details, bytes)
    decoded = status_pb2.Status.FromString(details)
    infos = []
    for any_detail in decoded.details:
        info = error_details_pb2.ErrorInfo()
        assert any_detail.Unpack(info), f"unexpected detail {any_detail.type_url}"
        infos.append(info)
    return infos


@pytest.mark.parametrize(
    ("cls", "code", "reason"), MAPPING, ids=lambda x: getattr(x, "__name__", str(x))
)
def test_each_error_class_maps_to_its_code_with_one_error_info(
    cls: type[errors.StatewrightError], code: grpc.StatusCode, reason: str
) -> None:
    error = cls("something went wrong", metadata={"workflow_id": "w-1", "revision": 3})
    assert grpc_code(error) is code
    status = to_grpc_status(error)
    assert status.code is code
    assert status.details == "something went wrong"
    infos = _infos(status)
    assert len(infos) == 1
    assert infos[0].domain == "statewright.dev"
    assert infos[0].reason == reason
    assert dict(infos[0].metadata) == {"workflow_id": "w-1", "revision": "3"}


def test_explicit_reason_overrides_the_default() -> None:
    error = errors.Aborted("stale", reason="REVISION_MISMATCH", metadata={"actual_revision": 7})
    info = _infos(to_grpc_status(error))[0]
    assert info.reason == "REVISION_MISMATCH"
    assert info.metadata["actual_revision"] == "7"


def test_conflict_carries_the_actual_revision() -> None:
    error = errors.Conflict("lost the race", actual_revision=12)
    assert error.actual_revision == 12
    assert _infos(to_grpc_status(error))[0].metadata["actual_revision"] == "12"


def test_metadata_values_are_stringified_predictably() -> None:
    error = errors.InvalidArgument("bad", metadata={"flag": True, "off": False, "n": 1.5})
    assert error.metadata == {"flag": "true", "off": "false", "n": "1.5"}


@pytest.mark.parametrize(
    "reason", ["lower", "Mixed_Case", "TRAILING_", "_LEADING", "WITH SPACE", "X"]
)
def test_reasons_must_be_upper_snake(reason: str) -> None:
    with pytest.raises(ValueError, match="UPPER_SNAKE"):
        errors.InvalidArgument("bad", reason=reason)


def test_unexpected_exceptions_become_internal_without_leaking_text() -> None:
    error = errors.Internal.wrapping(KeyError("secret-table-name"))
    status = to_grpc_status(error)
    assert status.code is grpc.StatusCode.INTERNAL
    assert "secret" not in status.details
    info = _infos(status)[0]
    assert info.reason == "INTERNAL"
    assert info.metadata["exception"] == "KeyError"


def _in_scope(reaches: Callable[[str], bool] | None, error: errors.StatewrightError) -> Any:
    def answer() -> tuple[grpc.Status, dict[str, object]]:
        caller.set_definition_scope(reaches)
        return to_grpc_status(error), error_json(error)

    return contextvars.copy_context().run(answer)


def _http(body: dict[str, object]) -> Any:
    return body["error"]


def test_a_suggested_definition_outside_the_callers_scope_is_left_out() -> None:
    error = errors.NotFound(
        "definition 'mail-review-loop' not found; did you mean 'review-loop'?",
        reason="DEFINITION_NOT_FOUND",
        metadata={"definition": "mail-review-loop", "did_you_mean": "review-loop"},
    )
    status, body = _in_scope(lambda name: name.startswith("mail-"), error)
    assert _http(body)["message"] == "definition 'mail-review-loop' not found"
    assert _http(body)["details"][0]["metadata"] == {"definition": "mail-review-loop"}
    assert status.details == "definition 'mail-review-loop' not found"
    sent = status_pb2.Status.FromString(dict(status.trailing_metadata)["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    assert sent.details[0].Unpack(info) and "did_you_mean" not in info.metadata
    # A caller whose grants reach it, or one with no scope at all, sees it.
    for reaches in (lambda name: name.startswith("review-"), None):
        status, body = _in_scope(reaches, error)
        assert _http(body)["details"][0]["metadata"]["did_you_mean"] == "review-loop"
        assert status.details.endswith("did you mean 'review-loop'?")
