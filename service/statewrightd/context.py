"""What the call being handled is: who makes it, which RPC it is, which instance it names.

The doors set these for the call's task (every call runs in a task of its own): the
security gate the caller, the RPC observer the method and the workflow id. Whatever runs
within the call reads them: a step records its caller as its actor, log lines name all
three. A bottom module, so that any layer may read the call it serves.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Final

ANONYMOUS: Final = "anonymous"

CALLER: ContextVar[str | None] = ContextVar("statewright_actor", default=None)
WORKFLOW_ID: ContextVar[str | None] = ContextVar("statewright_workflow_id", default=None)
RPC_METHOD: ContextVar[str | None] = ContextVar("statewright_rpc_method", default=None)
# Which definition names the caller's grants reach; None: all of them.
_DEFINITIONS: ContextVar[Callable[[str], bool] | None] = ContextVar(
    "statewright_definition_scope", default=None
)


def current_actor() -> str:
    """Who a step of this call is recorded as: its caller, ``anonymous`` without one."""
    return CALLER.get() or ANONYMOUS


def calling() -> str | None:
    """The principal of the call being handled; None outside any call."""
    return CALLER.get()


def set_actor(name: str) -> None:
    """For the rest of the calling task."""
    CALLER.set(name)


def set_definition_scope(reaches: Callable[[str], bool] | None) -> None:
    """For the rest of the calling task: the definitions the caller may know of (None: all),
    so that an answer names no other (a "did you mean" suggestion)."""
    _DEFINITIONS.set(reaches)


def may_know_definition(name: str) -> bool:
    reaches = _DEFINITIONS.get()
    return reaches is None or reaches(name)
