"""The web console: an HTTP/JSON API under ``/api/v1`` and the pages that use it.

It runs on the server's own asyncio loop (aiohttp) and calls the gRPC servicers' own
handlers, never gRPC to itself. The API's routes are read from the protos'
``google.api.http`` annotations (``http_rules``) and transcoded (``transcoder``): requests
are the RPCs' request messages, answers their response messages, both in protobuf's
canonical JSON; errors carry the same codes, reasons and metadata as the gRPC API's;
authentication, roles and limits are the gRPC API's own (``admission``). Live updates are
Server-Sent Events (``sse``). The OpenAPI document generated from the same annotations is
served at ``/api/v1/openapi.json``. The pages are a bundle built from ``console/`` at the
repository's root and shipped in ``static/`` (see docs/console.md).
"""

from statewrightd.console.web import Console

__all__ = ["Console"]
