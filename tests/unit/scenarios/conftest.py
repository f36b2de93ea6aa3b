"""A small definition with every kind of state the runner drives, and a way to run
``statewrightd test`` in-process on scenario files written by a test."""

from __future__ import annotations

import argparse
import io
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from statewrightd.scenarios.command import scenarios_command
from statewrightd.scenarios.options import add_arguments

TICKET = """
name: ticket
version: 1
context:
  n:    {type: int, default: 0}
  tags: {type: list, reducer: append, default: []}
  meta: {type: map, default: {}}
  flag: {type: bool, default: false}
  note: {type: string, default: ""}
  when: {type: string, default: "1h"}
states:
  open: {wait: true}
  working:
    task:
      queue: work
      input: "{'n': context.n, 'who': workflow.id}"
      timeouts: {start_to_close: 1m, schedule_to_close: 1h}
      retry: {max_attempts: 3, initial_interval: 10s, backoff: 2.0, max_interval: 1m}
      apply: {note: "string(result.note)"}
  late: {}
  done: {}
  broken: {}
transitions:
  - {from: open, on: go, to: working, set: {n: "context.n + 1"}}
  - {from: open, after_expr: "duration(context.when)", to: late, set: {tags: "'late'"}}
  - {from: open, after: 2h, to: done}
  - {from: working, to: done}
  - {from: working, on: task_failed, to: broken, set: {meta: "event.payload"}}
  - {from: late, on: poke, to: done, guard: "event.payload.hard == true"}
"""


@dataclass
class Run:
    code: int
    out: str
    err: str


Runner = Callable[..., Run]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ticket.yaml").write_text(TICKET)
    return tmp_path


@pytest.fixture
def run(project: Path, monkeypatch: pytest.MonkeyPatch) -> Runner:
    """``run(text, *flags)`` writes ``ticket.test.yaml`` and runs ``statewrightd test`` on
    it; ``run(None, *flags)`` runs on what is there."""
    monkeypatch.chdir(project)

    def go(
        text: str | None,
        *flags: str,
        name: str = "ticket.test.yaml",
        paths: list[str] | None = None,
    ) -> Run:
        if text is not None:
            (project / name).write_text(textwrap.dedent(text))
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args([*flags, *(paths if paths is not None else [name])])
        out, err = io.StringIO(), io.StringIO()
        code = scenarios_command(args, out=out, err=err)
        return Run(code, out.getvalue(), err.getvalue())

    return go
