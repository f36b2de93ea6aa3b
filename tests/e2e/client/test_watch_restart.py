"""A client watch survives a server restart: every revision is seen exactly once.

The server is SIGKILLed mid-watch and a new process is started on the same port and
database; steps made while the watch is disconnected are replayed from history when it
resumes with after_revision.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

from statewright import Client, WatchEvent, WatchEventType, WorkflowStatus

from tests.support.deployment import definitions_dir, running_server
from tests.support.ports import stable_port
from tests.support.server import wait_until


def test_watch_resumes_across_a_server_restart(database_url: str, tmp_path: Path) -> None:
    port = stable_port()
    listen = ["--listen", f"127.0.0.1:{port}"]
    definitions = definitions_dir(tmp_path / "definitions")
    events: list[WatchEvent] = []
    errors: list[BaseException] = []
    with Client(f"127.0.0.1:{port}") as client:
        with running_server(database_url, definitions, cwd=tmp_path, extra_args=listen) as first:
            started = client.start("review-loop", workflow_id=f"restart-{uuid.uuid4().hex[:8]}")
            wf_name = started.workflow.name

            seen = threading.Event()

            def consume() -> None:
                try:
                    for event in client.watch(wf_name, reconnect_budget=60.0):
                        events.append(event)
                        seen.set()
                except BaseException as exc:  # asserted on below
                    errors.append(exc)

            thread = threading.Thread(target=consume, daemon=True)
            thread.start()
            assert seen.wait(10)
            assert client.signal(wf_name, "score", {"score": 0.4}).accepted
            assert wait_until(lambda: len(events) >= 2, 10)
            first.kill()

        with running_server(database_url, definitions, cwd=tmp_path, extra_args=listen):
            # Revisions 3 and 4 may be saved before the watch reconnects: it must replay them.
            assert client.signal(wf_name, "revised", {"document": "v2"}).accepted
            final = client.signal(wf_name, "score", {"score": 0.9})
            assert final.workflow.status is WorkflowStatus.COMPLETED
            thread.join(60)
            assert not thread.is_alive(), "the watch did not finish after the restart"

    assert not errors, errors
    assert [e.revision for e in events] == [1, 2, 3, 4]
    assert events[0].type is WatchEventType.CURRENT
    assert all(e.type is WatchEventType.STEP for e in events[1:])
    assert events[-1].workflow.status is WorkflowStatus.COMPLETED
