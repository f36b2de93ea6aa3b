"""Reflection serves the protos with their comments: the committed descriptor set describes
exactly the files the generated modules compile (``make generate`` writes both)."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection_pb2 as pb
from statewright.v1 import task_service_pb2, workflow_service_pb2

from statewrightd.reflection import Reflection, source_info

FILES = {
    "statewright/v1/batch_service.proto",
    "statewright/v1/definition.proto",
    "statewright/v1/diagnostics.proto",
    "statewright/v1/schedule_service.proto",
    "statewright/v1/task.proto",
    "statewright/v1/task_service.proto",
    "statewright/v1/workflow.proto",
    "statewright/v1/workflow_service.proto",
}


def test_every_file_of_the_api_has_its_comments() -> None:
    assert workflow_service_pb2.DESCRIPTOR and task_service_pb2.DESCRIPTOR
    comments = source_info(descriptor_pool.Default())
    assert set(comments) == FILES, "a stale descriptors.binpb: run make generate"
    for name, info in comments.items():
        assert any(location.leading_comments.strip() for location in info.location), name


def test_a_served_file_carries_them() -> None:
    reflection = Reflection(["statewright.v1.WorkflowService"])
    answer = reflection.answer(
        pb.ServerReflectionRequest(
            file_containing_symbol="statewright.v1.WorkflowService.StartWorkflow"
        )
    )
    first = answer.file_descriptor_response.file_descriptor_proto[0]
    served = descriptor_pb2.FileDescriptorProto.FromString(first)
    assert served.name == "statewright/v1/workflow_service.proto"
    comments = [location.leading_comments for location in served.source_code_info.location]
    assert " Starts an instance of a definition and runs its first step.\n" in comments
