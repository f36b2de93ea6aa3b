"""What every RPC passes before its handler runs: a decodable request and an open door.

**Undecodable requests.** gRPC decodes a request before any handler sees it; a body that
is not a valid message (random bytes, invalid UTF-8 in a string field, nesting beyond the
decoder's limit) makes grpcio answer UNKNOWN without ErrorInfo and log a traceback per
call. The service registers its own decoders instead (``tolerant``): a body that does not
decode becomes a :class:`Malformed` value, and the handler answers it INVALID_ARGUMENT
``MALFORMED_REQUEST`` like any other bad input, logging one line per peer address at most
every ``LOG_EVERY`` seconds.

**Draining.** grpcio's own stop cancels every call its core has accepted but not yet
handed to a handler, and under load there are always some: those callers, whose requests
were sent before the drain began, would see CANCELLED. So the server drains here first,
with the transport still running: the door refuses new calls with UNAVAILABLE
``SHUTTING_DOWN`` (an answer clients retry elsewhere), lets the calls already inside finish,
and reports when it has been quiet; only then does the transport stop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable

from google.protobuf.message import DecodeError, Message

from statewrightd import errors
from statewrightd.reasons import Reason

_log = logging.getLogger(__name__)

LOG_EVERY = 10.0
_MAX_PEERS_REMEMBERED = 1024


class Malformed:
    """A request body that did not decode, in place of the request message."""

    __slots__ = ("method", "problem")

    def __init__(self, method: str, problem: str) -> None:
        self.method = method
        self.problem = problem


def tolerant(method: str, message: type[Message]) -> Callable[[bytes], Message | Malformed]:
    """A request decoder for ``method`` that never raises."""
    parse = message.FromString

    def decode(data: bytes) -> Message | Malformed:
        try:
            return parse(data)
        except (DecodeError, RecursionError, ValueError) as exc:
            return Malformed(method, str(exc))

    return decode


class Door:
    """One server's admission of RPCs; used from the asyncio thread only."""

    def __init__(self) -> None:
        self.malformed = 0  # undecodable requests answered, for metrics
        self._open = True
        self._inside = 0
        self._last_arrival = time.monotonic()
        self._emptied: asyncio.Event | None = None
        self._logged: OrderedDict[str, tuple[float, int]] = OrderedDict()

    @property
    def inside(self) -> int:
        return self._inside

    def enter(self, request: object, peer: str) -> None:
        """Admit one call or raise the error that answers it."""
        self._last_arrival = time.monotonic()
        if isinstance(request, Malformed):
            self._report(request, peer)
            raise errors.InvalidArgument(
                "the request body is not a valid message for this method",
                reason=Reason.MALFORMED_REQUEST,
                metadata={"method": request.method},
            )
        if not self._open:
            raise errors.Unavailable(
                "the server is shutting down; retry on another replica",
                reason=Reason.SHUTTING_DOWN,
            )
        self._inside += 1

    def leave(self) -> None:
        self._inside -= 1
        if self._inside == 0 and self._emptied is not None:
            self._emptied.set()

    def close(self) -> None:
        """Refuse every call from now on; calls already inside go on."""
        self._open = False

    async def drained(self, within: float, quiet: float) -> bool:
        """Wait until no call is inside and none arrived for ``quiet`` seconds.

        Calls keep arriving for a moment after a drain begins (clients learn of it from
        their first refusal): waiting for a quiet spell lets those be refused by the door
        rather than cancelled by the transport. True if drained within ``within`` seconds.
        """
        deadline = time.monotonic() + within
        while True:
            now = time.monotonic()
            if now >= deadline:
                return False
            if self._inside:
                self._emptied = asyncio.Event()
                try:
                    await asyncio.wait_for(self._emptied.wait(), deadline - now)
                except TimeoutError:
                    return False
                finally:
                    self._emptied = None
                continue
            calm_for = now - self._last_arrival
            if calm_for >= quiet:
                return True
            await asyncio.sleep(min(quiet - calm_for, deadline - now))

    def _report(self, request: Malformed, peer: str) -> None:
        self.malformed += 1
        # By address, not connection: a flood may open a connection per request.
        host = peer.rpartition(":")[0] or peer
        now = time.monotonic()
        last, suppressed = self._logged.pop(host, (0.0, 0))
        if now - last < LOG_EVERY:
            self._logged[host] = (last, suppressed + 1)
            return
        self._logged[host] = (now, 0)
        while len(self._logged) > _MAX_PEERS_REMEMBERED:
            self._logged.popitem(last=False)
        more = f" (and {suppressed} more since the last report)" if suppressed else ""
        _log.warning(
            "malformed request to %s from %s: %s%s",
            request.method,
            peer,
            errors.quote(request.problem, 200),
            more,
        )
