"""The one place where service errors become gRPC statuses.

Every status the server sends carries exactly one ``google.rpc.ErrorInfo`` so that clients
in every language branch on ``reason`` and read dynamic values from ``metadata`` instead
of parsing messages.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf import any_pb2, json_format
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from statewrightd import context as caller
from statewrightd import errors
from statewrightd.definitions.problems import suggestion
from statewrightd.reasons import Reason

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
    return rpc_status.to_status(to_status_proto(for_caller(error)))


def for_caller(error: errors.StatewrightError) -> errors.StatewrightError:
    """``error`` as the current caller may see it: without a suggested definition name its
    grants do not reach (a scoped caller learns no name it could not list)."""
    meant = error.metadata.get("did_you_mean")
    if (
        meant is None
        or error.reason != Reason.DEFINITION_NOT_FOUND
        or not isinstance(error, errors.NotFound)
        or caller.may_know_definition(meant)
    ):
        return error
    metadata = {k: v for k, v in error.metadata.items() if k != "did_you_mean"}
    message = error.message.removesuffix(suggestion(meant))
    return type(error)(message, reason=error.reason, metadata=metadata)


# The HTTP status of each gRPC code, as google/rpc/code.proto maps them (Google's HTTP/JSON
# APIs answer so): the HTTP API (statewrightd.console) answers with these.
HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}

# Reasons HTTP has a more exact status for than their code's: a body over the size limit
# is 413 to every HTTP client and proxy (its code stays INVALID_ARGUMENT, as Google's APIs
# answer an oversized request).
HTTP_STATUS_BY_REASON: dict[str, int] = {Reason.REQUEST_TOO_LARGE: 413}


def http_status(error: errors.StatewrightError) -> int:
    return HTTP_STATUS_BY_REASON.get(error.reason) or HTTP_STATUS[grpc_code(error)]


def error_json(error: errors.StatewrightError) -> dict[str, object]:
    """An error as the HTTP API answers it, in Google's HTTP/JSON error shape:
    ``{"error": {"code": HTTP status, "message", "status": gRPC code name, "details"}}``,
    whose details are the gRPC status's own (the ErrorInfo, and RetryInfo when rate
    limited) in protobuf's JSON, the same values a gRPC client reads."""
    error = for_caller(error)
    status = json_format.MessageToDict(
        to_status_proto(error), always_print_fields_with_no_presence=True
    )
    return {
        "error": {
            "code": http_status(error),
            "message": error.message,
            "status": grpc_code(error).name,
            "details": status["details"],
        }
    }
