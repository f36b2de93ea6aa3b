"""Decorators that turn service errors raised by RPC handlers into gRPC statuses.

Handlers raise ``StatewrightError``; only these wrappers talk to ``context.abort``. An
unexpected exception becomes INTERNAL with an ErrorInfo rather than grpc's bare UNKNOWN.
Every call passes its servicer's door first (``door.Door``): a request that did not
decode, or a call that arrives while the server drains, is answered there.

The HTTP API calls the same handlers without these wrappers (``undecorated``): it passes
the door itself and maps errors to HTTP answers, giving a ``CallContext`` of its own.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

import grpc

from statewrightd import errors
from statewrightd.api.door import Door
from statewrightd.api.status import to_grpc_status

_log = logging.getLogger(__name__)


class Guarded(Protocol):
    """A servicer: its calls pass its door."""

    @property
    def door(self) -> Door: ...


S = TypeVar("S", bound=Guarded)
Req = TypeVar("Req")
Resp = TypeVar("Resp")

Context = grpc.aio.ServicerContext[Any, Any]


class CallContext(Protocol):
    """What a handler reads of its call's context: a gRPC call's, or an HTTP call's."""

    def time_remaining(self) -> float | None: ...


def budget(context: CallContext) -> float | None:
    """The caller's remaining time, which its step may use; None without a deadline."""
    remaining = context.time_remaining()
    return remaining if remaining is not None and remaining < 1e9 else None


async def abort(context: Context, error: errors.StatewrightError) -> None:
    try:
        await context.abort_with_status(to_grpc_status(error))
    except grpc.aio.AbortError:
        raise
    except Exception as exc:
        if not context.done():
            raise
        # The call ended while the handler worked (its deadline passed, or its client
        # left): there is no one to answer, and grpc would log the failed send as an
        # error. Ending as a cancelled call is what it is.
        raise asyncio.CancelledError from exc


def _as_service_error(method: str, exc: Exception) -> errors.StatewrightError:
    if isinstance(exc, errors.StatewrightError):
        return exc
    _log.exception("unhandled error in %s", method)
    return errors.Internal.wrapping(exc)


def unary(
    fn: Callable[[S, Req, Context], Awaitable[Resp]],
) -> Callable[[S, Req, Context], Awaitable[Resp]]:
    @functools.wraps(fn)
    async def handler(self: S, request: Req, context: Context) -> Resp:
        door = self.door
        try:
            door.enter(request, context.peer())
        except errors.StatewrightError as exc:
            await abort(context, exc)
            raise AssertionError("abort_with_status always raises") from exc
        try:
            return await fn(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await abort(context, _as_service_error(fn.__name__, exc))
            raise AssertionError("abort_with_status always raises") from exc
        finally:
            door.leave()

    return handler


def server_stream(
    fn: Callable[[S, Req, Context], AsyncIterator[Resp]],
) -> Callable[[S, Req, Context], AsyncIterator[Resp]]:
    @functools.wraps(fn)
    async def handler(self: S, request: Req, context: Context) -> AsyncIterator[Resp]:
        door = self.door
        try:
            door.enter(request, context.peer())
        except errors.StatewrightError as exc:
            await abort(context, exc)
            return
        try:
            async for item in fn(self, request, context):
                yield item
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await abort(context, _as_service_error(fn.__name__, exc))
        finally:
            door.leave()

    return handler


def undecorated(servicer: object, method: str) -> Callable[[Any, CallContext], Any]:
    """The handler of RPC ``method`` of ``servicer`` without ``unary``/``server_stream``
    (the door, the status mapping), bound to the servicer: ``handler(request, context)``
    returns the response (a coroutine) or the response stream (an async iterator)."""
    return functools.partial(inspect.unwrap(getattr(type(servicer), method)), servicer)
