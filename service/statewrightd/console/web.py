"""The console's HTTP server: aiohttp on the server's asyncio loop, TLS when the server has
it, the API's routes (transcoded from the protos, plus the event streams and the OpenAPI
document), the built pages, and drain."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import ssl
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from aiohttp import http_exceptions, web, web_protocol
from google.protobuf.descriptor import ServiceDescriptor

from statewrightd import errors, ports
from statewrightd.api.door import Door
from statewrightd.api.status import error_json, http_status
from statewrightd.app.wiring import Application
from statewrightd.config import ServerConfig, parse_listen
from statewrightd.console.admission import Admission
from statewrightd.console.guard import HostGuard
from statewrightd.console.sse import EventStreams
from statewrightd.console.streams import DiagnosticsSampler
from statewrightd.console.transcoder import Transcoder, method_not_allowed, no_endpoint
from statewrightd.reasons import Reason
from statewrightd.security.interceptor import CallGate

_log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
# Generated from the protos' annotations with the clients (make generate).
OPENAPI = Path(__file__).parent / "openapi.swagger.json"
# How often the TLS files are looked at for a rotation (new connections get the new pair).
TLS_RECHECK_SECONDS = 5.0
# The pages' Content-Security-Policy: nothing from other hosts. Mermaid writes its
# styles into the SVGs it renders, hence inline styles.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Console:
    """The web console of one server process: its HTTP API calls ``servicers``' handlers,
    the ones the gRPC server calls."""

    def __init__(
        self,
        app: Application,
        gate: CallGate,
        door: Door,
        config: ServerConfig,
        servicers: Mapping[ServiceDescriptor, object],
    ) -> None:
        self._config = config
        self._closing = asyncio.Event()
        self.sampler = DiagnosticsSampler(app, self._closing)
        admission = Admission(gate, door)
        self.streams = EventStreams(app, admission, self.sampler, self._closing)
        self.transcoder = Transcoder(
            servicers, admission, {"WatchWorkflow": self.streams.watch_workflow}
        )
        self.streams.attach(self.transcoder)
        assert config.http_listen is not None, "the console needs --http-listen"
        self._hosts = HostGuard(parse_listen(config.http_listen)[0], config.http_allowed_hosts)
        self._runner: web.AppRunner | None = None
        self._tls: _ReloadingContext | None = None
        self.port: int | None = None

    def _web_app(self) -> web.Application:
        web_app = web.Application(
            middlewares=[self._host_check, _headers, _errors],
            client_max_size=self._config.limits.request_bytes,
        )
        router = web_app.router
        router.add_get("/api/v1/openapi.json", _openapi)
        self.streams.add_routes(router)
        router.add_route("*", "/api/{tail:.*}", self.transcoder.handle)
        web_app.router.add_get("/favicon.svg", _asset("favicon.svg"))
        web_app.router.add_static("/static/", STATIC, append_version=False)
        # Every other path is a page of the console, which the front end routes.
        web_app.router.add_get("/{page:.*}", _page)
        return web_app

    async def start(self, *, share_port: bool = False) -> int:
        """Listen; ``share_port`` under a supervisor, whose processes share the port."""
        listen = self._config.http_listen
        assert listen is not None, "the console needs --http-listen"
        host, port = parse_listen(listen)
        context = None
        config = self._config
        if config.tls_cert is not None and config.tls_key is not None:
            self._tls = _ReloadingContext(config.tls_cert, config.tls_key, config.tls_client_ca)
            context = self._tls.context
        runner = _Runner(
            self._web_app(),
            handle_signals=False,
            access_log=None,
            # A page that goes away ends its streams (and their subscriptions) at once.
            handler_cancellation=True,
            shutdown_timeout=1.0,
        )
        await runner.setup()
        self._runner = runner
        site = web.TCPSite(runner, host, port, ssl_context=context, reuse_port=share_port)
        try:
            await site.start()
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ports.taken(listen, "--http-listen") from None
            raise
        self.port = int(runner.addresses[0][1])
        self.sampler.start()
        if self._tls is not None:
            self._tls.start()
        scheme = "https" if context is not None else "http"
        shown = f"[{host}]" if ":" in host else host
        _log.info("web console on %s://%s:%d/", scheme, shown, self.port)
        return self.port

    def begin_drain(self) -> None:
        """Every stream ends now (clients reconnect elsewhere); new calls are the door's."""
        self._closing.set()
        self.sampler.wake()

    async def close(self) -> None:
        self._closing.set()
        await self.sampler.stop()
        await self.streams.feeds.close()
        if self._tls is not None:
            await self._tls.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _host_check(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Only requests naming this server (guard.HostGuard): pages and API alike."""
        try:
            self._hosts.check(request)
        except errors.StatewrightError as exc:
            return error_response(exc)
        return await handler(request)


@web.middleware
async def _headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    headers = response.headers
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "no-referrer")
    if not request.path.startswith("/api/"):
        # Static files go out gzipped (their .gz copies) to whoever accepts it, as they are
        # to everybody else: a cache keeps the two apart.
        if "accept-encoding" not in headers.get("Vary", "").lower():
            headers.add("Vary", "Accept-Encoding")
        headers.setdefault("Content-Security-Policy", CSP)
        headers.setdefault("X-Frame-Options", "DENY")
        if "/chunks/" in request.path:
            # Chunk names carry their content's hash: they never change.
            headers["Cache-Control"] = "public, max-age=31536000, immutable"
        else:
            # The entry points keep their names across builds: revalidate (ETag) each time.
            headers.setdefault("Cache-Control", "no-cache")
    return response


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every API failure as JSON in the API's error shape, with the matching HTTP status."""
    if not request.path.startswith("/api/"):
        return await handler(request)
    try:
        return await handler(request)
    except errors.StatewrightError as exc:
        return error_response(exc)
    except web.HTTPException as exc:
        # aiohttp's own refusals, where no API route takes the request.
        if exc.status == 404:
            return error_response(no_endpoint(request))
        if exc.status == 405:
            return error_response(method_not_allowed(request))
        if exc.status == 413:
            return error_response(
                errors.InvalidArgument(
                    "the request body is larger than the server accepts",
                    reason=Reason.REQUEST_TOO_LARGE,
                )
            )
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception as exc:
        _log.exception("unhandled error in %s %s", request.method, request.path)
        return error_response(errors.Internal.wrapping(exc))


async def _openapi(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(OPENAPI, headers={"Content-Type": "application/json"})


def error_response(error: errors.StatewrightError) -> web.Response:
    response = web.json_response(error_json(error), status=http_status(error))
    if isinstance(error, errors.RateLimited):
        response.headers["Retry-After"] = str(max(1, round(error.retry_after + 0.5)))
    return response


async def _page(request: web.Request) -> web.StreamResponse:
    if request.path.startswith("/api/"):
        raise web.HTTPNotFound()
    return web.FileResponse(STATIC / "index.html")


def _asset(name: str) -> Handler:
    async def serve(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / name)

    return serve


class _ReloadingContext:
    """TLS whose certificate, key and client CA are read again when their files change, as
    the gRPC port's are (security.tls): each handshake is given the newest context that
    loaded whole, so a rotation caught halfway keeps the pair that works."""

    def __init__(self, cert: Path, key: Path, client_ca: Path | None) -> None:
        self._cert, self._key, self._client_ca = cert, key, client_ca
        self._paths = [cert, key] + ([client_ca] if client_ca is not None else [])
        self._current = self._build()
        self.context = self._build()
        self.context.sni_callback = self._pick
        self._stamps = self._read_stamps()
        self._task: asyncio.Task[None] | None = None

    def _build(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self._cert, self._key)
        if self._client_ca is not None:
            # Like the gRPC port: with a client CA, every connection shows a certificate.
            context.load_verify_locations(cafile=str(self._client_ca))
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def _pick(self, connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
        connection.context = self._current

    def _read_stamps(self) -> list[tuple[float, int]]:
        return [(os.stat(p).st_mtime, os.stat(p).st_size) for p in self._paths]

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch(), name="console-tls-reload")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(TLS_RECHECK_SECONDS)
            try:
                stamps = self._read_stamps()
                if stamps != self._stamps:
                    self._current = self._build()
                    self._stamps = stamps
                    _log.info("web console: TLS certificate reloaded from %s", self._cert)
            except (OSError, ssl.SSLError) as exc:
                _log.warning("web console: TLS files could not be re-read (%s)", exc)


class _Protocol(web_protocol.RequestHandler):
    """aiohttp's connection handler, answering a request that is not valid HTTP (a request
    line or header past the parser's limits, a bad chunked body...) as the API answers bad
    input, with one quiet log line instead of an ERROR with a traceback: it is the
    caller's mistake, not the server's. A caller that hung up is not an error either."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if isinstance(exc, ConnectionError):
            # The caller went away while its answer was being written (a page closed as
            # its stream opened): there is no one to answer, and nothing went wrong here.
            _log.debug("%s %s: the caller went away (%s)", request.method, request.path, exc)
            gone = web.Response(status=499)  # nginx's "client closed request"
            gone.force_close()
            return gone
        if not isinstance(exc, http_exceptions.HttpProcessingError) or status >= 500:
            return super().handle_error(request, status, exc, message)
        problem = errors.quote(str(exc.message or exc), 200)
        _log.debug("malformed HTTP request from %s: %s", request.remote, problem)
        if request.writer.output_size > 0:
            raise ConnectionError("an answer was sent already")
        error = errors.InvalidArgument(
            f"the request is not valid HTTP: {problem}", reason=Reason.MALFORMED_REQUEST
        )
        response = error_response(error)
        response.force_close()
        return response


class _Server(web.Server):
    def __call__(self) -> web_protocol.RequestHandler:
        return _Protocol(self, loop=self._loop, **self._kwargs)


class _Runner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # The application's own server, made by aiohttp; only its connection handler's
        # class differs (web.Server has no hook for it).
        server.__class__ = _Server
        return server
