"""Registers a servicer on a grpc.aio server, with the service's own request decoders.

The generated ``add_*Servicer_to_server`` functions decode requests with
``Message.FromString``, which raises on a bad body before any handler can answer it. This
builds the same handlers from the service descriptor, with decoders that never raise
(``door.tolerant``), so that every call reaches a handler that answers it properly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor

from statewrightd.api.door import tolerant


def add_servicer(server: grpc.aio.Server, service: ServiceDescriptor, servicer: object) -> None:
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in service.methods:
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        behavior = getattr(servicer, method.name)
        decode = tolerant(method.name, request)
        if method.server_streaming or method.client_streaming:
            if method.client_streaming:
                raise ValueError(f"{method.full_name}: client streams are not supported")
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                behavior,
                request_deserializer=decode,
                response_serializer=response.SerializeToString,
            )
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                behavior,
                request_deserializer=decode,
                response_serializer=response.SerializeToString,
            )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
    server.add_registered_method_handlers(service.full_name, handlers)


Behavior = Callable[..., Any]
# grpc's handler types are generic in its stubs only: these are for annotations.
Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
# What an interceptor calls for the handler of a call (None: no such method).
Continuation: TypeAlias = "Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]]"


def rewrapped(
    handler: Handler, unary: Callable[[Behavior], Behavior], stream: Callable[[Behavior], Behavior]
) -> Handler:
    """``handler`` with its behaviour wrapped, its (de)serializers kept (what an interceptor
    hands grpc back): ``unary`` wraps a unary call's, ``stream`` a response stream's.
    Client and bidirectional streams (only reflection has them) are left as they are."""
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            unary(handler.unary_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(
            stream(handler.unary_stream),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    return handler
