"""Who the current call is from, as steps record it (``actor``).

The security interceptor sets it for the call's task before the handler runs; with no
authentication configured every caller is ``anonymous``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Final

ANONYMOUS: Final = "anonymous"

_ACTOR: ContextVar[str | None] = ContextVar("statewright_actor", default=None)
# Which definition names the caller's grants reach; None: all of them.
_DEFINITIONS: ContextVar[Callable[[str], bool] | None] = ContextVar(
    "statewright_definition_scope", default=None
)


def current_actor() -> str:
    return _ACTOR.get() or ANONYMOUS


def calling() -> str | None:
    """The principal of the call being handled; None outside any call."""
    return _ACTOR.get()


def set_actor(name: str) -> None:
    """For the rest of the calling task (every call runs in a task of its own)."""
    _ACTOR.set(name)


def set_definition_scope(reaches: Callable[[str], bool] | None) -> None:
    """For the rest of the calling task: the definitions the caller may know of (None: all),
    so that an answer names no other (a "did you mean" suggestion)."""
    _DEFINITIONS.set(reaches)


def may_know_definition(name: str) -> bool:
    reaches = _DEFINITIONS.get()
    return reaches is None or reaches(name)
