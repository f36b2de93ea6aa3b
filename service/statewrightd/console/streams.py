"""Server-Sent Events: the stream itself, and the diagnostics samples the runtime page
charts."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import time

from aiohttp import web

from statewrightd import errors
from statewrightd.api.diagnostics import diagnostics_response
from statewrightd.api.status import error_json
from statewrightd.app.wiring import Application
from statewrightd.console.json_text import to_json
from statewrightd.reasons import Reason

_log = logging.getLogger(__name__)

# A comment line this often keeps proxies and load balancers from closing an idle stream.
KEEPALIVE_SECONDS = 15.0
# What a client waits before reconnecting after a stream ends (the SSE retry field).
RETRY_MILLISECONDS = 1000
SAMPLE_SECONDS = 2.0
SAMPLES_KEPT = 150  # five minutes
# An event is written this many characters at a time, each part waiting until the
# connection has taken the one before: a page that reads slowly (or not at all) holds
# about this much of the server's memory, however large the event (a list of 1,000
# instances), rather than the whole event in its connection's buffer.
WRITE_CHUNK = 64 * 1024


class EventStream:
    """One ``text/event-stream`` response. Its keep-alive comments and its events never
    interleave: each is written whole, under the stream's lock."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self._response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache, no-transform",
                # nginx and its kin pass the events on as they come instead of buffering.
                "X-Accel-Buffering": "no",
            }
        )
        self._keepalive: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()

    async def open(self) -> None:
        await self._response.prepare(self._request)
        await self._response.write(f"retry: {RETRY_MILLISECONDS}\n\n".encode())
        self._keepalive = asyncio.create_task(self._ping(), name="sse-keepalive")

    async def send(self, event: str, data: str, event_id: str | None = None) -> None:
        # Canonical JSON has no raw newlines (json_format escapes them in strings), so
        # the data is one line; the id is a number.
        head = f"id: {event_id}\n" if event_id is not None else ""
        head += f"event: {event}\ndata: "
        async with self._writing:
            if len(data) <= WRITE_CHUNK:  # nearly every event: one write
                await self._response.write(f"{head}{data}\n\n".encode())
                return
            await self._response.write(head.encode())
            for start in range(0, len(data), WRITE_CHUNK):
                # write() waits for the connection to drain past 64 KiB buffered.
                await self._response.write(data[start : start + WRITE_CHUNK].encode())
            await self._response.write(b"\n\n")

    async def _ping(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            while True:
                await asyncio.sleep(KEEPALIVE_SECONDS)
                async with self._writing:
                    await self._response.write(b": keep-alive\n\n")

    async def close(self) -> web.StreamResponse:
        if self._keepalive is not None:
            self._keepalive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keepalive
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._response.write_eof()
        return self._response


def error_data(error: errors.StatewrightError) -> str:
    """An ``error`` event's data: the HTTP API's error body."""
    return json.dumps(error_json(error), separators=(",", ":"))


def shutting_down() -> errors.Unavailable:
    return errors.Unavailable(
        "the server is shutting down; reconnect with Last-Event-ID set to the last event's id",
        reason=Reason.SHUTTING_DOWN,
    )


class DiagnosticsSampler:
    """The server's diagnostics every SAMPLE_SECONDS, the last SAMPLES_KEPT of them kept,
    so that a runtime page opened now charts the last minutes at once."""

    def __init__(self, app: Application, closing: asyncio.Event) -> None:
        self._app = app
        self._closing = closing
        # (wall-clock milliseconds, GetDiagnosticsResponse as canonical JSON)
        self.samples: collections.deque[tuple[int, str]] = collections.deque(maxlen=SAMPLES_KEPT)
        self._task: asyncio.Task[None] | None = None
        self._new = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="console-diagnostics")

    async def stop(self) -> None:
        self.wake()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while not self._closing.is_set():
            await self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), SAMPLE_SECONDS)

    async def sample(self) -> None:
        try:
            message = diagnostics_response(await self._app.diagnostics.runtime())
        except Exception as exc:  # a sample missed is a gap in a chart, nothing more
            _log.debug("diagnostics sample failed: %s", exc)
            return
        stamp = int(time.time() * 1000)
        if self.samples and stamp <= self.samples[-1][0]:
            stamp = self.samples[-1][0] + 1  # ids only ever grow: they resume a stream
        text = to_json(message)
        self.samples.append((stamp, text))
        self.wake()

    def after(self, stamp: int) -> list[tuple[int, str]]:
        return [s for s in self.samples if s[0] > stamp]

    def wake(self) -> None:
        """Streams waiting for a sample look again now (the console is closing)."""
        new, self._new = self._new, asyncio.Event()
        new.set()

    async def wait(self) -> None:
        """Until the next sample, or ``wake``."""
        await self._new.wait()
