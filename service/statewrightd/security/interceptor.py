"""The one interceptor that decides, before any handler runs, whether a call may proceed.

For every call it finds the principal (``authn``), checks that one of the principal's
grants gives the method's role, checks the call's target (a definition name or a task
queue) against the grants' patterns, charges the principal's request rate, and counts its
open watch streams. A target that is named only indirectly (an instance by its id, a task
by its name) is looked up, but only for a principal whose grants are scoped: everyone
else pays nothing for scopes. An instance or task that does not exist is refused like one
out of scope, so that a refusal never says whether it exists.

Unauthenticated calls get UNAUTHENTICATED; calls outside the principal's roles or scopes
get PERMISSION_DENIED; both with one ErrorInfo, as every error.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from statewrightd import errors, visibility
from statewrightd.api import task_requests as tr
from statewrightd.api import validation as v
from statewrightd.api.registration import Continuation, Handler, rewrapped
from statewrightd.api.status import to_grpc_status
from statewrightd.app.wiring import Application
from statewrightd.context import set_actor, set_definition_scope
from statewrightd.reasons import Reason
from statewrightd.security.authn import Authenticator
from statewrightd.security.roles import (
    ANONYMOUS,
    METHOD_RULES,
    OPEN_SERVICES,
    UNLISTED,
    Grant,
    MethodRule,
    Principal,
    Scope,
    allows,
    request_rule,
    unscoped,
)

_log = logging.getLogger(__name__)

Context = grpc.aio.ServicerContext[Any, Any]
Lookup = Callable[[Message], Awaitable[str]]
Behavior = Callable[..., Any]
Req = TypeVar("Req")
Resp = TypeVar("Resp")


@dataclass(frozen=True, slots=True)
class CallerLimits:
    """Per-principal limits: a token bucket of ``rate`` requests per second with room for
    ``burst`` at once (0: no limit), and at most ``watches`` open streams (WatchWorkflow
    over gRPC, every event stream over HTTP); at most ``watches_total`` of all callers."""

    rate: float = 0.0
    burst: int = 0
    watches: int = 1000
    watches_total: int = 10_000


class _Bucket:
    __slots__ = ("stamp", "tokens")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp


class CallGate(grpc.aio.ServerInterceptor):
    """Authentication (when configured), authorisation, rate and watch limits."""

    MAX_BUCKETS = 100_000

    def __init__(
        self, app: Application, authenticator: Authenticator | None, limits: CallerLimits
    ) -> None:
        self._app = app
        self._authn = authenticator
        self._limits = limits
        self._buckets: dict[str, _Bucket] = {}
        self._watching: dict[str, int] = {}
        self._watching_total = 0
        self._lookups: dict[str, Lookup] = {
            "GetWorkflow": self._instance_definition,
            "WatchWorkflow": self._instance_definition,
            "ResumeWorkflow": self._instance_definition,
            "SignalWorkflow": self._instance_definition,
            "CancelWorkflow": self._instance_definition,
            "DeleteWorkflow": self._instance_definition,
            "RetryWorkflow": self._instance_definition,
            "ResetWorkflow": self._instance_definition,
            "MigrateWorkflow": self._instance_definition,
            "PauseWorkflow": self._instance_definition,
            "UnpauseWorkflow": self._instance_definition,
            "GetWorkflowDiagnostics": self._instance_definition,
            "HeartbeatTask": self._task_queue,
            "CompleteTask": self._task_queue,
            "FailTask": self._task_queue,
            "GetTask": self._task_queue,
        }

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(OPEN_SERVICES):
            return handler
        rule = METHOD_RULES.get(method, UNLISTED)
        name = method.rpartition("/")[2]
        return rewrapped(
            handler, lambda b: self._unary(b, rule, name), lambda b: self._stream(b, rule, name)
        )

    def _unary(
        self, behavior: Behavior, rule: MethodRule, name: str
    ) -> Callable[[Any, Context], Awaitable[Any]]:
        async def gated(request: Any, context: Context) -> Any:
            try:
                principal, grants = await self.admit(
                    rule, name, request, _metadata(context), context.auth_context()
                )
            except errors.StatewrightError as exc:
                await context.abort_with_status(to_grpc_status(exc))
                raise AssertionError("abort_with_status always raises") from exc
            # Each call runs in a task (and a context) of its own: the value goes with it.
            set_actor(principal.name)
            response = await behavior(request, context)
            self.screen(name, response, grants)
            return response

        return gated

    def _stream(
        self, behavior: Behavior, rule: MethodRule, name: str
    ) -> Callable[[Any, Context], AsyncIterator[Any]]:
        async def gated(request: Any, context: Context) -> AsyncIterator[Any]:
            try:
                principal, _ = await self.admit(
                    rule, name, request, _metadata(context), context.auth_context()
                )
                self.open_watch(principal)
            except errors.StatewrightError as exc:
                await context.abort_with_status(to_grpc_status(exc))
                return
            set_actor(principal.name)
            try:
                async for item in behavior(request, context):
                    yield item
            finally:
                self.close_watch(principal)

        return gated

    # -- the decision ----------------------------------------------------------------

    async def admit(
        self,
        rule: MethodRule,
        name: str,
        request: Any,
        metadata: Sequence[tuple[str, str | bytes]],
        auth_context: Mapping[str, Any],
    ) -> tuple[Principal, list[Grant]]:
        """The principal of a call to ``name`` and its grants for ``rule``, or the error
        that refuses the call. The web console's API (statewrightd.console) asks too.

        Once admitted, the call's view of instances is recorded for the application core
        to check every instance it answers with against (statewrightd.visibility)."""
        visibility.limit(None)  # a connection's earlier call must not lend this one its view
        rule = request_rule(name, request, rule)
        if self._authn is None:
            principal = ANONYMOUS
        else:
            principal = await self._authn.authenticate(metadata, auth_context)
        self._charge(principal)
        grants = principal.grants_for(rule)
        if not grants:
            raise _denied(f"{principal.name} may not call {name}: it needs the {rule.role} role")
        set_definition_scope(
            None
            if unscoped(grants, Scope.DEFINITION)
            else functools.partial(allows, grants, Scope.DEFINITION)
        )
        if unscoped(grants, rule.scope) or not isinstance(request, Message):
            # Everything in scope; or a body that did not decode, which the handler answers.
            return principal, grants
        target = await self._target(rule, name, request)
        if target is None:
            if name == "CountWorkflows":
                raise _denied(f"{principal.name} may see only some definitions: it cannot count")
            if name in ("ListWorkflows", "ListTasks"):
                what = "definition" if rule.scope is Scope.DEFINITION else "queue"
                raise _denied(
                    f"{principal.name} may list only some of them: name the {what} to list"
                )
            if name == "StartBatchOperation":
                raise _denied(
                    f"{principal.name} may reach only some definitions: name the batch's definition"
                )
        elif not allows(grants, rule.scope, target):
            if name in self._lookups:
                # Found by its id: refused exactly as an id that names nothing.
                raise visibility.refusal(name)
            raise _denied(f"{principal.name} may not call {name} on this {rule.scope.value}")
        if rule.scope is Scope.DEFINITION:
            patterns = tuple(dict.fromkeys(p for g in grants for p in g.definitions))
            view = visibility.View(name, functools.partial(_in_scope, tuple(grants)), patterns)
            visibility.limit(view)
        return principal, grants  # ListDefinitions: its answer is filtered

    async def _target(self, rule: MethodRule, name: str, request: Message) -> str | None:
        lookup = self._lookups.get(name)
        if lookup is not None:
            try:
                return await lookup(request)
            except errors.NotFound:
                # Out of scope and absent look the same to a scoped caller.
                raise visibility.refusal(name) from None
        if name in {
            "StartWorkflow",
            "SignalWithStartWorkflow",
            "ListWorkflows",
            "ListDefinitions",
            "StartBatchOperation",
        }:
            return str(getattr(request, "definition", "")) or None
        if name == "GetDefinition":
            return v.definition_resource(str(getattr(request, "name", "")))[0]
        if name in ("PollTasks", "ListTasks"):
            return str(getattr(request, "queue", "")) or None
        return None

    async def _instance_definition(self, request: Message) -> str:
        workflow_id = v.workflow_name(str(getattr(request, "name", "")))
        return (await self._app.reads.get(workflow_id)).record.definition

    async def _task_queue(self, request: Message) -> str:
        ref = tr.task_ref(str(getattr(request, "name", "")))
        return (await self._app.tasks.get(ref)).queue

    def screen(self, name: str, response: Any, grants: list[Grant]) -> None:
        """What a call's answer may show of what the caller's grants reach (both doors)."""
        if name == "ListDefinitions":
            keep_in_scope(response, grants)

    # -- limits ----------------------------------------------------------------------

    def _charge(self, principal: Principal) -> None:
        rate, burst = self._limits.rate, self._limits.burst
        if rate <= 0:
            return
        now = time.monotonic()
        bucket = self._buckets.get(principal.name)
        if bucket is None:
            if len(self._buckets) >= self.MAX_BUCKETS:
                self._buckets.clear()  # a bounded table; a full one starts over
            bucket = self._buckets[principal.name] = _Bucket(float(burst), now)
        bucket.tokens = min(float(burst), bucket.tokens + (now - bucket.stamp) * rate)
        bucket.stamp = now
        if bucket.tokens < 1.0:
            raise errors.RateLimited(
                f"{principal.name} is over its rate of {rate:g} requests per second",
                retry_after=(1.0 - bucket.tokens) / rate,
                metadata={"limit": f"{rate:g}/s"},
            )
        bucket.tokens -= 1.0

    def open_watch(self, principal: Principal) -> None:
        open_now = self._watching.get(principal.name, 0)
        if open_now >= self._limits.watches:
            raise errors.ResourceExhausted(
                f"{principal.name} has {open_now} watch streams open, its limit",
                reason=Reason.TOO_MANY_WATCHES,
                metadata={"limit": self._limits.watches},
            )
        if self._watching_total >= self._limits.watches_total:
            raise errors.ResourceExhausted(
                f"the server has {self._watching_total} watch streams open, its limit; "
                "retry later or on another replica",
                reason=Reason.TOO_MANY_WATCHES,
                metadata={"limit": self._limits.watches_total, "scope": "server"},
            )
        self._watching[principal.name] = open_now + 1
        self._watching_total += 1

    def close_watch(self, principal: Principal) -> None:
        self._watching_total = max(0, self._watching_total - 1)
        left = self._watching.get(principal.name, 1) - 1
        if left > 0:
            self._watching[principal.name] = left
        else:
            self._watching.pop(principal.name, None)


def _in_scope(grants: tuple[Grant, ...], definition: str) -> bool:
    return allows(grants, Scope.DEFINITION, definition)


def _denied(message: str) -> errors.PermissionDenied:
    return errors.PermissionDenied(message, reason=Reason.PERMISSION_DENIED)


def _metadata(context: Context) -> tuple[tuple[str, str | bytes], ...]:
    return tuple(context.invocation_metadata() or ())


def keep_in_scope(response: Any, grants: list[Grant]) -> None:
    """Leave in a ListDefinitions answer only the definitions ``grants`` reach."""
    if unscoped(grants, Scope.DEFINITION):
        return
    kept = [d for d in response.definitions if allows(grants, Scope.DEFINITION, d.definition)]
    del response.definitions[:]
    response.definitions.extend(kept)
