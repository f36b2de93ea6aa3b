"""Typed exceptions from ErrorInfo reasons, with fallbacks by status code."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from statewright import errors


class _FakeCall(grpc.RpcError):
    """What a failed sync call looks like: code, details, trailing metadata."""

    def __init__(
        self, code: grpc.StatusCode, message: str, trailers: tuple[tuple[str, bytes], ...] = ()
    ) -> None:
        self._code = code
        self._message = message
        self._trailers = trailers

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._message

    def trailing_metadata(self) -> Any:
        return self._trailers


def _call(code: grpc.StatusCode, reason: str, metadata: dict[str, str]) -> _FakeCall:
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=reason, domain=errors.DOMAIN, metadata=metadata))
    status = status_pb2.Status(code=code.value[0], message="m", details=[detail])
    return _FakeCall(code, "m", (("grpc-status-details-bin", status.SerializeToString()),))


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (grpc.StatusCode.ABORTED, "REVISION_MISMATCH", errors.RevisionMismatch),
        (grpc.StatusCode.ABORTED, "WORKFLOW_BUSY", errors.WorkflowBusy),
        (grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND", errors.WorkflowNotFound),
        (grpc.StatusCode.NOT_FOUND, "DEFINITION_NOT_FOUND", errors.DefinitionNotFound),
        (grpc.StatusCode.ALREADY_EXISTS, "WORKFLOW_ALREADY_EXISTS", errors.WorkflowAlreadyExists),
        (grpc.StatusCode.FAILED_PRECONDITION, "RECOVERY_REQUIRED", errors.RecoveryRequired),
        (grpc.StatusCode.FAILED_PRECONDITION, "NOT_WAITING", errors.NotWaiting),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "OVERLOADED", errors.Overloaded),
        (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_EVENT", errors.UnknownEvent),
        (grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN", errors.ShuttingDown),
        (grpc.StatusCode.FAILED_PRECONDITION, "LEASE_SUPERSEDED", errors.LeaseSuperseded),
        (grpc.StatusCode.FAILED_PRECONDITION, "TASK_CANCELLED", errors.TaskCancelled),
        (grpc.StatusCode.NOT_FOUND, "TASK_NOT_FOUND", errors.TaskNotFound),
        (grpc.StatusCode.ABORTED, "LEASE_SUPERSEDED", errors.Aborted),
        # Unknown reasons (a newer server) fall back to the class for the code.
        (grpc.StatusCode.ABORTED, "SOME_NEW_REASON", errors.Aborted),
        (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_INPUT", errors.InvalidArgument),
        (grpc.StatusCode.DATA_LOSS, "WHATEVER", errors.StatewrightError),
        # A known reason under an unexpected code keeps the code's class.
        (grpc.StatusCode.INTERNAL, "REVISION_MISMATCH", errors.Internal),
    ],
)
def test_reason_and_code_select_the_class(
    code: grpc.StatusCode, reason: str, cls: type[errors.StatewrightError]
) -> None:
    exc = errors.from_rpc_error(_call(code, reason, {"k": "v"}))
    assert type(exc) is cls
    assert exc.code is code
    assert exc.reason == reason
    assert exc.domain == errors.DOMAIN
    assert exc.metadata == {"k": "v"}


def test_revision_mismatch_exposes_revisions_as_ints() -> None:
    exc = errors.from_rpc_error(
        _call(
            grpc.StatusCode.ABORTED,
            "REVISION_MISMATCH",
            {"actual_revision": "1", "expected_revision": "99", "workflow_id": "w"},
        )
    )
    assert isinstance(exc, errors.RevisionMismatch)
    assert isinstance(exc, errors.Aborted)
    assert exc.actual_revision == 1
    assert exc.expected_revision == 99
    assert str(exc) == "ABORTED/REVISION_MISMATCH: m"


def test_status_without_error_info_maps_by_code_with_empty_reason() -> None:
    exc = errors.from_rpc_error(_FakeCall(grpc.StatusCode.UNAVAILABLE, "connection refused"))
    assert type(exc) is errors.Unavailable
    assert exc.reason == ""
    assert exc.metadata == {}
    assert exc.to_dict() == {
        "code": "UNAVAILABLE",
        "reason": "",
        "domain": "",
        "message": "connection refused",
        "metadata": {},
    }


def test_garbage_status_details_are_ignored() -> None:
    call = _FakeCall(
        grpc.StatusCode.NOT_FOUND, "m", (("grpc-status-details-bin", b"\xff\xff\xff"),)
    )
    exc = errors.from_rpc_error(call)
    assert type(exc) is errors.NotFound
    assert exc.reason == ""


def test_not_an_int_revision_reads_as_none() -> None:
    exc = errors.RevisionMismatch(
        "m", code=grpc.StatusCode.ABORTED, metadata={"actual_revision": "x"}
    )
    assert exc.actual_revision is None


def test_security_refusals_are_typed_by_code_and_reason() -> None:
    unknown = errors.from_rpc_error(_call(grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED", {}))
    assert type(unknown) is errors.Unauthenticated
    denied = errors.from_rpc_error(
        _call(grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED", {})
    )
    assert type(denied) is errors.PermissionDenied
    assert denied.reason == "PERMISSION_DENIED" and denied.retry_delay is None
    bare = errors.from_rpc_error(_FakeCall(grpc.StatusCode.PERMISSION_DENIED, "m"))
    assert type(bare) is errors.PermissionDenied
    assert "retry_delay" not in bare.to_dict()


def test_a_retry_info_beside_the_error_info_gives_the_delay() -> None:
    info, retry = any_pb2.Any(), any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason="RATE_LIMITED", domain=errors.DOMAIN))
    delay = error_details_pb2.RetryInfo()
    delay.retry_delay.FromNanoseconds(1_500_000_000)
    retry.Pack(delay)
    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    status = status_pb2.Status(code=code.value[0], message="slow down", details=[info, retry])
    call = _FakeCall(code, "slow down", (("grpc-status-details-bin", status.SerializeToString()),))
    exc = errors.from_rpc_error(call)
    assert type(exc) is errors.RateLimited
    assert isinstance(exc, errors.ResourceExhausted)
    assert exc.retry_delay == 1.5
    assert exc.to_dict()["retry_delay"] == 1.5
    # The same reason under another code keeps the code's class, with the delay still read.
    status.code = grpc.StatusCode.UNAVAILABLE.value[0]
    other = errors.from_rpc_error(
        _FakeCall(
            grpc.StatusCode.UNAVAILABLE,
            "m",
            (("grpc-status-details-bin", status.SerializeToString()),),
        )
    )
    assert type(other) is errors.Unavailable and other.retry_delay == 1.5
