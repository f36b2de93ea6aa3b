"""gRPC server reflection, both ``grpc.reflection.v1`` and ``v1alpha``, for grpcurl and co.

grpcio-reflection serves only ``v1alpha``, and resolves a symbol only when its descriptor
pool does: the pool knows messages, fields, enums and services, but not a method
(``statewright.v1.WorkflowService.StartWorkflow``) nor an enum value named through its
enum, which is what ``grpcurl describe`` asks for. This servicer answers both versions (their
messages are the same on the wire, only the package differs) from one implementation,
and resolves any symbol that names a member of a descriptor the pool knows.

The generated modules compile their files without source info, so a pool knows no
comments; ``make generate`` also writes the same files with their comments
(``statewright/v1/descriptors.binpb``), and the files served carry those comments, which
``grpcurl describe`` prints above each service, method, message and field.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from importlib import resources
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor
from google.rpc import error_details_pb2, status_pb2
from grpc_reflection.v1alpha import reflection_pb2 as pb

_log = logging.getLogger(__name__)

V1ALPHA = "grpc.reflection.v1alpha.ServerReflection"
V1 = "grpc.reflection.v1.ServerReflection"
METHOD = "ServerReflectionInfo"

Pool = descriptor_pool.DescriptorPool

# Imported so that their files are in the pool whatever else was imported: clients decode
# the error details of a status (google.rpc.ErrorInfo) through reflection.
ERROR_FILES = (status_pb2.DESCRIPTOR.name, error_details_pb2.DESCRIPTOR.name)


def _add_v1_file(pool: Pool) -> None:
    """Describe ``grpc.reflection.v1`` in the pool: v1alpha's file under v1's package."""
    name = "grpc/reflection/v1/reflection.proto"
    try:
        pool.FindFileByName(name)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(proto)
    old, new = proto.package, "grpc.reflection.v1"
    proto.name, proto.package = name, new
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(f".{old}."):
                field.type_name = f".{new}." + field.type_name.removeprefix(f".{old}.")
    for service in proto.service:
        for method in service.method:
            method.input_type = f".{new}." + method.input_type.removeprefix(f".{old}.")
            method.output_type = f".{new}." + method.output_type.removeprefix(f".{old}.")
    proto.options.Clear()
    pool.Add(proto)


def _member_exists(pool: Pool, parent: str, member: str) -> bool:
    finders = (
        (pool.FindServiceByName, ("methods_by_name",)),
        (pool.FindEnumTypeByName, ("values_by_name",)),
        (
            pool.FindMessageTypeByName,
            ("fields_by_name", "nested_types_by_name", "enum_types_by_name", "oneofs_by_name"),
        ),
    )
    for find, members in finders:
        try:
            descriptor = find(parent)
        except KeyError:
            continue
        return any(member in getattr(descriptor, table) for table in members)
    return False


def file_containing_symbol(pool: Pool, symbol: str) -> FileDescriptor:
    """The file that declares ``symbol``, including methods and enum-scoped values."""
    try:
        return pool.FindFileContainingSymbol(symbol)
    except KeyError:
        parent, _, member = symbol.rpartition(".")
        if not parent or not _member_exists(pool, parent, member):
            raise
        return pool.FindFileContainingSymbol(parent)


Comments = Mapping[str, descriptor_pb2.SourceCodeInfo]


def source_info(pool: Pool, package: str = "statewright.v1") -> Comments:
    """Each file's comments from ``package``'s descriptor set, by file name: only for a
    file the set describes exactly as ``pool`` does (a stale set would point comments at
    the wrong elements)."""
    try:
        data = (resources.files(package) / "descriptors.binpb").read_bytes()
    except OSError:
        _log.warning("%s has no descriptors.binpb: reflection serves no comments", package)
        return {}
    found: dict[str, descriptor_pb2.SourceCodeInfo] = {}
    for file in descriptor_pb2.FileDescriptorSet.FromString(data).file:
        info = descriptor_pb2.SourceCodeInfo()
        info.CopyFrom(file.source_code_info)
        file.ClearField("source_code_info")
        pooled = descriptor_pb2.FileDescriptorProto()
        try:
            pool.FindFileByName(file.name).CopyToProto(pooled)
        except KeyError:
            continue
        if pooled == file:
            found[file.name] = info
        else:
            _log.warning("%s differs from the served API: served without comments", file.name)
    return found


def _with_dependencies(file: FileDescriptor, comments: Comments) -> list[bytes]:
    """The file first, then everything it imports, each once, as serialized protos, with
    the comments known for them."""
    seen: dict[str, FileDescriptor] = {}
    stack = [file]
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen[current.name] = current
        stack.extend(reversed(current.dependencies))
    out = []
    for descriptor in seen.values():
        proto = descriptor_pb2.FileDescriptorProto()
        descriptor.CopyToProto(proto)
        info = comments.get(descriptor.name)
        if info is not None:
            proto.source_code_info.CopyFrom(info)
        out.append(proto.SerializeToString())
    return out


class Reflection:
    """Answers ServerReflectionInfo for the listed services from a descriptor pool."""

    def __init__(self, services: Iterable[str], pool: Pool | None = None) -> None:
        self._pool = pool if pool is not None else descriptor_pool.Default()
        _add_v1_file(self._pool)
        self._comments = source_info(self._pool)
        self._services = tuple(sorted({*services, V1, V1ALPHA}))

    def answer(self, request: pb.ServerReflectionRequest) -> pb.ServerReflectionResponse:
        response = pb.ServerReflectionResponse(valid_host=request.host, original_request=request)
        try:
            self._fill(request, response)
        except KeyError:
            response.error_response.error_code = grpc.StatusCode.NOT_FOUND.value[0]
            response.error_response.error_message = "not found"
        return response

    def _fill(
        self, request: pb.ServerReflectionRequest, response: pb.ServerReflectionResponse
    ) -> None:
        pool = self._pool
        asked = request.WhichOneof("message_request")
        if asked == "list_services":
            response.list_services_response.service.extend(
                pb.ServiceResponse(name=name) for name in self._services
            )
        elif asked == "file_by_filename":
            files = _with_dependencies(
                pool.FindFileByName(request.file_by_filename), self._comments
            )
            response.file_descriptor_response.file_descriptor_proto.extend(files)
        elif asked == "file_containing_symbol":
            file = file_containing_symbol(pool, request.file_containing_symbol)
            response.file_descriptor_response.file_descriptor_proto.extend(
                _with_dependencies(file, self._comments)
            )
        elif asked == "file_containing_extension":
            wanted = request.file_containing_extension
            message = pool.FindMessageTypeByName(wanted.containing_type)
            extension = pool.FindExtensionByNumber(message, wanted.extension_number)
            response.file_descriptor_response.file_descriptor_proto.extend(
                _with_dependencies(
                    pool.FindFileContainingSymbol(extension.full_name), self._comments
                )
            )
        elif asked == "all_extension_numbers_of_type":
            message = pool.FindMessageTypeByName(request.all_extension_numbers_of_type)
            numbers = sorted(e.number for e in pool.FindAllExtensions(message))
            response.all_extension_numbers_response.base_type_name = message.full_name
            response.all_extension_numbers_response.extension_number.extend(numbers)
        else:
            response.error_response.error_code = grpc.StatusCode.INVALID_ARGUMENT.value[0]
            response.error_response.error_message = "no request in the message"

    async def info(
        self,
        requests: AsyncIterator[pb.ServerReflectionRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[pb.ServerReflectionResponse]:
        async for request in requests:
            yield self.answer(request)


def enable_reflection(server: grpc.aio.Server, services: Sequence[str]) -> None:
    """Serve both reflection versions on ``server``, listing ``services`` and themselves."""
    reflection = Reflection(services)
    handler = grpc.stream_stream_rpc_method_handler(
        reflection.info,
        request_deserializer=pb.ServerReflectionRequest.FromString,
        response_serializer=pb.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(name, {METHOD: handler}) for name in (V1, V1ALPHA)]
    )
