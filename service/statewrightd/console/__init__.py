"""The web console: an HTTP/JSON API under ``/api/v1`` and the pages that use it.

It runs on the server's own asyncio loop (aiohttp) and calls the application layer, as
the gRPC servicers do, never gRPC to itself. Requests are the API's request messages,
answers its response messages, both in protobuf's canonical JSON; errors carry the same
codes, reasons and metadata as the gRPC API's; authentication and roles are the gRPC
API's own (``security.interceptor.CallGate``), decided by the RPC each endpoint stands for.
Live updates are Server-Sent Events. The pages are a bundle built from ``console/`` at
the repository's root and shipped in ``static/`` (see docs/console.md).
"""

from statewrightd.console.web import Console

__all__ = ["Console"]
