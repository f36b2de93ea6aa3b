"""The HTTP/JSON API under ``/api/v1``: one endpoint per RPC, plus three event streams.

Each endpoint reads its RPC's request message (from the query for reads, from a JSON
body for actions, the resource name from the path), passes the same door and the same
call gate as the RPC (its METHOD_RULES entry, its scopes, the caller's rate), builds the
engine's command with ``api.requests`` and answers the RPC's response message as
canonical JSON. The streams are Server-Sent Events:

- ``GET /api/v1/workflows/{id}/watch``: WatchWorkflow. Each event's id is its revision;
  a reconnect with ``Last-Event-ID`` resumes after it, so no revision is lost or repeated.
- ``GET /api/v1/workflows:watch``: the ListWorkflows page asked for, again whenever it
  changes, and how many instances match (a count).
- ``GET /api/v1/diagnostics:watch``: GetDiagnostics every few seconds, the last minutes
  first; each event's id is its time in milliseconds, and resumes like a revision.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd import errors
from statewrightd.api import requests, responses
from statewrightd.api import validation as v
from statewrightd.api.convert import definition_pb
from statewrightd.api.definitions_page import list_definitions
from statewrightd.api.diagnostics import diagnostics_response, workflow_diagnostics
from statewrightd.api.door import Door
from statewrightd.api.status import error_json
from statewrightd.app.reads import WorkflowFilter
from statewrightd.app.wiring import Application
from statewrightd.console.streams import DiagnosticsSampler, EventStream
from statewrightd.context import set_actor
from statewrightd.domain import TERMINAL
from statewrightd.engine.watch import StepEvent
from statewrightd.reasons import Reason
from statewrightd.security.interceptor import CallGate, keep_in_scope
from statewrightd.security.roles import METHOD_RULES, UNLISTED, Grant, Principal

_log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

SERVICE = "/statewright.v1.WorkflowService/"
# An HTTP call has no deadline of its own: a step gets this long, as the service config
# gives a gRPC call by default.
STEP_BUDGET_SECONDS = 30.0
# The list stream looks for new steps this often, and reads again at least this often
# (steps of other server processes are not counted here).
LIST_TICK_SECONDS = 1.0
LIST_IDLE_REFRESH_SECONDS = 5.0
# Counting stops here: past it the count says "at least".
COUNT_LIMIT = 10_000


def _json(message: Message) -> str:
    # Fields at their default too (false, 0, []): canonical JSON either way, and a caller
    # reading `accepted` finds false rather than nothing.
    return json_format.MessageToJson(
        message, indent=None, always_print_fields_with_no_presence=True
    )


def answer(message: Message) -> web.Response:
    return web.Response(text=_json(message), content_type="application/json")


def _malformed(method: str, problem: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(
        f"the request is not a valid {method} request: {errors.quote(problem, 300)}",
        reason=Reason.MALFORMED_REQUEST,
        metadata={"method": method},
    )


def from_query(request: web.Request, message: M, method: str) -> M:
    """A read's request message from its query string (JSON field names, either case)."""
    fields: dict[str, Any] = {}
    for key in request.query:
        values = request.query.getall(key)
        if len(values) != 1:
            raise _malformed(method, f"{key} is given {len(values)} times")
        fields[key] = values[0]
    try:
        json_format.ParseDict(fields, message)
    except json_format.ParseError as exc:
        raise _malformed(method, str(exc)) from None
    return message


async def from_body(request: web.Request, message: M, method: str) -> M:
    """An action's request message from its JSON body; empty means every field default."""
    kind = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    text = await request.text()
    if text.strip() and kind != "application/json":
        # Not only tidiness: a page of another site can send a plain-text POST without
        # asking first, never a JSON one (CORS), and this API answers no CORS request.
        raise errors.InvalidArgument(
            "the request body must be JSON, sent with Content-Type: application/json",
            reason=Reason.UNSUPPORTED_MEDIA_TYPE,
            metadata={"content_type": kind},
        )
    try:
        json_format.Parse(text or "{}", message)
    except json_format.ParseError as exc:
        raise _malformed(method, str(exc)) from None
    return message


