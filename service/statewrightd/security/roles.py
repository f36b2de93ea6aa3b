"""Roles, what each RPC needs, and the grants that give a principal its roles.

Five roles: ``reader`` reads instances and definitions; ``client`` also starts, resumes,
signals and cancels them; ``worker`` serves task queues (TaskService); ``operator`` reads
and repairs instances (retry, reset, migrate); ``admin`` may do everything, diagnostics included.
A grant gives one role, scoped to definition names and task queues by glob patterns
(``mail-*``, ``payments``); a principal holds any number of grants, and a call is allowed
by any one of them.
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from statewrightd.app.batches import SINGLE_RPC


class Role(enum.StrEnum):
    READER = "reader"
    CLIENT = "client"
    WORKER = "worker"
    OPERATOR = "operator"
    ADMIN = "admin"


# What each role may also do: a client reads, an admin does everything.
_COVERS: Final[dict[Role, frozenset[Role]]] = {
    Role.READER: frozenset({Role.READER}),
    Role.CLIENT: frozenset({Role.READER, Role.CLIENT}),
    Role.WORKER: frozenset({Role.WORKER}),
    # An operator repairs instances (retry, reset, migrate) and reads them; it starts none.
    Role.OPERATOR: frozenset({Role.READER, Role.OPERATOR}),
    Role.ADMIN: frozenset(Role),
}


class Scope(enum.Enum):
    """What a call's target is, for a grant's patterns to match."""

    NONE = "none"  # nothing to scope (diagnostics): the role alone decides
    DEFINITION = "definition"
    QUEUE = "queue"


@dataclass(frozen=True, slots=True)
class MethodRule:
    role: Role
    scope: Scope


_W = "/statewright.v1.WorkflowService/"
_T = "/statewright.v1.TaskService/"
_S = "/statewright.v1.ScheduleService/"
_B = "/statewright.v1.BatchService/"

# Every RPC of the API. A method missing here is refused to everyone but admins, so that a
# new RPC is closed until it is given a rule.
METHOD_RULES: Final[dict[str, MethodRule]] = {
    _W + "GetWorkflow": MethodRule(Role.READER, Scope.DEFINITION),
    _W + "ListWorkflows": MethodRule(Role.READER, Scope.DEFINITION),
    # Counts name no definition: a caller that sees only some definitions is refused.
    _W + "CountWorkflows": MethodRule(Role.READER, Scope.DEFINITION),
    _W + "WatchWorkflow": MethodRule(Role.READER, Scope.DEFINITION),
    _W + "ListDefinitions": MethodRule(Role.READER, Scope.DEFINITION),
    _W + "GetDefinition": MethodRule(Role.READER, Scope.DEFINITION),
    _W + "StartWorkflow": MethodRule(Role.CLIENT, Scope.DEFINITION),
    _W + "ResumeWorkflow": MethodRule(Role.CLIENT, Scope.DEFINITION),
    _W + "SignalWorkflow": MethodRule(Role.CLIENT, Scope.DEFINITION),
    _W + "CancelWorkflow": MethodRule(Role.CLIENT, Scope.DEFINITION),
    _W + "SignalWithStartWorkflow": MethodRule(Role.CLIENT, Scope.DEFINITION),
    _W + "GetDiagnostics": MethodRule(Role.ADMIN, Scope.NONE),
    _W + "GetWorkflowDiagnostics": MethodRule(Role.ADMIN, Scope.DEFINITION),
    _W + "DeleteWorkflow": MethodRule(Role.ADMIN, Scope.DEFINITION),
    _W + "RetryWorkflow": MethodRule(Role.OPERATOR, Scope.DEFINITION),
    _W + "ResetWorkflow": MethodRule(Role.OPERATOR, Scope.DEFINITION),
    _W + "MigrateWorkflow": MethodRule(Role.OPERATOR, Scope.DEFINITION),
    _W + "PauseWorkflow": MethodRule(Role.OPERATOR, Scope.DEFINITION),
    _W + "UnpauseWorkflow": MethodRule(Role.OPERATOR, Scope.DEFINITION),
    _T + "PollTasks": MethodRule(Role.WORKER, Scope.QUEUE),
    _T + "HeartbeatTask": MethodRule(Role.WORKER, Scope.QUEUE),
    _T + "CompleteTask": MethodRule(Role.WORKER, Scope.QUEUE),
    _T + "FailTask": MethodRule(Role.WORKER, Scope.QUEUE),
    _T + "GetTask": MethodRule(Role.WORKER, Scope.QUEUE),
    _T + "ListTasks": MethodRule(Role.WORKER, Scope.QUEUE),
    # Schedules start instances as the server itself, of any definition, at any time to
    # come: only an admin creates, changes, pauses, triggers or backfills one; readers
    # see them (a schedule names no instance, so no definition scope applies).
    _S + "GetSchedule": MethodRule(Role.READER, Scope.NONE),
    _S + "ListSchedules": MethodRule(Role.READER, Scope.NONE),
    _S + "CreateSchedule": MethodRule(Role.ADMIN, Scope.NONE),
    _S + "UpdateSchedule": MethodRule(Role.ADMIN, Scope.NONE),
    _S + "DeleteSchedule": MethodRule(Role.ADMIN, Scope.NONE),
    _S + "PauseSchedule": MethodRule(Role.ADMIN, Scope.NONE),
    _S + "UnpauseSchedule": MethodRule(Role.ADMIN, Scope.NONE),
    _S + "TriggerSchedule": MethodRule(Role.ADMIN, Scope.NONE),
    _S + "BackfillSchedule": MethodRule(Role.ADMIN, Scope.NONE),
    # A batch applies one RPC to many instances: starting one needs that RPC's role
    # (request_rule), scoped by the definition it names as ListWorkflows is. Watching and
    # stopping batches is an operator's; a batch names no instance, so no scope applies.
    _B + "StartBatchOperation": MethodRule(Role.CLIENT, Scope.DEFINITION),
    _B + "GetBatchOperation": MethodRule(Role.OPERATOR, Scope.NONE),
    _B + "ListBatchOperations": MethodRule(Role.OPERATOR, Scope.NONE),
    _B + "CancelBatchOperation": MethodRule(Role.OPERATOR, Scope.NONE),
    _T + "SetQueueConfig": MethodRule(Role.ADMIN, Scope.NONE),
    _T + "GetQueueConfig": MethodRule(Role.READER, Scope.NONE),
    _T + "ListQueues": MethodRule(Role.READER, Scope.NONE),
}
UNLISTED: Final = MethodRule(Role.ADMIN, Scope.NONE)


def request_rule(name: str, request: object, rule: MethodRule) -> MethodRule:
    """The rule of one call: its method's, except a batch's start, which needs the role of
    the RPC its operation applies (a request naming none is answered by its handler,
    which refuses it: the method's own rule, the least of them, admits it that far)."""
    if name != "StartBatchOperation":
        return rule
    which = getattr(request, "WhichOneof", None)
    operation = which("operation") if which is not None else None
    single = SINGLE_RPC.get(operation or "")
    if single is None:
        return rule
    return MethodRule(METHOD_RULES[_W + single].role, rule.scope)


# Served to anyone: the probes of orchestrators, and (when on) reflection.
OPEN_SERVICES: Final = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
)

