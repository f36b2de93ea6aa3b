"""The Python conformance runner's own rules: substitution and loud failures."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from statewright.client import Client
from statewright.conformance import (
    ConformanceError,
    Runner,
    default_scenario_path,
    load_scenario,
    main,
)

SCENARIO = Path(__file__).resolve().parents[3] / "clients" / "conformance" / "scenario.yaml"
OPS = {
    "StartWorkflow",
    "ResumeWorkflow",
    "SignalWorkflow",
    "GetWorkflow",
    "CancelWorkflow",
    "WatchWorkflow",
    "AwaitWatch",
    "ListWorkflows",
    "GetDiagnostics",
}


def _runner(scenario: dict[str, Any] | None = None) -> tuple[Runner, io.StringIO]:
    out = io.StringIO()
    # No call reaches this address in these tests; the runner only needs a client object.
    client = Client("127.0.0.1:1")
    return Runner(client, scenario or {"steps": []}, run_id="r1", out=out), out


def test_default_scenario_is_the_shared_file() -> None:
    assert default_scenario_path() == SCENARIO
    scenario = load_scenario(SCENARIO)
    assert {step["op"] for step in scenario["steps"]} <= OPS


def test_substitution_of_run_repeat_and_saved_values() -> None:
    runner, _ = _runner()
    runner.saved["mail"] = {"workflow_id": "mail-r1", "revision": 1}
    value = runner._substitute(
        {"a": "order-${run}-${i}", "b": ["${mail.workflow_id}", 5], "c": "r${mail.revision}"},
        {"run": "r1", "i": "2"},
    )
    assert value == {"a": "order-r1-2", "b": ["mail-r1", 5], "c": "r1"}
    with pytest.raises(ConformanceError, match="no step saved"):
        runner._substitute("${nope.workflow_id}", {})


def test_unknown_ops_and_keys_fail_the_step_and_the_run() -> None:
    runner, out = _runner(
        {
            "steps": [
                {"id": "mystery", "op": "TeleportWorkflow"},
                {"id": "typo", "op": "GetDiagnostics", "expect": {"build_version_sett": True}},
                {"id": "extra", "op": "GetDiagnostics", "colour": "blue"},
            ]
        }
    )
    assert runner.run() == 3
    text = out.getvalue()
    assert "FAIL mystery: ConformanceError: unknown op 'TeleportWorkflow'" in text
    assert "FAIL typo" in text and "build_version_sett" in text
    assert "FAIL extra" in text and "colour" in text
    assert text.rstrip().endswith("conformance: 0 passed, 3 failed")


def test_await_watch_without_a_watch_fails() -> None:
    runner, out = _runner({"steps": [{"id": "w", "op": "AwaitWatch", "watch": "missing"}]})
    assert runner.run() == 1
    assert "no watch was opened" in out.getvalue()


def test_main_needs_a_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATEWRIGHT_TARGET", raising=False)
    with pytest.raises(SystemExit) as caught:
        main([str(SCENARIO)])
    assert caught.value.code == 2


def test_main_rejects_a_missing_scenario(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        main([str(tmp_path / "none.yaml"), "--target", "127.0.0.1:1"])
    assert caught.value.code == 2


def test_a_scenario_must_be_version_1(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("version: 2\nsteps: [{id: a, op: GetDiagnostics}]\n")
    with pytest.raises(ConformanceError, match="version 1"):
        load_scenario(path)
