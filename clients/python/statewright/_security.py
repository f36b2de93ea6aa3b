"""How both clients connect securely: TLS material, bearer tokens, and the environment.

A client settles its connection once, at construction (:func:`settle`): the address, TLS
(a CA, and a certificate and key for mTLS) and a token, each given explicitly or read from
``STATEWRIGHT_*`` variables. The token is not part of the channel: it goes as
``authorization: Bearer <token>`` call metadata on every call, which works the same over
TLS and over a plaintext loopback connection, on a channel the client built or one it was
given, for unary calls and streams alike.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeAlias

import grpc

from statewright.errors import Unavailable

ADDRESS_ENV = "STATEWRIGHT_ADDRESS"
TARGET_ENV = "STATEWRIGHT_TARGET"  # the older name of ADDRESS, read when ADDRESS is unset
TOKEN_ENV = "STATEWRIGHT_TOKEN"
TLS_CA_ENV = "STATEWRIGHT_TLS_CA"
TLS_CERT_ENV = "STATEWRIGHT_TLS_CERT"
TLS_KEY_ENV = "STATEWRIGHT_TLS_KEY"
DEFAULT_ADDRESS = "127.0.0.1:50051"

# A cached token is replaced this long before it expires (or halfway through its life, if
# that is sooner), so that no call leaves with a token about to run out in flight.
REFRESH_MARGIN = 30.0

Pem: TypeAlias = str | os.PathLike[str] | bytes
"""A file path, or the PEM bytes themselves."""


@dataclass(frozen=True, slots=True)
class AccessToken:
    """A token from a provider, with when it expires: the client keeps it until shortly
    before then (or until the server refuses it) instead of asking for a new one per call.
    ``expires_at`` None: keep it until the server refuses it."""

    token: str
    expires_at: datetime | None = None

    @classmethod
    def expiring_in(cls, token: str, seconds: float) -> AccessToken:
        """A token that lives ``seconds`` from now (an OAuth answer's ``expires_in``)."""
        return cls(token, datetime.now(UTC) + timedelta(seconds=seconds))


TokenProvider: TypeAlias = Callable[[], str | AccessToken]
"""Called for a call's token: a str is used for that call only; an AccessToken is kept."""
AsyncTokenProvider: TypeAlias = Callable[[], Awaitable[str | AccessToken]]
"""A coroutine function giving the token (AsyncClient only)."""
TokenOption: TypeAlias = str | TokenProvider | AsyncTokenProvider


class InsecureTokenError(ValueError):
    """A token would go in plaintext to ``address``, which is not this machine's."""

    def __init__(self, address: str) -> None:
        super().__init__(
            f"refusing to send a token in plaintext to {address}: turn TLS on "
            f"(tls=True, or a CA with tls_ca= or ${TLS_CA_ENV}), or pass insecure=True "
            "to send it unencrypted anyway"
        )
        self.address = address


class Tokens:
    """Each call's bearer token: static, or from a provider, cached as the provider says.

    Safe to use from many threads (the blocking worker's) or from one event loop; the
    provider is called by one caller at a time.
    """

    def __init__(self, source: TokenOption) -> None:
        if isinstance(source, str):
            _check_token(source, "token")
            self._static: str | None = source
            self._provider: TokenProvider | AsyncTokenProvider | None = None
        elif callable(source):
            self._static = None
            self._provider = source
        else:
            raise TypeError(f"token must be a str or a callable, not {type(source).__name__}")
        self._cached: str | None = None
        self._fresh_until = 0.0  # monotonic
        self._lock = threading.Lock()
        self._async_lock: asyncio.Lock | None = None

    @property
    def is_async(self) -> bool:
        return self._provider is not None and _is_coroutine_function(self._provider)

    def get(self) -> str:
        """The token for a call about to start (blocking)."""
        if self._static is not None:
            return self._static
        with self._lock:
            cached = self._still_fresh()
            if cached is not None:
                return cached
            answer = self._ask()
            if inspect.isawaitable(answer):
                _discard(answer)
                raise TypeError("a coroutine token provider needs statewright.aio.AsyncClient")
            return self._keep(answer)

    async def get_async(self) -> str:
        """The token for a call about to start, on the event loop."""
        if self._static is not None:
            return self._static
        cached = self._still_fresh()
        if cached is not None:
            return cached
        if self._async_lock is None:
            self._async_lock = asyncio.Lock()
        async with self._async_lock:
            cached = self._still_fresh()  # another call may have refreshed it meanwhile
            if cached is not None:
                return cached
            answer = self._ask()
            if inspect.isawaitable(answer):
                try:
                    answer = await answer
                except Exception as exc:
                    raise _provider_failed(exc) from exc
            return self._keep(answer)

    def invalidate(self) -> None:
        """Forgets the cached token: the server refused it."""
        with self._lock:
            self._cached = None
            self._fresh_until = 0.0

    def _still_fresh(self) -> str | None:
        if self._cached is not None and time.monotonic() < self._fresh_until:
            return self._cached
        return None

    def _ask(self) -> object:
        assert self._provider is not None
        try:
            return self._provider()
        except Exception as exc:
            raise _provider_failed(exc) from exc

    def _keep(self, answer: object) -> str:
        if isinstance(answer, AccessToken):
            _check_token(answer.token, "the token provider's AccessToken")
            self._cached = answer.token
            self._fresh_until = _fresh_until(answer.expires_at)
            return answer.token
        if isinstance(answer, str):
            _check_token(answer, "the token provider's answer")
            self._cached = None
            return answer
        raise TypeError(
            f"a token provider returns a str or an AccessToken, not {type(answer).__name__}"
        )


def _fresh_until(expires_at: datetime | None) -> float:
    if expires_at is None:
        return math.inf
    if expires_at.tzinfo is None:
        raise ValueError("AccessToken.expires_at needs a time zone (datetime.now(UTC) + ...)")
    left = (expires_at - datetime.now(UTC)).total_seconds()
    return time.monotonic() + left - min(REFRESH_MARGIN, max(left, 0.0) / 2)


def _provider_failed(exc: Exception) -> Unavailable:
    # Like a gRPC call-credentials plugin that fails: the call does not start, and the
    # failure is a transient one, so that a worker backs off and asks again.
    return Unavailable(
        f"the token provider failed: {type(exc).__name__}: {exc}",
        code=grpc.StatusCode.UNAVAILABLE,
    )


def _check_token(token: str, what: str) -> None:
    if not isinstance(token, str):
        raise TypeError(f"{what} must be a str, not {type(token).__name__}")
    if not token or token != token.strip() or "\n" in token or "\r" in token or "\0" in token:
        raise ValueError(f"{what} must be non-empty, with no surrounding space or line breaks")


def _discard(awaitable: object) -> None:
    close = getattr(awaitable, "close", None)  # a coroutine never awaited warns unless closed
    if callable(close):
        close()


def _is_coroutine_function(function: object) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 (a callable object's method)
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


# --- addresses -------------------------------------------------------------------------


def is_loopback(target: str) -> bool:
    """True when ``target`` (a gRPC target) can only be this machine: ``localhost``, a
    loopback IP, or a Unix socket. Names are not resolved: only what the text says counts.
    """
    text = target.strip()
    if text.startswith(("unix:", "unix-abstract:")):
        return True
    for scheme in ("dns:///", "dns:", "ipv4:", "ipv6:"):
        if text.startswith(scheme):
            text = text[len(scheme) :]
            break
    if text.startswith("["):
        host = text[1 : text.find("]")] if "]" in text else text[1:]
    elif text.count(":") == 1:
        host = text.partition(":")[0]
    else:
        host = text  # a bare name, or a bare IPv6 address
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- settling the connection -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connection:
    """What a client connects with, once every option and variable is settled."""

    target: str
    credentials: grpc.ChannelCredentials | None  # None: plaintext
    tokens: Tokens | None


def settle(
    target: str | None,
    *,
    tls: bool | None,
    tls_ca: Pem | None,
    tls_cert: Pem | None,
    tls_key: Pem | None,
    token: TokenOption | None,
    insecure: bool,
    credentials: grpc.ChannelCredentials | None,
    own_channel: bool,
    environ: Mapping[str, str] | None,
) -> Connection:
    """Explicit options first, then the environment (``environ``, default ``os.environ``).

    TLS is on when ``tls`` says so, or (``tls`` None) when a CA, certificate or key is
    given or set; without a CA the system's roots verify the server. With a ready channel
    (``own_channel`` False) nothing is read from the environment: the channel's owner chose
    how it connects, and only an explicit token is added to its calls.
    """
    env: Mapping[str, str] = (os.environ if environ is None else environ) if own_channel else {}

    def variable(name: str) -> str | None:
        return env.get(name) or None  # set but empty counts as unset

    address = target or variable(ADDRESS_ENV) or variable(TARGET_ENV) or DEFAULT_ADDRESS
    given = {"tls_ca": tls_ca, "tls_cert": tls_cert, "tls_key": tls_key}
    explicit = {name: value for name, value in given.items() if value is not None}
    if explicit and not own_channel:
        raise ValueError(f"{', '.join(explicit)}: not with a ready channel (it has its own)")
    if explicit and credentials is not None:
        raise ValueError(f"{', '.join(explicit)}: give these or credentials, not both")
    if explicit and tls is False:
        raise ValueError(f"{', '.join(explicit)}: TLS files given with tls=False")
    if credentials is not None and tls is False:
        raise ValueError("credentials are TLS credentials: not with tls=False")

    channel_credentials = credentials
    if own_channel and credentials is None and tls is not False:
        files: dict[str, tuple[Pem, str]] = {
            name: (value, name) for name, value in explicit.items()
        }
        if not explicit:  # the environment's TLS only when none is given explicitly
            for name, variable_name in (
                ("tls_ca", TLS_CA_ENV),
                ("tls_cert", TLS_CERT_ENV),
                ("tls_key", TLS_KEY_ENV),
            ):
                value = variable(variable_name)
                if value is not None:
                    files[name] = (value, variable_name)
        if files or tls:
            channel_credentials = tls_credentials(
                ca=files.get("tls_ca"), cert=files.get("tls_cert"), key=files.get("tls_key")
            )

    if token is None and own_channel:
        token = variable(TOKEN_ENV)
    tokens = Tokens(token) if token is not None else None
    secure = channel_credentials is not None
    if insecure and secure:
        raise ValueError(
            "insecure=True lets a token go over plaintext; this connection uses TLS "
            "(it does not turn off certificate checks)"
        )
    plaintext_token = tokens is not None and own_channel and not secure
    if plaintext_token and not insecure and not is_loopback(address):
        raise InsecureTokenError(address)
    return Connection(address, channel_credentials, tokens)


def tls_credentials(
    *,
    ca: tuple[Pem, str] | None,
    cert: tuple[Pem, str] | None,
    key: tuple[Pem, str] | None,
) -> grpc.ChannelCredentials:
    """Channel credentials from (value, where-it-came-from) pairs; a certificate needs its
    key and the other way round."""
    if (cert is None) != (key is None):
        have, missing = (cert, "key") if key is None else (key, "certificate")
        assert have is not None
        raise ValueError(f"{have[1]}: mTLS needs a client certificate and its key: no {missing}")
    return grpc.ssl_channel_credentials(
        root_certificates=_pem(*ca) if ca is not None else None,
        private_key=_pem(*key) if key is not None else None,
        certificate_chain=_pem(*cert) if cert is not None else None,
    )


def _pem(value: Pem, where: str) -> bytes:
    if isinstance(value, bytes):
        data = value
    else:
        path = Path(value)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ValueError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    # gRPC would only fail at the handshake, with a message that names no file.
    if b"-----BEGIN " not in data:
        raise ValueError(f"{where}: not PEM (no -----BEGIN line)")
    return data
