"""`statewrightd dev`: one command, a SQLite file, the example
definitions; mail-approval runs from start to COMPLETED."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.api import COMPLETED, WAITING, Client, context_of
from tests.support.deployment import EXAMPLES, example_definitions
from tests.support.server import STATEWRIGHTD, ServerProcess


def test_dev_serves_the_examples_from_a_sqlite_file(tmp_path: Path) -> None:
    # `dev` resolves its defaults against the working directory, as in a checkout.
    shutil.copytree(EXAMPLES, tmp_path / "examples" / "definitions")
    server = ServerProcess(database_url="unused", cwd=tmp_path)
    server.args = [*STATEWRIGHTD, "dev", "--listen", "127.0.0.1:0"]
    with server, Client(server.target) as c:
        names = {d.definition for d in c.definitions().definitions}
        assert names == {p.stem for p in example_definitions()}
        assert c.diagnostics().persistence.backend == "sqlite"
        started = c.start("mail-approval", input={"topic": "quarterly report"}).workflow
        assert (started.status, started.state) == (WAITING, "awaiting_approval")
        done = c.resume(started.workflow_id, "approve", input={"approver": "dana"}).workflow
        assert (done.status, done.revision) == (COMPLETED, 2)
        ctx = context_of(done)
        assert ctx["draft"] == "Dear team: quarterly report"
        assert ctx["sent"] and ctx["notes"] == ["sent after approval by dana"]
        assert c.get(started.workflow_id) == done
    assert (tmp_path / "statewright-dev.db").is_file()
