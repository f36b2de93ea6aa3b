"""Log configuration: plain text, or one JSON object per line with the workflow id.

A line "concerns a workflow" when it is logged while handling an RPC about one (the RPC
observer sets ``WORKFLOW_ID`` for the handler's task) or when the caller passed
``extra={"workflow_id": ...}`` (the engine does, since its thread serves every workflow).
Either way the JSON object carries a top-level ``workflow_id`` field that log pipelines
can index, instead of an id buried in the message text.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

from statewrightd.context import RPC_METHOD, WORKFLOW_ID, calling

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s%(statewright_caller)s"
# With several server processes (``--processes``) every line names the process it came
# from: ``supervisor`` or the server process's index.
TAGGED_TEXT_FORMAT = (
    "%(asctime)s %(levelname)s [%(statewright_process)s] %(name)s: %(message)s"
    "%(statewright_caller)s"
)


class _Caller(logging.Filter):
    """A line logged while handling a call names the call's principal."""

    def filter(self, record: logging.LogRecord) -> bool:
        principal = calling()
        record.statewright_caller = f" (caller {principal})" if principal is not None else ""
        return True


class _ProcessTag(logging.Filter):
    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag

    def filter(self, record: logging.LogRecord) -> bool:
        record.statewright_process = self.tag
        return True


class _LeftCallSend(logging.Filter):
    """grpc logs, with a traceback, an answer it could not send because the call had
    already ended (``ExecuteBatchError``: a stream's client left, or its deadline passed,
    between a message being produced and being sent). Nothing is lost and nobody waits
    for that answer: the line stays, without the traceback that reads as a server bug."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc_info = record.exc_info
        if exc_info and exc_info[0] is not None and issubclass(exc_info[0], ExecuteBatchError):
            record.msg = f"{record.getMessage()}: the call had already ended"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


# grpc.aio's server logs through this logger (its Cython module's name), which grpc's
# type stubs do not describe.
GRPC_CORE_LOGGER = "grpc._cython.cygrpc"
ExecuteBatchError: type[Exception] = importlib.import_module(GRPC_CORE_LOGGER).ExecuteBatchError


class JsonFormatter(logging.Formatter):
    """Formats a record as a single-line JSON object."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        workflow_id = getattr(record, "workflow_id", None) or WORKFLOW_ID.get()
        if workflow_id:
            entry["workflow_id"] = workflow_id
        process = getattr(record, "statewright_process", None)
        if process is not None:
            entry["process"] = process
        method = RPC_METHOD.get()
        if method:
            entry["rpc_method"] = method
        principal = calling()
        if principal is not None:
            entry["principal"] = principal
        # Lets a log line be joined with its trace when tracing is on.
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            entry["trace_id"] = format(context.trace_id, "032x")
            entry["span_id"] = format(context.span_id, "016x")
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure(level: str, log_format: str, process: str | None = None) -> None:
    """Configure the root logger once for the process (stderr, as before); ``process``
    tags every line (text: in brackets; JSON: a ``process`` field)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Caller())
    if process is not None:
        handler.addFilter(_ProcessTag(process))
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        text = TEXT_FORMAT if process is None else TAGGED_TEXT_FORMAT
        handler.setFormatter(logging.Formatter(text))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    grpc_core = logging.getLogger(GRPC_CORE_LOGGER)
    if not any(isinstance(f, _LeftCallSend) for f in grpc_core.filters):
        grpc_core.addFilter(_LeftCallSend())
