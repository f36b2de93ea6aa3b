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
    """A blocking client for ``statewright.v1.WorkflowService`` and ``TaskService``.

    Every unary call has a deadline (``timeout`` seconds, else the service config's
    per-method timeout) and is retried by gRPC itself, with backoff, only when it fails with
    UNAVAILABLE; mutating calls carry a generated ``request_id`` so such a retry is
    idempotent. Failures raise :class:`statewright.errors.StatewrightError` subclasses typed by
    the ErrorInfo reason.

    ``target`` (host:port) defaults to ``$STATEWRIGHT_ADDRESS``, else ``$STATEWRIGHT_TARGET``,
    else ``127.0.0.1:50051``.

    TLS: ``tls=True`` verifies the server with the system's roots, or with ``tls_ca`` (a
    file path, or PEM bytes); ``tls_cert`` and ``tls_key`` (paths or PEM bytes) add a
    client certificate for mTLS. Any of the three turns TLS on; unset, they come from
    ``$STATEWRIGHT_TLS_CA``, ``$STATEWRIGHT_TLS_CERT`` and ``$STATEWRIGHT_TLS_KEY``, any of
    which set means TLS. ``tls=False`` is plaintext whatever the environment says.

    ``token`` goes as ``authorization: Bearer <token>`` metadata with every call: a str,
    or a provider called before each call, which returns a str (used once) or an
    :class:`~statewright.AccessToken` (kept until shortly before it expires, or until the
    server answers UNAUTHENTICATED). Unset, it is ``$STATEWRIGHT_TOKEN``. A token is never
    sent in plaintext to an address other than this machine's (``localhost``, a loopback
    IP, a Unix socket) unless ``insecure=True``; the client refuses to start instead.

    ``environ`` replaces ``os.environ`` as where the variables are read (``{}``: none).
    ``credentials`` are ready channel credentials, instead of the TLS options. A ready
    ``channel`` (which the client then does not close) is used as it is: nothing is read
    from the environment, and only an explicit ``token`` is added. ``timeout`` replaces
    every unary call's default deadline; ``metadata`` goes with every call; ``options`` are
    channel options, replacing the defaults with the same key.
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
                try:
                    return self._invoke(effect, self._call_metadata())
                except grpc.RpcError as exc:
                    self._refused(exc)
                    raise
            case Receive(call):
                try:
                    return next(call, None)
                except grpc.RpcError as exc:
                    self._refused(exc)
                    raise
            case Sleep(seconds):
                time.sleep(seconds)
        return None
