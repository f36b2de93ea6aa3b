"""What every HTTP call passes before its handler runs, as its RPC passes over gRPC: the
server's door (draining, undecodable requests), the origin check, and the call gate
(authentication, the method's role and scopes, the caller's rate; its open streams)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

from aiohttp import web
from google.protobuf.message import Message

from statewrightd import context as caller
from statewrightd.api.door import Door
from statewrightd.console.guard import check_origin
from statewrightd.security.interceptor import CallGate
from statewrightd.security.roles import METHOD_RULES, UNLISTED, Grant, Principal


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


class Admission:
    def __init__(self, gate: CallGate, door: Door) -> None:
        self.gate = gate
        self._door = door

    @contextlib.asynccontextmanager
    async def admitted(
        self, request: web.Request, rpc: str, message: Message
    ) -> AsyncIterator[tuple[Principal, list[Grant]]]:
        """The door, then the call gate, as the RPC ``rpc`` (its full name) passes them."""
        peer = request.remote or "unknown"
        self._door.enter(message, peer)
        try:
            check_origin(request)
            header = request.headers.get("Authorization")
            metadata = (("authorization", header),) if header is not None else ()
            rule = METHOD_RULES.get(rpc, UNLISTED)
            principal, grants = await self.gate.admit(
                rule, rpc.rpartition("/")[2], message, metadata, _auth_context(request)
            )
            # History records who stepped: the same principal names as over gRPC.
            caller.set_actor(principal.name)
            yield principal, grants
        finally:
            self._door.leave()

    @contextlib.contextmanager
    def stream(self, principal: Principal) -> Iterator[None]:
        """One open stream of ``principal``, counted against its limit and the server's."""
        self.gate.open_watch(principal)
        try:
            yield
        finally:
            self.gate.close_watch(principal)
