"""The console's HTTP server: aiohttp on the server's asyncio loop, TLS when the server has
it, the API's routes, the built pages, and drain."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from statewrightd import errors
from statewrightd.api.door import Door
from statewrightd.api.status import error_json, http_status
from statewrightd.app.wiring import Application
from statewrightd.config import ServerConfig, parse_listen
from statewrightd.console.endpoints import Endpoints
from statewrightd.console.streams import DiagnosticsSampler
from statewrightd.reasons import Reason
from statewrightd.security.interceptor import CallGate

_log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
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
    """The web console of one server process."""

    def __init__(self, app: Application, gate: CallGate, door: Door, config: ServerConfig) -> None:
        self._config = config
        self._closing = asyncio.Event()
        self.sampler = DiagnosticsSampler(app, self._closing)
        self.endpoints = Endpoints(app, gate, door, self.sampler, self._closing)
        self._runner: web.AppRunner | None = None
        self._tls: _ReloadingContext | None = None
        self.port: int | None = None

    def _web_app(self) -> web.Application:
        web_app = web.Application(
            middlewares=[_headers, _errors],
            client_max_size=self._config.limits.request_bytes,
        )
        self.endpoints.add_routes(web_app.router)
        web_app.router.add_get("/favicon.svg", _asset("favicon.svg"))
        web_app.router.add_static("/static/", STATIC, append_version=False)
        # Every other path is a page of the console, which the front end routes.
        web_app.router.add_get("/{page:.*}", _page)
        return web_app

    async def start(self) -> int:
        listen = self._config.http_listen
        assert listen is not None, "the console needs --http-listen"
        host, port = parse_listen(listen)
        context = None
        config = self._config
        if config.tls_cert is not None and config.tls_key is not None:
            self._tls = _ReloadingContext(config.tls_cert, config.tls_key, config.tls_client_ca)
            context = self._tls.context
        runner = web.AppRunner(
            self._web_app(),
            handle_signals=False,
            access_log=None,
            # A page that goes away ends its streams (and their subscriptions) at once.
            handler_cancellation=True,
            shutdown_timeout=1.0,
        )
        await runner.setup()
        self._runner = runner
        # Several server processes share the port, as they share the gRPC one.
        site = web.TCPSite(runner, host, port, ssl_context=context, reuse_port=True)
        await site.start()
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
        if self._tls is not None:
            await self._tls.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@web.middleware
async def _headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    headers = response.headers
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "no-referrer")
    if not request.path.startswith("/api/"):
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
        if exc.status == 404:
            return error_response(
                errors.NotFound(
                    f"there is no API endpoint {request.method} {request.path}",
                    reason=Reason.ENDPOINT_NOT_FOUND,
                    metadata={"path": request.path},
                )
            )
        if exc.status == 405:
            return error_response(
                errors.Unimplemented(
                    f"{request.path} does not answer {request.method}",
                    reason=Reason.METHOD_NOT_ALLOWED,
                    metadata={"method": request.method},
                )
            )
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
