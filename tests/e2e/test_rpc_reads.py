"""Read RPCs over real gRPC on PostgreSQL and SQLite: GetWorkflow, ListWorkflows (filters
and paging), GetDiagnostics, GetWorkflowDiagnostics, ListDefinitions and GetDefinition."""

from __future__ import annotations

import re
import sys

import grpc
from statewright.v1 import diagnostics_pb2, workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    CANCELLED,
    COMPLETED,
    RUNNING,
    WAITING,
    Client,
    expect_error,
    rpc_failure,
    uid,
)
from tests.support.deployment import EXAMPLES, TEST_DEFINITIONS, example_definitions

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
DEFINITION_FILES = sorted([*example_definitions(), *TEST_DEFINITIONS.glob("*.yaml")])
ALL_DEFINITIONS = sorted(p.stem for p in DEFINITION_FILES)
# Each file's (name, version) as it declares them.
VERSIONS = {
    p.stem: int(re.search(r"^version: (\d+)$", p.read_text(), re.MULTILINE).group(1))  # type: ignore[union-attr]
    for p in DEFINITION_FILES
}


def test_get_unknown_workflow_is_not_found(client: Client) -> None:
    wid = uid("missing")
    info = expect_error(lambda: client.get(wid), NOT_FOUND, "WORKFLOW_NOT_FOUND")
    assert info.metadata["workflow_id"] == wid


def test_list_filters_and_pages_without_duplicates_or_gaps(client: Client) -> None:
    # Only this test starts `catalog` instances on this module's server.
    ids = [client.start("catalog", input={"n": i}).workflow.workflow_id for i in range(7)]
    client.resume(ids[1], "finish")
    client.resume(ids[4], "finish")
    client.cancel(ids[5])

    pages = []
    token = ""
    while True:
        page = client.list_page(definition="catalog", page_size=3, page_token=token)
        pages.append([w.workflow_id for w in page.workflows])
        if len(pages) == 1:
            # Instances created while a listing is under way come after it, never twice.
            late = [client.start("catalog").workflow.workflow_id for _ in range(2)]
        token = page.next_page_token
        if not token:
            break
        assert len(pages) < 10, pages
    assert [len(p) for p in pages] == [3, 3, 3]
    flat = [wid for page in pages for wid in page]
    assert flat == ids + late  # oldest first, each exactly once

    def listed(status: workflow_pb2.WorkflowStatus.ValueType) -> list[str]:
        return [w.workflow_id for w in client.list_all(definition="catalog", status=status)]

    assert listed(WAITING) == [ids[0], ids[2], ids[3], ids[6], *late]
    assert listed(COMPLETED) == [ids[1], ids[4]]
    assert listed(CANCELLED) == [ids[5]]
    assert listed(RUNNING) == []
    # A status filter alone spans definitions.
    completed = client.list_all(status=COMPLETED, page_size=2)
    assert all(w.status == COMPLETED for w in completed)
    assert {ids[1], ids[4]} <= {w.workflow_id for w in completed}
    # What is listed is what Get answers.
    assert client.list_page(definition="catalog", page_size=1).workflows[0] == client.get(ids[0])


def test_list_newest_first_by_prefix_with_pages_that_hold_still(client: Client) -> None:
    prefix = uid("ordered")
    ids = [
        client.start("tally", workflow_id=f"{prefix}-{i}").workflow.workflow_id for i in range(5)
    ]
    client.start("tally", workflow_id=uid("other"))

    def page(token: str = "", order_by: str = "create_time desc") -> pb.ListWorkflowsResponse:
        request = pb.ListWorkflowsRequest(
            order_by=order_by, id_prefix=prefix, page_size=2, page_token=token
        )
        return client.stub.ListWorkflows(request, timeout=10)

    first = page()
    assert [w.workflow_id for w in first.workflows] == [ids[4], ids[3]]
    # An instance started between pages is newer than the first page: it never shifts a
    # later one.
    late = client.start("tally", workflow_id=f"{prefix}-late").workflow.workflow_id
    second = page(first.next_page_token)
    third = page(second.next_page_token)
    assert [w.workflow_id for w in [*second.workflows, *third.workflows]] == [
        ids[2],
        ids[1],
        ids[0],
    ]
    assert third.next_page_token == ""
    assert [w.workflow_id for w in page().workflows] == [late, ids[4]]
    assert [w.workflow_id for w in page(order_by="create_time").workflows] == ids[:2]
    # The instance changed last comes first by update time.
    client.signal(ids[1], "close")
    assert page(order_by="update_time desc").workflows[0].workflow_id == ids[1]
    # A token continues only the order it was issued for.
    code, _ = rpc_failure(lambda: page(first.next_page_token, "create_time"))
    assert code is INVALID
    info = expect_error(lambda: page(order_by="newest"), INVALID, "INVALID_ORDER_BY")
    assert info.metadata["field"] == "order_by"
    info = expect_error(
        lambda: client.stub.ListWorkflows(pb.ListWorkflowsRequest(id_prefix="-x"), timeout=10),
        INVALID,
        "INVALID_FIELD",
    )
    assert info.metadata["field"] == "id_prefix"


def test_list_refuses_bad_page_tokens_and_sizes(client: Client) -> None:
    for token in ("garbage", "%%%", "o5"):
        code, _ = rpc_failure(lambda t=token: client.list_page(page_token=t))  # type: ignore[misc]
        assert code is INVALID, token
    client.start("tally")
    client.start("tally")
    token = client.list_page(definition="tally", page_size=1).next_page_token
    assert token
    # A token is only valid for the filters it was issued for.
    code, _ = rpc_failure(lambda: client.list_page(definition="catalog", page_token=token))
    assert code is INVALID
    code, _ = rpc_failure(lambda: client.list_page(page_size=-1))
    assert code is INVALID
    code, _ = rpc_failure(
        lambda: client.stub.ListWorkflows(pb.ListWorkflowsRequest(status=99), timeout=10)  # type: ignore[arg-type]
    )
    assert code is INVALID
    code, _ = rpc_failure(lambda: client.list_page(definition="Not A Name"))
    assert code is INVALID
    # Past the maximum the page size is capped rather than refused.
    assert len(client.list_page(page_size=5000).workflows) >= 2