def _named(message: Any, name: str, method: str) -> None:
    """The path names the resource; a body that names another is refused."""
    if message.name and message.name != name:
        raise _malformed(method, f"the body's name {message.name!r} is not the path's {name!r}")
    message.name = name


def _same_origin(request: web.Request) -> None:
    origin = request.headers.get("Origin")
    if origin is None or (origin == "null" and request.method == "GET"):
        return
    if urlsplit(origin).netloc != request.host:
        raise errors.PermissionDenied(
            "requests from pages of another origin are refused", reason=Reason.CROSS_ORIGIN
        )


def _auth_context(request: web.Request) -> dict[str, list[str]]:
    """The client certificate's subject alternative names, as gRPC's auth context has them."""
    transport = request.transport
    sslobj = transport.get_extra_info("ssl_object") if transport is not None else None
    if sslobj is None:
        return {}
    cert = sslobj.getpeercert()
    if not cert:
        return {}
    sans = [str(value) for _, value in cert.get("subjectAltName", ())]
    return {"x509_subject_alternative_name": sans}


class Endpoints:
    def __init__(
        self,
        app: Application,
        gate: CallGate,
        door: Door,
        sampler: DiagnosticsSampler,
        closing: asyncio.Event,
    ) -> None:
        self._app = app
        self._gate = gate
        self._door = door
        self._sampler = sampler
        self._closing = closing
        self._limits = requests.value_limits(app.config.limits)
        self._watch_message = responses.WatchMessages()
        # A live step's JSON, built once for every page that follows its instance.
        self._watch_json: weakref.WeakKeyDictionary[StepEvent, str] = weakref.WeakKeyDictionary()

    def add_routes(self, router: web.UrlDispatcher) -> None:
        api = "/api/v1"
        workflow = api + "/workflows/{workflow_id}"
        router.add_get(api + "/definitions", self.list_definitions)
        router.add_get(api + "/definitions/{definition}", self.get_definition)
        router.add_get(api + "/definitions/{definition}/versions/{version}", self.get_definition)
        router.add_get(api + "/workflows", self.list_workflows)
        router.add_post(api + "/workflows", self.start_workflow)
        router.add_get(api + "/workflows:watch", self.watch_workflows)
        router.add_get(workflow, self.get_workflow)
        router.add_post(workflow + "/resume", self.resume_workflow)
        router.add_post(workflow + "/signal", self.signal_workflow)
        router.add_post(workflow + "/cancel", self.cancel_workflow)
        router.add_get(workflow + "/watch", self.watch_workflow)
        router.add_get(workflow + "/diagnostics", self.workflow_diagnostics)
        router.add_get(api + "/diagnostics", self.diagnostics)
        router.add_get(api + "/diagnostics:watch", self.watch_diagnostics)

    # -- admission -------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _admitted(
        self, request: web.Request, method: str, message: Message
    ) -> AsyncIterator[tuple[Principal, list[Grant]]]:
        """The door, then the call gate, as the RPC ``method`` passes them."""
        peer = request.remote or "unknown"
        self._door.enter(message, peer)
        try:
            _same_origin(request)
            header = request.headers.get("Authorization")
            metadata = (("authorization", header),) if header is not None else ()
            rule = METHOD_RULES.get(SERVICE + method, UNLISTED)
            principal, grants = await self._gate.admit(
                rule, method, message, metadata, _auth_context(request)
            )
            # History records who stepped: the same principal names as over gRPC.
            set_actor(principal.name)
            yield principal, grants
        finally:
            self._door.leave()

    # -- definitions -----------------------------------------------------------------

    async def list_definitions(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.ListDefinitionsRequest(), "ListDefinitions")
        async with self._admitted(request, "ListDefinitions", message) as (_, grants):
            response = await list_definitions(self._app, message)
            keep_in_scope(response, grants)
            return answer(response)

    async def get_definition(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.GetDefinitionRequest(), "GetDefinition")
        name = "definitions/" + request.match_info["definition"]
        if "version" in request.match_info:
            name += "/versions/" + request.match_info["version"]
        _named(message, name, "GetDefinition")
        async with self._admitted(request, "GetDefinition", message):
            loaded = await self._app.reads.definition(*v.definition_resource(message.name))
            return answer(pb.GetDefinitionResponse(definition=definition_pb(loaded)))

    # -- workflows -------------------------------------------------------------------

    async def list_workflows(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.ListWorkflowsRequest(), "ListWorkflows")
        async with self._admitted(request, "ListWorkflows", message):
            return answer(await self._list(message))

    async def _list(self, message: pb.ListWorkflowsRequest) -> pb.ListWorkflowsResponse:
        if message.definition:
            v.definition_name(message.definition)
        page, found = await self._app.reads.list_workflows(
            WorkflowFilter(message.definition or None, requests.status_filter(message.status)),
            v.page_size(message.page_size),
            message.page_token,
        )
        return responses.list_response(page, found)

    async def start_workflow(self, request: web.Request) -> web.StreamResponse:
        message = await from_body(request, pb.StartWorkflowRequest(), "StartWorkflow")
        async with self._admitted(request, "StartWorkflow", message):
            loaded = await self._app.reads.definition(*requests.start_target(message))
            command = requests.start_command(message, loaded, self._limits)
            outcome = await self._app.workflows.step(command, STEP_BUDGET_SECONDS)
            return answer(responses.start_response(outcome))

    async def get_workflow(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.GetWorkflowRequest(), "GetWorkflow")
        _named(message, "workflows/" + request.match_info["workflow_id"], "GetWorkflow")
        async with self._admitted(request, "GetWorkflow", message):
            found = await self._app.reads.get(v.workflow_name(message.name))
            return answer(responses.get_response(found))

    async def resume_workflow(self, request: web.Request) -> web.StreamResponse:
        message = await from_body(request, pb.ResumeWorkflowRequest(), "ResumeWorkflow")
        _named(message, "workflows/" + request.match_info["workflow_id"], "ResumeWorkflow")
        async with self._admitted(request, "ResumeWorkflow", message):
            command = requests.resume_command(message, self._limits)
            outcome = await self._app.workflows.step(command, STEP_BUDGET_SECONDS)
            return answer(responses.resume_response(outcome))

    async def signal_workflow(self, request: web.Request) -> web.StreamResponse:
        message = await from_body(request, pb.SignalWorkflowRequest(), "SignalWorkflow")
        _named(message, "workflows/" + request.match_info["workflow_id"], "SignalWorkflow")
        async with self._admitted(request, "SignalWorkflow", message):
            command = requests.signal_command(message, self._limits)
            outcome = await self._app.workflows.step(command, STEP_BUDGET_SECONDS)
            return answer(responses.signal_response(outcome))

    async def cancel_workflow(self, request: web.Request) -> web.StreamResponse:
        message = await from_body(request, pb.CancelWorkflowRequest(), "CancelWorkflow")
        _named(message, "workflows/" + request.match_info["workflow_id"], "CancelWorkflow")
        async with self._admitted(request, "CancelWorkflow", message):
            command = requests.cancel_command(message)
            outcome = await self._app.workflows.step(command, STEP_BUDGET_SECONDS)
            return answer(responses.cancel_response(outcome))

    # -- diagnostics -----------------------------------------------------------------

    async def diagnostics(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.GetDiagnosticsRequest(), "GetDiagnostics")
        async with self._admitted(request, "GetDiagnostics", message):
            return answer(diagnostics_response(await self._app.diagnostics.runtime()))

    async def workflow_diagnostics(self, request: web.Request) -> web.StreamResponse:
        method = "GetWorkflowDiagnostics"
        message = from_query(request, pb.GetWorkflowDiagnosticsRequest(), method)
        _named(message, "workflows/" + request.match_info["workflow_id"], method)
        async with self._admitted(request, method, message):
            return answer(await workflow_diagnostics(self._app, message.name))

    # -- streams ---------------------------------------------------------------------

    async def watch_workflow(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.WatchWorkflowRequest(), "WatchWorkflow")
        _named(message, "workflows/" + request.match_info["workflow_id"], "WatchWorkflow")
        resumed = _last_event_id(request)
        if resumed is not None:
            # A reconnect: where the stream broke off wins over where it first began.
            message.after_revision = resumed
        async with self._admitted(request, "WatchWorkflow", message) as (principal, _):
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
            self._gate.open_watch(principal)
            try:
                return await self._follow(request, workflow_id, after)
            finally:
                self._gate.close_watch(principal)

    async def _follow(
        self, request: web.Request, workflow_id: str, after: int | None
    ) -> web.StreamResponse:
        stream = EventStream(request)
        await stream.open()
        try:
            async for event in self._app.workflows.watch(workflow_id, after):
                data = self._watch_json.get(event)
                if data is None:
                    data = _json(self._watch_message(event))
                    self._watch_json[event] = data
                kind = "current" if event.current else "step"
                await stream.send(kind, data, str(event.record.revision))
            await stream.send("end", "{}")
        except errors.StatewrightError as exc:
            await stream.send("error", _error_data(exc))
        except ConnectionError:
            pass  # the page went away (closed, reloaded): there is no one left to tell
        return await stream.close()

    async def watch_workflows(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.ListWorkflowsRequest(), "ListWorkflows")
        async with self._admitted(request, "ListWorkflows", message):
            first = await self._list(message)  # a bad filter is a plain HTTP error
            stream = EventStream(request)
            await stream.open()
            try:
                await self._follow_list(stream, message, first)
            except errors.StatewrightError as exc:
                await stream.send("error", _error_data(exc))
            except ConnectionError:
                pass  # the page went away
            return await stream.close()

    async def _follow_list(
        self, stream: EventStream, message: pb.ListWorkflowsRequest, page: pb.ListWorkflowsResponse
    ) -> None:
        app = self._app
        which = WorkflowFilter(message.definition or None, requests.status_filter(message.status))
        sent_page = sent_count = ""
        while True:
            steps, refreshed = app.committed_steps, time.monotonic()
            data = _json(page)
            if data != sent_page:
                await stream.send("page", data)
                sent_page = data
            count, more = await app.reads.count_workflows(which, COUNT_LIMIT)
            # A google.protobuf.Struct: the one message of this API that no RPC answers.
            counted = f'{{"count": {count}, "more": {"true" if more else "false"}}}'
            if counted != sent_count:
                await stream.send("count", counted)
                sent_count = counted
            while app.committed_steps == steps and (
                time.monotonic() - refreshed < LIST_IDLE_REFRESH_SECONDS
            ):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), LIST_TICK_SECONDS)
                if self._closing.is_set():
                    raise _shutting_down()
            page = await self._list(message)

    async def watch_diagnostics(self, request: web.Request) -> web.StreamResponse:
        message = from_query(request, pb.GetDiagnosticsRequest(), "GetDiagnostics")
        last = _last_event_id(request) or 0
        async with self._admitted(request, "GetDiagnostics", message):
            stream = EventStream(request)
            await stream.open()
            sampler = self._sampler
            try:
                while not self._closing.is_set():
                    for stamp, data in sampler.after(last):
                        await stream.send("diagnostics", data, str(stamp))
                        last = stamp
                    await sampler.wait()
                await stream.send("error", _error_data(_shutting_down()))
            except ConnectionError:
                pass  # the page went away
            return await stream.close()


def _last_event_id(request: web.Request) -> int | None:
    text = request.headers.get("Last-Event-ID", "").strip()
    if not text:
        return None
    if not text.isdigit() or len(text) > 19:
        raise errors.InvalidArgument(
            f"Last-Event-ID must be a revision (a whole number); got {errors.quote(text)}",
            reason=Reason.INVALID_FIELD,
            metadata={"field": "Last-Event-ID"},
        )
    return int(text)


def _error_data(error: errors.StatewrightError) -> str:
    return json.dumps(error_json(error), separators=(",", ":"))


def _shutting_down() -> errors.Unavailable:
    return errors.Unavailable(
        "the server is shutting down; reconnect with Last-Event-ID set to the last event's id",
        reason=Reason.SHUTTING_DOWN,
    )
