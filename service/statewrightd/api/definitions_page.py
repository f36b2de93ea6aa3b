"""ListDefinitions, for the gRPC API and the console alike."""

from __future__ import annotations

from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.api import responses
from statewrightd.api import validation as v
from statewrightd.app.wiring import Application


async def list_definitions(
    app: Application, request: pb.ListDefinitionsRequest
) -> pb.ListDefinitionsResponse:
    if request.definition:
        v.definition_name(request.definition)
    size = v.page_size(request.page_size)
    items = [
        item
        for item in await app.reads.definitions()
        if not request.definition or item.definition.name == request.definition
    ]
    offset = _offset_token(request.page_token, len(items))
    page = items[offset : offset + size]
    next_offset = offset + len(page)
    next_token = f"o{next_offset}" if next_offset < len(items) else ""
    return responses.definitions_response(page, next_token)


def _offset_token(token: str, limit: int) -> int:
    # Definitions are few and immutable, ordered by (name, version): an offset is stable.
    if not token:
        return 0
    digits = token[1:]
    # isascii: a digit to str.isdigit such as "²" is none to int().
    if (
        not token.startswith("o")
        or not (digits.isascii() and digits.isdigit())
        or int(digits) > limit
    ):
        raise v.bad_page_token()
    return int(token[1:])
