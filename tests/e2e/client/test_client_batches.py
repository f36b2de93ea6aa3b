"""Batch operations through the Python client and its command line, against a real server:
a dry run, batches that apply their step and batches that fail on every instance, paged
failures, the listing, and cancels of a running and of a finished batch."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from statewright import (
    BatchReset,
    BatchState,
    Client,
    FailedPrecondition,
    WorkflowStatus,
    cli,
)

from tests.support.server import ServerProcess


def _waiting_instances(client: Client, count: int) -> tuple[list[str], str]:
    """Starts ``count`` WAITING instances; their names in id order, and a filter that
    matches them and no instance started before them."""
    prefix = uuid.uuid4().hex[:8]
    names = [
        client.start("mail-approval", {"topic": f"t{i}"}, workflow_id=f"{prefix}-{i}").workflow
        for i in range(count)
    ]
    since = names[0].create_time
    assert since is not None
    stamp = since.isoformat().replace("+00:00", "Z")
    return [w.name for w in names], f'status = WAITING AND create_time >= "{stamp}"'


def test_batches_apply_fail_page_list_and_cancel(module_server: ServerProcess) -> None:
    with Client(module_server.target) as client:
        names, waiting = _waiting_instances(client, 3)

        before = len(list(client.list_batch_operations()))
        preview = client.start_batch_operation(
            "pause", "incident 7", filter=waiting, definition="mail-approval", dry_run=True
        )
        assert preview.dry_run and preview.batch.matched == 3
        assert list(preview.sample) == names
        assert len(list(client.list_batch_operations())) == before  # a dry run saves nothing

        paused = client.start_batch_operation(
            "pause", "incident 7", filter=waiting, definition="mail-approval", rate=100
        )
        assert paused.batch.state is BatchState.RUNNING and paused.batch.matched == 3
        followed = list(client.follow_batch_operation(paused.batch.name, interval=0.1))
        last = followed[-1]
        assert (last.state, last.done, last.failed) == (BatchState.COMPLETED, 3, 0)
        assert all(client.get(name).paused for name in names)
        assert client.get(names[0]).pause.reason == "incident 7"  # type: ignore[union-attr]

        # Reset without entered_state wants FAILED instances: each item fails, typed.
        refused = client.start_batch_operation(BatchReset(), "undo", filter=waiting, rate=100)
        *_, ended = client.follow_batch_operation(refused.batch.name, interval=0.1)
        assert (ended.state, ended.done, ended.failed) == (BatchState.COMPLETED, 0, 3)
        first = client.get_batch_operation(refused.batch.name, failures_page_size=2)
        assert first.next_failures_page_token
        rest = client.get_batch_operation(
            refused.batch.name, failures_page_token=first.next_failures_page_token
        )
        failures = [*first.failures, *rest.failures]
        assert [f.workflow for f in failures] == names
        assert {f.code for f in failures} == {"FAILED_PRECONDITION"}
        assert all(isinstance(f.error, FailedPrecondition) for f in failures)

        listed = list(client.list_batch_operations(state="completed"))
        assert [b.name for b in listed][:2] == [refused.batch.name, paused.batch.name]
        with pytest.raises(FailedPrecondition) as finished:
            client.cancel_batch_operation(paused.batch.name, "too late")
        assert finished.value.reason == "BATCH_FINISHED"

        # One instance a second: the cancel comes long before the third.
        slow = client.start_batch_operation("unpause", "over", filter=waiting, rate=1)
        cancelled = client.cancel_batch_operation(slow.batch.name, "not yet")
        # Who cancelled it, and why (anonymous: this server authenticates no one).
        assert cancelled.state is BatchState.CANCELLED
        assert cancelled.cancel_reason == "anonymous: not yet"
        again = client.cancel_batch_operation(slow.batch.name, "still not")
        assert again.state is BatchState.CANCELLED and again.cancel_reason == "anonymous: not yet"


def test_the_command_line_starts_follows_and_lists_a_batch(module_server: ServerProcess) -> None:
    with Client(module_server.target) as client:
        names, waiting = _waiting_instances(client, 2)

    def run(*argv: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        status = cli.main(["--address", module_server.target, *argv], stdout=out, stderr=err)
        assert status == 0, err.getvalue()
        return out.getvalue()

    started = json.loads(
        run("batch", "start", "--op", "cancel", "--filter", waiting, "--reason", "postponed",
            "--rate", "100", "--batch-id", f"cli-{uuid.uuid4().hex[:8]}")
    )  # fmt: skip
    name = started["batch"]["name"]
    assert started["sample"] == names
    lines = run("batch", "get", name, "--wait", "--interval", "100ms", "-o", "text").splitlines()
    assert lines[-1] == f"{name} COMPLETED: 2 of 2 done, 0 failed"
    with Client(module_server.target) as client:
        assert {client.get(n).status for n in names} == {WorkflowStatus.CANCELLED}
    listed = json.loads(run("batch", "list", "--limit", "1"))
    assert [b["name"] for b in listed] == [name]
    assert listed[0]["operation"] == {"cancel": {}}
