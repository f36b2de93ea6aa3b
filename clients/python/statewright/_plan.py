"""How :class:`statewright.Client` and :class:`statewright.AsyncClient` share one implementation.

Each client method is written once, as a *plan*: a generator that does no I/O itself. When it
needs the network or the clock it yields an *effect* (:class:`Unary`, :class:`OpenStream`,
:class:`Receive`, :class:`Sleep`) and is sent back the outcome, or has the call's
:class:`~statewright.errors.StatewrightError` raised at that ``yield``. A method that produces
many results (a watch, a listing) yields them too, between its effects.

A driver carries the effects out: :class:`Blocking` by blocking, :class:`Awaiting` by awaiting.
The decorators :func:`returning` and :func:`yielding` turn a plan into a method of both
clients, with the plan's parameters and docstring: one place to write, or change, an RPC.
"""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from types import MethodType
from typing import Any, Concatenate, Generic, Never, ParamSpec, TypeAlias, TypeVar, overload

import grpc
import grpc.aio
from google.protobuf.message import Message
from opentelemetry.context import Context

from statewright import _common, _security, _tracing
from statewright.errors import StatewrightError, from_rpc_error
from statewright.v1 import (
    batch_service_pb2,
    batch_service_pb2_grpc,
    schedule_service_pb2,
    schedule_service_pb2_grpc,
    task_service_pb2,
    task_service_pb2_grpc,
    workflow_service_pb2,
)
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")
_E = TypeVar("_E")
_Sync = TypeVar("_Sync")
_Async = TypeVar("_Async")
_Channel = TypeVar("_Channel", grpc.Channel, grpc.aio.Channel)


# --- effects: what a plan asks its driver to do -----------------------------------------


@dataclass(frozen=True, slots=True)
class Unary:
    """Call unary ``method`` once; the outcome is its response message.

    Without a ``timeout`` the deadline is the client's default, else the service config's.
    """

    method: str
    request: Message
    timeout: float | None
    # The trace context the call carries (None: the caller's current one).
    trace: Context | None = None


@dataclass(frozen=True, slots=True)
class OpenStream:
    """Open server-streaming ``method``; the outcome is the call, to :class:`Receive` from.

    ``timeout`` bounds the whole stream; None means no deadline. The plan ends the call with
    ``call.cancel()``, which neither gRPC API blocks on, so it can do so in a ``finally``.
    """

    method: str
    request: Message
    timeout: float | None


@dataclass(frozen=True, slots=True)
class Receive:
    """The next message of an open stream; the outcome is None once the stream ended OK."""

    call: Any  # the outcome of the OpenStream: a grpc or a grpc.aio call object


@dataclass(frozen=True, slots=True)
class Sleep:
    """Pause; the outcome is None."""

    seconds: float


Effect: TypeAlias = Unary | OpenStream | Receive | Sleep
Metadata: TypeAlias = tuple[tuple[str, str], ...]

# A plan that returns one result, and one that yields its results as it goes.
Plan: TypeAlias = Generator[Effect, Any, _R]
Feed: TypeAlias = Generator[Effect | _T, Any, None]


class Run(Generic[_T, _R]):
    """A plan being carried out. Iterating it gives the plan's steps (effects, and results
    of a feed); the driver answers each effect before it takes the next step."""

    result: _R
    """What the plan returned, once iteration stopped."""

    def __init__(self, plan: Generator[Effect | _T, Any, _R]) -> None:
        self._plan = plan
        self._outcome: Any = None
        self._error: StatewrightError | None = None

    def __iter__(self) -> Run[_T, _R]:
        return self

    def __next__(self) -> Effect | _T:
        outcome, error = self._outcome, self._error
        self._outcome, self._error = None, None
        try:
            return self._plan.send(outcome) if error is None else self._plan.throw(error)
        except StopIteration as stop:
            self.result = stop.value
            raise

    def answer(self, perform: Callable[[_E], Any], effect: _E) -> None:
        """Carries out ``effect``; a failed call (or a typed error the driver raises itself)
        is thrown into the plan at its next step."""
        try:
            self._outcome = perform(effect)
        except grpc.RpcError as exc:
            self._error = from_rpc_error(exc)
        except StatewrightError as exc:
            self._error = exc

    async def answer_async(
        self, perform: Callable[[_E], Coroutine[Any, Any, Any]], effect: _E
    ) -> None:
        try:
            self._outcome = await perform(effect)
        except grpc.RpcError as exc:
            self._error = from_rpc_error(exc)
        except StatewrightError as exc:
            self._error = exc

    def close(self) -> None:
        """Ends the plan early, running its ``finally`` blocks (a stream's cancel)."""
        self._plan.close()


