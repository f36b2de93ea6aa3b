"""The HTTP API's event streams (Server-Sent Events), which have no RPC of their own or a
form of their own over HTTP:

- ``GET /api/v1/workflows/{id}/watch``: WatchWorkflow. Each event's id is its revision;
  a reconnect with ``Last-Event-ID`` resumes after it, so no revision is lost or repeated.
- ``GET /api/v1/workflows:watch``: the ListWorkflows page asked for, again whenever it
  changes, and how many instances match (a count); read once for every stream of the
  same listing (``list_feeds``).
- ``GET /api/v1/diagnostics:watch``: GetDiagnostics every few seconds, the last minutes
  first; each event's id is its time in milliseconds, and resumes like a revision.

Each is admitted as its RPC is (WatchWorkflow, ListWorkflows, GetDiagnostics) and counts
as one of the caller's open streams (``--max-watches``) and of the server's
(``--max-watches-total``).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web
from google.protobuf.message import Message
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd import errors
from statewrightd.api import requests, responses
from statewrightd.app.reads import WorkflowFilter
from statewrightd.app.wiring import Application
from statewrightd.console.admission import Admission
from statewrightd.console.inputs import last_event_id
from statewrightd.console.json_text import to_json
from statewrightd.console.list_feeds import Feed, ListFeeds
from statewrightd.console.streams import (
    DiagnosticsSampler,
    EventStream,
    error_data,
    shutting_down,
)
from statewrightd.console.transcoder import HttpCall, Transcoder
from statewrightd.domain import TERMINAL
from statewrightd.engine.watch import StepEvent
from statewrightd.reasons import Reason

SERVICE = "/statewright.v1.WorkflowService/"
# Counting stops here: past it the count says "at least".
COUNT_LIMIT = 10_000

ListHandler = Callable[[pb.ListWorkflowsRequest, HttpCall], Coroutine[Any, Any, Message]]


class EventStreams:
    def __init__(
        self,
        app: Application,
        admission: Admission,
        sampler: DiagnosticsSampler,
        closing: asyncio.Event,
    ) -> None:
        self._app = app
        self._admission = admission
        self._sampler = sampler
        self._closing = closing
        self._watch_message = responses.WatchMessages()
        # A live step's JSON, built once for every page that follows its instance.
        self._watch_json: weakref.WeakKeyDictionary[StepEvent, str] = weakref.WeakKeyDictionary()
        self._transcoder: Transcoder | None = None
        self.feeds = ListFeeds(self._read_listing, lambda: app.committed_steps, closing)

    def attach(self, transcoder: Transcoder) -> None:
        """The transcoder whose ListWorkflows route the list stream reads like a call."""
        self._transcoder = transcoder

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/api/v1/workflows:watch", self.watch_workflows)
        router.add_get("/api/v1/diagnostics:watch", self.watch_diagnostics)

    # -- WatchWorkflow ---------------------------------------------------------------

    async def watch_workflow(self, request: web.Request, message: Message) -> web.StreamResponse:
        """WatchWorkflow's stream, transcoded: the request is its RPC's request message."""
        assert isinstance(message, pb.WatchWorkflowRequest)
        resumed = last_event_id(request.headers.get("Last-Event-ID"))
        if resumed is not None:
            # A reconnect: where the stream broke off wins over where it first began.
            message.after_revision = resumed
        async with self._admission.admitted(request, SERVICE + "WatchWorkflow", message) as (
            principal,
            _,
        ):
            workflow_id, after = requests.watch_start(message)
            # Read first, so that an unknown instance or a revision that does not exist
            # yet is a plain HTTP error rather than an event on an open stream.
            now = (await self._app.reads.get(workflow_id)).record
            if after is not None and after > now.revision:
                raise errors.OutOfRange(
                    f"workflow {workflow_id} is at revision {now.revision}; after_revision "
                    f"{after} does not exist yet",
                    reason=Reason.REVISION_OUT_OF_RANGE,
                    metadata={
                        "workflow_id": workflow_id,
                        "after_revision": after,
                        "current_revision": now.revision,
                    },
                )
            if after is not None and after >= now.revision and now.status in TERMINAL:
                # Nothing will ever follow: 204 tells an EventSource to stop reconnecting.
                return web.Response(status=204)
            with self._admission.stream(principal):
                return await self._follow(request, workflow_id, after)

    async def _follow(
        self, request: web.Request, workflow_id: str, after: int | None
    ) -> web.StreamResponse:
        stream = EventStream(request)
        await stream.open()
        try:
            async for event in self._app.workflows.watch(workflow_id, after):
                data = self._watch_json.get(event)
                if data is None:
                    data = to_json(self._watch_message(event))
                    self._watch_json[event] = data
                kind = "current" if event.current else "step"
                await stream.send(kind, data, str(event.record.revision))
            await stream.send("end", "{}")
        except errors.StatewrightError as exc:
            await stream.send("error", error_data(exc))
        except ConnectionError:
            pass  # the page went away (closed, reloaded): there is no one left to tell
        return await stream.close()

    # -- the list stream -------------------------------------------------------------

    def _listing(self) -> Transcoder:
        assert self._transcoder is not None, "attach() the transcoder first"
        return self._transcoder

    async def _read_listing(self, message: pb.ListWorkflowsRequest) -> tuple[str, str]:
        """A listing's page and count, as JSON: ListWorkflows' own handler, then a count."""
        handler: ListHandler = self._listing().handler(SERVICE + "ListWorkflows")
        page = await handler(message, HttpCall(None))
        which = WorkflowFilter(
            message.definition or None,
            requests.status_filter(message.status),
            message.id_prefix or None,  # the handler above has checked it
            message.filter,
        )
        count, more = await self._app.reads.count_workflows(which, COUNT_LIMIT)
        # A google.protobuf.Struct: the one message of this API that no RPC answers.
        counted = f'{{"count": {count}, "more": {"true" if more else "false"}}}'
        return to_json(page), counted

    async def watch_workflows(self, request: web.Request) -> web.StreamResponse:
        transcoder = self._listing()
        route, values = transcoder.route(SERVICE + "ListWorkflows", "GET")
        message = await transcoder.request_message(route, values, request)
        assert isinstance(message, pb.ListWorkflowsRequest)
        async with self._admission.admitted(request, route.rpc, message) as (principal, _):
            with self._admission.stream(principal):
                feed = await self.feeds.join(message)  # a bad filter: a plain HTTP error
                stream = EventStream(request)
                try:
                    await stream.open()
                    await self._follow_feed(stream, feed)
                except errors.StatewrightError as exc:
                    await stream.send("error", error_data(exc))
                except ConnectionError:
                    pass  # the page went away
                finally:
                    self.feeds.leave(feed)
                return await stream.close()

    async def _follow_feed(self, stream: EventStream, feed: Feed) -> None:
        sent_page = sent_count = 0
        while True:
            changed = feed.changed
            if feed.page_version != sent_page:
                sent_page = feed.page_version
                await stream.send("page", feed.page)
            if feed.count_version != sent_count:
                sent_count = feed.count_version
                await stream.send("count", feed.count)
            if self._closing.is_set():
                raise shutting_down()
            await changed.wait()

    # -- diagnostics -----------------------------------------------------------------

    async def watch_diagnostics(self, request: web.Request) -> web.StreamResponse:
        transcoder = self._listing()
        route, values = transcoder.route(SERVICE + "GetDiagnostics", "GET")
        message = await transcoder.request_message(route, values, request)
        last = last_event_id(request.headers.get("Last-Event-ID")) or 0
        async with self._admission.admitted(request, route.rpc, message) as (principal, _):
            with self._admission.stream(principal):
                stream = EventStream(request)
                await stream.open()
                sampler = self._sampler
                try:
                    while not self._closing.is_set():
                        for stamp, data in sampler.after(last):
                            await stream.send("diagnostics", data, str(stamp))
                            last = stamp
                        await sampler.wait()
                    await stream.send("error", error_data(shutting_down()))
                except ConnectionError:
                    pass  # the page went away
                return await stream.close()