def test_get_diagnostics_reports_the_runtime(client: Client, module_backend: str) -> None:
    client.start("mail-approval")
    d = client.diagnostics()
    loop = d.event_loop
    assert loop.phase == diagnostics_pb2.EVENT_LOOP_PHASE_RUNNING
    assert loop.dispatch_count > 0
    assert loop.max_queue_depth >= loop.queue_depth >= 0
    assert loop.lag_max.ToNanoseconds() >= loop.lag_average.ToNanoseconds() >= 0
    assert loop.slow_dispatch_threshold.ToNanoseconds() > 0
    assert 0 <= loop.slow_dispatch_count <= loop.dispatch_count
    persistence = d.persistence
    assert persistence.backend == module_backend
    assert persistence.queue_capacity == 10_000
    assert persistence.saves >= 1 and persistence.batches >= 1
    assert 1.0 <= persistence.mean_batch_size <= persistence.saves
    assert (
        persistence.save_latency_p99.ToNanoseconds() >= persistence.save_latency_p50.ToNanoseconds()
    )
    assert persistence.save_latency_p50.ToNanoseconds() > 0
    assert persistence.unknown_outcomes == 0
    assert d.admissions.cached_sessions >= 1
    assert d.admissions.recovery_required == 0
    expected = {f"definitions/{name}/versions/{VERSIONS[name]}" for name in ALL_DEFINITIONS}
    assert set(d.definitions) == expected
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", d.build.version)
    assert d.build.python_version == sys.version.split()[0]
    assert d.build.grpc_version == grpc.__version__
    assert d.uptime.ToNanoseconds() > 0
    later = client.diagnostics()
    assert later.uptime.ToNanoseconds() > d.uptime.ToNanoseconds()
    assert later.event_loop.dispatch_count > loop.dispatch_count


def test_get_workflow_diagnostics_reports_the_instance(client: Client) -> None:
    wid = uid("diag")
    client.start("review-loop", workflow_id=wid)
    client.signal(wid, "score", {"score": 0.1})
    client.signal(wid, "revised", {"document": "d"})
    d = client.workflow_diagnostics(wid).diagnostics
    assert d.name == f"workflows/{wid}"
    assert d.admission_state == diagnostics_pb2.ADMISSION_STATE_IDLE
    assert d.cached
    assert d.revision == 3
    assert [(t.from_state, t.to_state, t.event) for t in d.recent_transitions] == [
        ("evaluating", "improving", "score"),
        ("improving", "evaluating", "revised"),
    ]
    assert not d.HasField("recovery")
    expect_error(
        lambda: client.workflow_diagnostics(uid("missing")), NOT_FOUND, "WORKFLOW_NOT_FOUND"
    )


def test_list_definitions_with_sources_graphs_and_paging(client: Client) -> None:
    everything = client.definitions().definitions
    assert [d.definition for d in everything] == ALL_DEFINITIONS
    for d in everything:
        assert d.name == f"definitions/{d.definition}/versions/{VERSIONS[d.definition]}"
        assert d.version == VERSIONS[d.definition]
        assert d.source.lstrip().startswith(("#", "name:"))
        assert f"name: {d.definition}" in d.source
        assert d.mermaid.startswith("stateDiagram")
        assert re.fullmatch(r"[0-9a-f]{64}", d.digest)
        assert d.states and d.description
        assert d.source_name.endswith(f"{d.definition}.yaml")
        assert d.create_time.seconds > 0
    mail = next(d for d in everything if d.definition == "mail-approval")
    assert list(mail.states) == ["draft", "drafting", "awaiting_approval", "send", "rejected"]
    assert list(mail.events) == ["approve", "reject"]
    assert mail.source == (EXAMPLES / "mail-approval.yaml").read_text()
    # Paging walks the same list, each version once.
    seen: list[str] = []
    token = ""
    for _ in range(10):
        page = client.stub.ListDefinitions(
            pb.ListDefinitionsRequest(page_size=3, page_token=token), timeout=10
        )
        seen += [d.name for d in page.definitions]
        token = page.next_page_token
        if not token:
            break
    assert seen == [d.name for d in everything]
    only = client.definitions("mail-approval").definitions
    assert [d.name for d in only] == ["definitions/mail-approval/versions/2"]
    assert list(client.definitions("no-such").definitions) == []
    code, _ = rpc_failure(
        lambda: client.stub.ListDefinitions(pb.ListDefinitionsRequest(page_token="x"), timeout=10)
    )
    assert code is INVALID


def test_get_definition_latest_explicit_and_unknown(client: Client) -> None:
    latest = client.definition("definitions/review-loop").definition
    explicit = client.definition("definitions/review-loop/versions/1").definition
    assert latest == explicit
    assert latest.source == (EXAMPLES / "review-loop.yaml").read_text()
    assert "evaluating" in latest.mermaid and "improving" in latest.mermaid
    info = expect_error(
        lambda: client.definition("definitions/no-such"), NOT_FOUND, "DEFINITION_NOT_FOUND"
    )
    assert info.metadata["definition"] == "no-such"
    expect_error(
        lambda: client.definition("definitions/review-loop/versions/2"),
        NOT_FOUND,
        "DEFINITION_NOT_FOUND",
    )
