"""The synchronous Statewright client."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

import grpc

from statewright import _common
from statewright._operations import Operations
from statewright._plan import Blocking, Effect, OpenStream, Receive, Sleep, Unary

__all__ = ["Client"]


class Client(Operations, Blocking):
    """A blocking client for ``statewright.v1.WorkflowService``.

    Every unary call has a deadline (``timeout`` seconds, else the service config's
    per-method timeout) and is retried by gRPC itself, with backoff, only when it fails with
    UNAVAILABLE; mutating calls carry a generated ``request_id`` so such a retry is
    idempotent. Failures raise :class:`statewright.errors.StatewrightError` subclasses typed by
    the ErrorInfo reason.

    ``target`` defaults to ``$STATEWRIGHT_TARGET`` or ``127.0.0.1:50051``. Pass
    ``credentials`` for TLS, or a ready ``channel`` (which the client then does not close).
    ``timeout`` replaces every unary call's default deadline; ``metadata`` goes with every
    call; ``options`` are channel options, replacing the defaults with the same key.
    """

    def close(self) -> None:
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _open(
        self, credentials: grpc.ChannelCredentials | None, options: _common.ChannelOptions
    ) -> grpc.Channel:
        if credentials is None:
            return grpc.insecure_channel(self.target, options=options)
        return grpc.secure_channel(self.target, credentials, options=options)

    def _perform(self, effect: Effect) -> Any:
        match effect:
            case Unary() | OpenStream():
                return self._invoke(effect)
            case Receive(call):
                return next(call, None)
            case Sleep(seconds):
                time.sleep(seconds)
        return None
