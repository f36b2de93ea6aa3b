"""The HTTP/JSON API, transcoded from the protos' ``google.api.http`` annotations.

Nothing here is written per RPC. At start the route table is read from the services'
descriptors (``http_rules``); a call is matched to its RPC, its request message is built
from the path's variables, the JSON body and the query string (``inputs``), it passes the
door and the call gate as the RPC does over gRPC (``admission``), and the servicer's own
handler runs it, the one the gRPC server calls; its response message is the answer, in
protobuf's canonical JSON, and its errors the gRPC API's codes, reasons and metadata. An
RPC added to a proto is on HTTP once it has its annotation.

Server-streaming RPCs are answered as Server-Sent Events, one event per message. An RPC
whose stream has a resumable form of its own (WatchWorkflow: ids are revisions, and a
reconnect resumes after ``Last-Event-ID``) names an adapter in ``stream_adapters``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from importlib import resources
from typing import Any

from aiohttp import web
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message

from statewrightd import errors
from statewrightd.api.enum_names import full_enum_names
from statewrightd.api.handlers import undecorated
from statewrightd.console import inputs
from statewrightd.console.admission import Admission
from statewrightd.console.http_rules import Route, RouteTable, routes
from statewrightd.console.json_text import to_json
from statewrightd.console.streams import EventStream, error_data
from statewrightd.observability.tracing import caller_trace
from statewrightd.reasons import Reason

_log = logging.getLogger(__name__)

# Methods a page of another site can send unasked with a form body: always JSON here.
_WRITES = frozenset({"POST", "PUT", "PATCH"})

StreamAdapter = Callable[[web.Request, Message], Awaitable[web.StreamResponse]]


def answer(message: Message) -> web.Response:
    return web.Response(text=to_json(message), content_type="application/json")


def no_endpoint(request: web.Request) -> errors.NotFound:
    """A path the API has no route for (cut short in the answer, as it may be long)."""
    path = errors.quote(request.path, 200)
    return errors.NotFound(
        f"there is no API endpoint {request.method} {path}",
        reason=Reason.ENDPOINT_NOT_FOUND,
        metadata={"path": path},
    )


def method_not_allowed(request: web.Request, allowed: Iterable[str] = ()) -> errors.Unimplemented:
    """A path the API routes, asked with a method it does not answer there (``allowed``:
    the ones it answers, when known)."""
    metadata = {"method": request.method}
    if answered := ", ".join(allowed):
        metadata["allowed"] = answered
    return errors.Unimplemented(
        f"{request.path} does not answer {request.method}",
        reason=Reason.METHOD_NOT_ALLOWED,
        metadata=metadata,
    )


def method_timeouts() -> dict[str, float]:
    """Each RPC's timeout in the service config the clients ship (a gRPC client's default
    deadline), by method name; an HTTP call has no deadline of its own."""
    text = resources.files("statewright").joinpath("service_config.json").read_text("utf-8")
    timeouts: dict[str, float] = {}
    for entry in json.loads(text)["methodConfig"]:
        timeout = entry.get("timeout")
        if isinstance(timeout, str) and timeout.endswith("s"):
            for name in entry["name"]:
                if "method" in name:
                    timeouts[name["method"]] = float(timeout[:-1])
    return timeouts


class HttpCall:
    """An HTTP call's context, as a gRPC call's is to the handler: its time left."""

    def __init__(self, timeout: float | None) -> None:
        self._deadline = None if timeout is None else time.monotonic() + timeout

    def time_remaining(self) -> float | None:
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - time.monotonic())


class Transcoder:
    """Every RPC of ``servicers``' services at its annotated routes."""

    def __init__(
        self,
        servicers: Mapping[ServiceDescriptor, object],
        admission: Admission,
        stream_adapters: Mapping[str, StreamAdapter] | None = None,
    ) -> None:
        self.table = RouteTable(routes(servicers))
        self._admission = admission
        self._adapters = dict(stream_adapters or {})
        self._timeouts = method_timeouts()
        self._handlers: dict[str, Callable[[Any, HttpCall], Any]] = {}
        for route in self.table:
            servicer = servicers[route.method.containing_service]
            self._handlers[route.rpc] = undecorated(servicer, route.method.name)

    @property
    def rpcs(self) -> Iterable[str]:
        return self._handlers.keys()

    def handler(self, rpc: str) -> Callable[[Any, HttpCall], Any]:
        """The servicer's handler of ``rpc`` (its full name), unwrapped."""
        return self._handlers[rpc]

    def route(self, rpc: str, http_method: str) -> tuple[Route, dict[str, str]]:
        """``rpc``'s route for ``http_method`` with no path variables: for a stream that
        reads its request as that RPC's call would."""
        for route in self.table:
            if (
                route.rpc == rpc
                and route.http_method == http_method
                and not route.template.variables
            ):
                return route, {}
        raise LookupError(f"{rpc} has no {http_method} route without path variables")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw_path = request.rel_url.raw_path
        try:
            found = self.table.match(request.method, raw_path)
        except LookupError as allowed:
            raise method_not_allowed(request, allowed.args[0]) from None
        except UnicodeDecodeError:
            raise errors.InvalidArgument(
                "the path is not UTF-8 once percent-decoded", reason=Reason.MALFORMED_REQUEST
            ) from None
        if found is None:
            raise no_endpoint(request)
        route, values = found
        message = await self.request_message(route, values, request)
        if route.streaming:
            adapter = self._adapters.get(route.method.name)
            if adapter is not None:
                return await adapter(request, message)
            return await self._stream(route, request, message)
        return await self._unary(route, request, message)

    async def request_message(
        self, route: Route, values: Mapping[str, str], request: web.Request
    ) -> Message:
        """The RPC's request message from the call's path, body and query string."""
        method = route.method.name
        message = message_factory.GetMessageClass(route.method.input_type)()
        if request.method in _WRITES or request.body_exists:
            inputs.check_json_type(request.headers.get("Content-Type"))
        body = inputs.decode_body(await request.read(), method) if request.body_exists else ""
        if route.body == "*":
            if request.query:
                raise inputs.malformed(
                    method,
                    f"this call takes its fields in the JSON body, not the query "
                    f"({', '.join(sorted(set(request.query.keys())))})",
                )
            inputs.parse_json(body, message, method)
        else:
            if route.body:
                inputs.parse_json(body, getattr(message, route.body), method)
            elif body.strip():
                raise inputs.malformed(method, "this call takes no body")
            bound = {**values, **({route.body: ""} if route.body else {})}
            fields = inputs.query_fields(request.query, route.method.input_type, method, bound)
            inputs.parse_fields(full_enum_names(message, fields), message, method)
        inputs.bind_path(values, message, method)
        return message

    async def _unary(self, route: Route, request: web.Request, message: Message) -> web.Response:
        name = route.method.name
        async with self._admission.admitted(request, route.rpc, message) as (_, grants):
            with caller_trace(request.headers):
                call = HttpCall(self._timeouts.get(name))
                response = await self._handlers[route.rpc](message, call)
            self._admission.gate.screen(name, response, grants)
            return answer(response)

    async def _stream(
        self, route: Route, request: web.Request, message: Message
    ) -> web.StreamResponse:
        """A response stream as Server-Sent Events: each message a ``message`` event, then
        ``end``; an error after the stream opened is an ``error`` event."""
        async with self._admission.admitted(request, route.rpc, message) as (principal, _):
            with self._admission.stream(principal):
                messages: AsyncIterator[Message] = self._handlers[route.rpc](
                    message, HttpCall(None)
                )
                stream = EventStream(request)
                await stream.open()
                try:
                    async for item in messages:
                        await stream.send("message", to_json(item))
                    await stream.send("end", "{}")
                except errors.StatewrightError as exc:
                    await stream.send("error", error_data(exc))
                except ConnectionError:
                    pass  # the caller went away: there is no one left to tell
                return await stream.close()