# --- drivers: what each client adds to the plans -----------------------------------------


class Driver(ABC, Generic[_Channel]):
    """What both clients hold and how they are made: the target, the channel and its stub,
    the default deadline, the metadata sent with every call, and each call's token."""

    def __init__(
        self,
        target: str | None = None,
        *,
        tls: bool | None = None,
        tls_ca: _security.Pem | None = None,
        tls_cert: _security.Pem | None = None,
        tls_key: _security.Pem | None = None,
        token: _security.TokenOption | None = None,
        insecure: bool = False,
        credentials: grpc.ChannelCredentials | None = None,
        channel: _Channel | None = None,
        timeout: float | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        options: Sequence[tuple[str, object]] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        connection = _security.settle(
            target,
            tls=tls,
            tls_ca=tls_ca,
            tls_cert=tls_cert,
            tls_key=tls_key,
            token=token,
            insecure=insecure,
            credentials=credentials,
            own_channel=channel is None,
            environ=environ,
        )
        self._tokens = connection.tokens
        if self._tokens is not None:
            self._check_tokens(self._tokens)
            if any(key.lower() == "authorization" for key, _ in metadata):
                raise ValueError("give a token or an authorization metadata entry, not both")
        self.target = connection.target
        self._owns_channel = channel is None
        if channel is None:
            channel = self._open(connection.credentials, _common.channel_options(options))
        self._channel: _Channel = channel
        self._rpcs = _rpcs(channel)
        # What this client can receive in one answer: polls ask the server to send no more.
        self.receive_limit = _common.receive_limit(options)
        self._timeout = timeout
        # A sequence of pairs is what both gRPC APIs accept (grpc.aio converts it itself).
        self._metadata = tuple(metadata)

    @abstractmethod
    def _open(
        self, credentials: grpc.ChannelCredentials | None, options: _common.ChannelOptions
    ) -> _Channel: ...

    def _check_tokens(self, tokens: _security.Tokens) -> None:
        """Refuses a token source this driver cannot call."""

    def _deadline(self, effect: Unary | OpenStream) -> float | None:
        if isinstance(effect, OpenStream) or effect.timeout is not None:
            return effect.timeout
        if self._timeout is not None:
            return self._timeout
        return _common.method_timeouts().get(effect.method)

    def _with_token(self, token: str | None) -> Metadata:
        if token is None:
            return self._metadata
        return (*self._metadata, ("authorization", f"Bearer {token}"))

    def _invoke(
        self, effect: Unary | OpenStream, metadata: Metadata, *, future: bool = False
    ) -> Any:
        """Starts the call with ``metadata`` (see ``_call_metadata``): a response (blocking
        unary), an awaitable, or a stream call.

        With ``future`` (blocking channels only) a unary call starts as a ``grpc.Future``,
        so that it can be abandoned with ``cancel()`` from another thread.
        """
        rpc = self._rpcs[effect.method]
        if future:
            rpc = rpc.future
        trace = effect.trace if isinstance(effect, Unary) else None
        metadata = _tracing.with_trace(metadata, trace)
        return rpc(effect.request, timeout=self._deadline(effect), metadata=metadata)

    def _refused(self, error: grpc.RpcError) -> None:
        """After a failed call: a cached token the server did not accept is not used again
        (the provider is asked for a new one at the next call)."""
        if self._tokens is None:
            return
        code = getattr(error, "code", None)
        if callable(code) and code() is grpc.StatusCode.UNAUTHENTICATED:
            self._tokens.invalidate()


def _rpcs(channel: grpc.Channel | grpc.aio.Channel) -> dict[str, Any]:
    """Every RPC of the services, by method name (unique across them), bound to channel."""
    rpcs: dict[str, Any] = {}
    services = (
        (pb_grpc.WorkflowServiceStub, workflow_service_pb2.DESCRIPTOR, "WorkflowService"),
        (task_service_pb2_grpc.TaskServiceStub, task_service_pb2.DESCRIPTOR, "TaskService"),
        (
            schedule_service_pb2_grpc.ScheduleServiceStub,
            schedule_service_pb2.DESCRIPTOR,
            "ScheduleService",
        ),
        (batch_service_pb2_grpc.BatchServiceStub, batch_service_pb2.DESCRIPTOR, "BatchService"),
    )
    for stub_class, file, service in services:
        stub = stub_class(channel)
        for method in file.services_by_name[service].methods:
            rpcs[method.name] = getattr(stub, method.name)
    return rpcs


class Blocking(Driver[grpc.Channel]):
    """Runs plans by blocking on each effect in turn."""

    def _check_tokens(self, tokens: _security.Tokens) -> None:
        if tokens.is_async:
            raise TypeError("a coroutine token provider needs statewright.aio.AsyncClient")

    def _call_metadata(self) -> Metadata:
        """The metadata for a call about to start, with the current token."""
        return self._with_token(self._tokens.get() if self._tokens is not None else None)

    @abstractmethod
    def _perform(self, effect: Effect) -> Any: ...

    def _run(self, plan: Plan[_R]) -> _R:
        run: Run[Never, _R] = Run(plan)
        with closing(run):
            for effect in run:
                run.answer(self._perform, effect)
        return run.result

    def _iterate(self, plan: Feed[_T]) -> Generator[_T, None, None]:
        # Closing this generator early closes the plan, which ends its stream.
        with closing(run := Run(plan)):
            for step in run:
                if isinstance(step, Effect):
                    run.answer(self._perform, step)
                else:
                    yield step


class Awaiting(Driver[grpc.aio.Channel]):
    """Runs plans by awaiting each effect in turn."""

    async def _call_metadata(self) -> Metadata:
        """The metadata for a call about to start, with the current token."""
        if self._tokens is None:
            return self._metadata
        return self._with_token(await self._tokens.get_async())

    @abstractmethod
    async def _perform(self, effect: Effect) -> Any: ...

    async def _run(self, plan: Plan[_R]) -> _R:
        run: Run[Never, _R] = Run(plan)
        with closing(run):
            for effect in run:
                await run.answer_async(self._perform, effect)
        return run.result

    async def _iterate(self, plan: Feed[_T]) -> AsyncGenerator[_T, None]:
        with closing(run := Run(plan)):
            for step in run:
                if isinstance(step, Effect):
                    await run.answer_async(self._perform, step)
                else:
                    yield step


# --- methods: a plan as a method of both clients -----------------------------------------


class Method(Generic[_P, _Sync, _Async]):
    """A plan as a method: on a :class:`Blocking` client it returns ``_Sync``, on an
    :class:`Awaiting` one ``_Async``. On a client class it is a plain function, so that
    ``help()`` and ``inspect`` see an ordinary method. On a class that is neither (the
    operations class itself) it is the plan: ``Operations.get(client, name)`` makes the
    generator, for another plan to ``yield from``."""

    def __init__(
        self,
        plan: Callable[..., object],
        blocking: Callable[Concatenate[Blocking, _P], _Sync],
        awaiting: Callable[Concatenate[Awaiting, _P], _Async],
    ) -> None:
        self.plan = plan
        self._blocking = _present(blocking, plan)
        self._awaiting = _present(awaiting, plan)

    @overload
    def __get__(self, client: None, owner: type[object]) -> Callable[Concatenate[Any, _P], Any]: ...
    @overload
    def __get__(self, client: Blocking, owner: type[object]) -> Callable[_P, _Sync]: ...
    @overload
    def __get__(self, client: Awaiting, owner: type[object]) -> Callable[_P, _Async]: ...
    def __get__(self, client: object, owner: type[object]) -> Callable[..., object]:
        if issubclass(owner, Awaiting):
            function = self._awaiting
        elif issubclass(owner, Blocking):
            function = self._blocking
        else:
            return self.plan
        return function if client is None else MethodType(function, client)


def returning(
    plan: Callable[Concatenate[Any, _P], Plan[_R]],
) -> Method[_P, _R, Coroutine[Any, Any, _R]]:
    """A method with one result: ``R`` from Client, a coroutine of ``R`` from AsyncClient."""

    def blocking(client: Blocking, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return client._run(plan(client, *args, **kwargs))

    async def awaiting(client: Awaiting, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await client._run(plan(client, *args, **kwargs))

    return Method(plan, blocking, awaiting)


def yielding(
    plan: Callable[Concatenate[Any, _P], Feed[_T]],
) -> Method[_P, Generator[_T, None, None], AsyncGenerator[_T, None]]:
    """A method with many results: a generator from Client, an async one from AsyncClient."""

    def blocking(
        client: Blocking, /, *args: _P.args, **kwargs: _P.kwargs
    ) -> Generator[_T, None, None]:
        return client._iterate(plan(client, *args, **kwargs))

    def awaiting(
        client: Awaiting, /, *args: _P.args, **kwargs: _P.kwargs
    ) -> AsyncGenerator[_T, None]:
        return client._iterate(plan(client, *args, **kwargs))

    return Method(plan, blocking, awaiting)


def _present(function: Any, plan: Callable[..., object]) -> Any:
    """Gives a driver function the plan's name, docstring and parameters (not its return
    annotation, which names the plan's type rather than what the method returns)."""
    functools.update_wrapper(function, plan)
    signature = inspect.signature(plan)
    function.__signature__ = signature.replace(return_annotation=inspect.Signature.empty)
    return function