ANY: Final = ("*",)


@dataclass(frozen=True, slots=True)
class Grant:
    role: Role
    definitions: tuple[str, ...] = ANY
    queues: tuple[str, ...] = ANY

    def covers(self, role: Role) -> bool:
        return role in _COVERS[self.role]

    def patterns(self, scope: Scope) -> tuple[str, ...]:
        return self.definitions if scope is Scope.DEFINITION else self.queues


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: ``name`` as history and logs record it (``key:ci-bot``,
    ``jwt:alice``, ``mtls:spiffe://...``), and what it was granted."""

    name: str
    grants: tuple[Grant, ...]

    def grants_for(self, rule: MethodRule) -> list[Grant]:
        return [g for g in self.grants if g.covers(rule.role)]


ANONYMOUS: Final = Principal("anonymous", (Grant(Role.ADMIN),))


def matches(patterns: Iterable[str], name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def unscoped(grants: Sequence[Grant], scope: Scope) -> bool:
    """Whether some grant allows every target of ``scope``: no lookup is needed then."""
    return scope is Scope.NONE or any("*" in g.patterns(scope) for g in grants)


def allows(grants: Sequence[Grant], scope: Scope, target: str) -> bool:
    return scope is Scope.NONE or any(matches(g.patterns(scope), target) for g in grants)
