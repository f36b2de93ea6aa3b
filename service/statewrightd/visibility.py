"""Which instances the current call may see: those of the definitions its caller may reach.

Instance ids are one namespace for every definition, so a caller whose grants are scoped to
some definitions (``mail-*``) can name, by accident or on purpose, an instance of another:
a start whose id is taken, a request id that was answered before, a watch, diagnostics. It
must never read such an instance, nor learn that it exists. The check is therefore made on
the *instance's* definition, wherever an instance leaves the application core, and not only
on what the request names:

- the call gate records the call's view (``limit``) once it has admitted the call, for both
  doors (gRPC and HTTP); a caller whose grants reach every definition has no view (None),
  and pays nothing;
- every path that answers with an instance, or says that one exists, passes its definition
  through ``check`` before answering; a new path (a signal-with-start, a batch, a repair)
  does the same, in the application core, where every door's calls go through;
- an instance out of view is refused exactly as one that does not exist is refused to such a
  caller (``refusal``): the same code, reason and message, and no metadata.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from statewrightd.errors import PermissionDenied
from statewrightd.reasons import Reason


@dataclass(frozen=True, slots=True)
class View:
    """What one call may see: ``method`` names the call in refusals; ``allows`` tells,
    from a definition name, whether its instances are in view. ``patterns``: the
    definition globs ``allows`` matches, which a batch keeps to apply its instances'
    operations later under the view of the call that started it."""

    method: str
    allows: Callable[[str], bool]
    patterns: tuple[str, ...] = ()


def of_patterns(method: str, patterns: Sequence[str]) -> View:
    """The view of a caller whose grants reach the definitions ``patterns`` match."""
    kept = tuple(patterns)
    return View(method, lambda name: any(fnmatch.fnmatchcase(name, p) for p in kept), kept)


_VIEW: ContextVar[View | None] = ContextVar("statewright_view", default=None)


def limit(view: View | None) -> None:
    """For the rest of the calling task (every call runs in a task of its own)."""
    _VIEW.set(view)


def current() -> View | None:
    """The current call's view; None when it may see every instance."""
    return _VIEW.get()


def check(definition: str, view: View | None = None) -> None:
    """Raise the refusal unless instances of ``definition`` are in view (of ``view``, or
    of the current call)."""
    view = view if view is not None else _VIEW.get()
    if view is not None and not view.allows(definition):
        raise refusal(view.method)


def refusal(method: str) -> PermissionDenied:
    """The one answer to a scoped caller about an instance it may not see, or that does
    not exist: the two must not be told apart."""
    return PermissionDenied(
        f"not allowed to call {method} on this target", reason=Reason.PERMISSION_DENIED
    )
