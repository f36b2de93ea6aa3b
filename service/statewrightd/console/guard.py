"""Which requests the HTTP server answers at all, before any credentials are looked at.

**Host.** A page of another site can make a browser send requests to a server on the
user's own machine or network by a name the attacker controls that resolves there (DNS
rebinding): the browser then treats the answers as the attacker's own. With
authentication off (``statewrightd dev``), nothing else would stop it. So the ``Host``
header must name this server: its listen address (any address of the machine when it
listens on all of them), ``localhost`` when it listens on a loopback or every address,
or a name given with ``--http-allowed-hosts`` (``.example.com`` takes every name under
it, ``*`` any name at all, for a proxy that checks names itself).

**Origin.** A request a page of another origin sends is refused; a page reads nothing
this API answers without CORS, and it answers no CORS request. State-changing requests
are JSON only (``inputs.check_json_type``): a form or a plain-text POST, which a page can
send without asking first, never reaches a handler.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from aiohttp import web

from statewrightd import errors
from statewrightd.reasons import Reason

_WILDCARDS = ("", "0.0.0.0", "::")


def _host_part(header: str) -> str:
    """``example.com:8080`` -> ``example.com``; ``[::1]:80`` -> ``::1``; lowercased, without
    a trailing dot."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    if header.count(":") == 1:
        header = header.partition(":")[0]
    return header.rstrip(".")


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class HostGuard:
    """Decides whether a ``Host`` header names this server."""

    def __init__(self, listen_host: str, allowed: Iterable[str] = ()) -> None:
        listen = listen_host.strip("[]").lower()
        self._any = "*" in allowed
        self._names = {a.lower().rstrip(".") for a in allowed if a and not a.startswith(".")}
        self._suffixes = tuple(a.lower().rstrip(".") for a in allowed if a.startswith("."))
        self._wildcard = listen in _WILDCARDS
        address = _ip(listen)
        self._listen_ip = address
        self._loopback = (address is not None and address.is_loopback) or listen == "localhost"
        if address is None and not self._wildcard:
            self._names.add(listen)  # listening on a name: that name

    def allows(self, header: str | None) -> bool:
        if self._any or header is None:
            # No Host at all is HTTP/1.0 from a tool, never a browser.
            return True
        host = _host_part(header)
        if host in self._names or (self._suffixes and host.endswith(self._suffixes)):
            return True
        address = _ip(host)
        if address is not None:
            if self._wildcard or address == self._listen_ip:
                return True
            return self._loopback and address.is_loopback
        if host == "localhost" or host.endswith(".localhost"):
            return self._wildcard or self._loopback
        return False

    def check(self, request: web.BaseRequest) -> None:
        header = request.headers.get("Host")
        if not self.allows(header):
            raise errors.PermissionDenied(
                f"this server does not answer to the name {errors.quote(header or '', 100)!r}; "
                "a name it serves under is given with --http-allowed-hosts",
                reason=Reason.HOST_NOT_ALLOWED,
                metadata={"host": errors.quote(header or "", 100)},
            )


def check_origin(request: web.BaseRequest) -> None:
    """Refuse a request sent by a page of another origin (the Host is checked already)."""
    origin = request.headers.get("Origin")
    if origin is None or (origin == "null" and request.method == "GET"):
        return
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:
        netloc = ""
    if netloc.lower() != request.headers.get("Host", "").lower():
        raise errors.PermissionDenied(
            "requests from pages of another origin are refused", reason=Reason.CROSS_ORIGIN
        )
