"""The one place where service errors become gRPC statuses.

Every status the server sends carries exactly one ``google.rpc.ErrorInfo`` so that clients
in every language branch on ``reason`` and read dynamic values from ``metadata`` instead
of parsing messages.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from statewrightd import errors

_log = logging.getLogger(__name__)

# Ordered from most to least specific is unnecessary: lookup walks each error's MRO, so the
# nearest mapped ancestor wins (Conflict -> Aborted, not StatewrightError).
_CODES: dict[type[errors.StatewrightError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.Aborted: grpc.StatusCode.ABORTED,
    errors.OutOfRange: grpc.StatusCode.OUT_OF_RANGE,
    errors.Cancelled: grpc.StatusCode.CANCELLED,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.Unimplemented: grpc.StatusCode.UNIMPLEMENTED,
    errors.Internal: grpc.StatusCode.INTERNAL,
    errors.Unknown: grpc.StatusCode.UNKNOWN,
    errors.StatewrightError: grpc.StatusCode.INTERNAL,
}


def grpc_code(error: errors.StatewrightError) -> grpc.StatusCode:
    for cls in type(error).__mro__:
        code = _CODES.get(cls)
        if code is not None:
            return code
    raise AssertionError("StatewrightError is always mapped")


def error_info(error: errors.StatewrightError) -> error_details_pb2.ErrorInfo:
    return error_details_pb2.ErrorInfo(
        reason=error.reason, domain=errors.DOMAIN, metadata=error.metadata
    )


def to_status_proto(error: errors.StatewrightError) -> status_pb2.Status:
    """The ``google.rpc.Status`` for an error; also used for ``Workflow.error``."""
    # Deterministic, so that one error is the same bytes however its metadata map was
    # built (JSON from the store comes back in the database's key order).
    detail = any_pb2.Any(
        type_url="type.googleapis.com/google.rpc.ErrorInfo",
        value=error_info(error).SerializeToString(deterministic=True),
    )
    code: int = grpc_code(error).value[0]
    details = [detail]
    if isinstance(error, errors.RateLimited):
        retry = error_details_pb2.RetryInfo()
        retry.retry_delay.FromNanoseconds(max(1, round(error.retry_after * 1e9)))
        details.append(any_pb2.Any())
        details[-1].Pack(retry)
    return status_pb2.Status(code=code, message=error.message, details=details)


def to_grpc_status(error: errors.StatewrightError) -> grpc.Status:
    return rpc_status.to_status(to_status_proto(error))
