"""``statewright.testing``: scenarios in a user's own pytest suite."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from statewright.testing import (
    NoTask,
    Scenario,
    ScenarioCase,
    ScenarioFileInvalid,
    StepRefused,
    Timer,
    run_scenario,
    scenarios,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "definitions"


def test_a_scenario_drives_an_instance_and_shows_it() -> None:
    with Scenario(EXAMPLES / "ticket-escalation.yaml") as wf:
        wf.start({"title": "VPN down"})
        assert (wf.state, wf.status, wf.revision) == ("open", "WAITING", 1)
        assert wf.timers == [Timer("escalated", timedelta(minutes=15))]
        wf.advance("15m")
        assert wf.state == "escalated" and wf.context["escalated"] is True
        with pytest.raises(StepRefused) as refused:
            wf.signal("take")
        assert (refused.value.code, refused.value.reason) == ("FAILED_PRECONDITION", "NOT_RUNNING")
        wf.resume("take", {"assignee": "ann"}).signal("resolve")
        assert (wf.state, wf.status, wf.failure) == ("resolved", "COMPLETED", None)


def test_workers_complete_fail_and_time_out_tasks() -> None:
    wf = Scenario("order-fulfilment", definitions=[EXAMPLES], workflow_id="o-1")
    wf.start({"items": [{"sku": "a"}], "price": 3})
    assert [(t.queue, t.status, t.input) for t in wf.tasks] == [
        ("payments", "SCHEDULED", {"order": "o-1", "amount": 3.0})
    ]
    wf.fail_task("payments", "DOWN", "later").time_out_task("payments")
    assert wf.tasks[0].attempt == 2 and wf.tasks[0].status == "BACKOFF"
    wf.complete_task("payments", {"id": "ch"})
    assert wf.state == "shipping"
    wf.fail_task("shipping", "LOST", non_retryable=True)
    assert wf.state == "refunding"
    with pytest.raises(NoTask, match="no task is open on queue 'shipping'"):
        wf.complete_task("shipping")
    wf.close()


def test_a_refused_start_and_an_unknown_definition() -> None:
    wf = Scenario(EXAMPLES / "order-pricing.yaml")
    with pytest.raises(StepRefused) as refused:
        wf.start({"coupon": "X"})
    assert refused.value.reason == "UNKNOWN_FIELD"
    with pytest.raises(ValueError, match="no definition 'nope'"):
        Scenario("nope", definitions=[EXAMPLES])


def test_cancel_and_failure() -> None:
    wf = Scenario(EXAMPLES / "mail-approval.yaml", clock="2030-01-01T09:00:00Z")
    wf.start({"topic": "t"}).cancel("moved")
    assert wf.status == "CANCELLED"
    assert wf.failure is not None and wf.failure["reason"] == "CANCELLED"
    assert wf.now.isoformat() == "2030-01-01T09:00:00+00:00"


def test_run_scenario_passes_and_fails_as_pytest_expects(tmp_path: Path) -> None:
    results = run_scenario(EXAMPLES / "review-loop.test.yaml")
    assert len(results) == 6 and all(r.passed for r in results)
    bad = tmp_path / "bad.test.yaml"
    bad.write_text(
        f"definition: {EXAMPLES / 'review-loop.yaml'}\n"
        "scenarios:\n  - name: wrong\n    steps:\n      - start: {}\n"
        "        expect: {state: accepted}\n"
    )
    with pytest.raises(AssertionError) as failed:
        run_scenario(bad)
    assert "1 of 1 scenario(s) failed" in str(failed.value)
    assert 'expected: "accepted"' in str(failed.value)
    bad.write_text("scenarios: []\n")
    with pytest.raises(ScenarioFileInvalid) as invalid:
        run_scenario(bad)
    assert "scenarios must be a non-empty list" in invalid.value.problems[0]


async def test_it_works_from_an_async_test() -> None:
    wf = Scenario(EXAMPLES / "review-loop.yaml")
    wf.start().signal("score", {"score": 1})
    assert wf.state == "accepted"


def test_without_the_server_the_import_says_what_to_install() -> None:
    # The client distribution does not depend on the server's: the import explains.
    code = (
        "import sys; sys.modules['statewrightd'] = None\n"
        "try:\n    import statewright.testing\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "comes with the server distribution 'statewrightd'" in done.stdout
    assert "pip install -e . -e clients/python" in done.stdout


@pytest.mark.parametrize("case", scenarios(EXAMPLES / "review-loop.test.yaml"), ids=str)
def test_each_scenario_of_a_file_is_a_test_of_its_own(case: ScenarioCase) -> None:
    assert str(case).startswith("review-loop.test.yaml::")
    assert case.run().passed


def test_a_failing_case_raises_with_the_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.test.yaml"
    bad.write_text(
        f"definition: {EXAMPLES / 'review-loop.yaml'}\n"
        "scenarios:\n  - name: wrong\n    steps:\n      - start: {}\n"
        "        expect: {state: accepted}\n"
    )
    (case,) = scenarios(bad)
    with pytest.raises(AssertionError, match='expected: "accepted"'):
        case.run()
