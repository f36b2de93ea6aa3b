"""Test workflows in your own test suite, on Statewright's engine, with no server.

``Scenario`` starts one instance of a definition and drives it step by step on a
virtual clock and an in-memory store, so a day of timers takes no time; ``run_scenario``
runs scenario files (``*.test.yaml``, as ``statewrightd test`` does) and raises
``AssertionError`` with a report when one fails::

    import pytest
    from statewright.testing import Scenario, run_scenario, scenarios

    def test_escalates_after_fifteen_minutes():
        wf = Scenario("definitions/ticket-escalation.yaml")
        wf.start({"title": "VPN down"})
        wf.advance("15m")
        assert wf.state == "escalated"

    def test_scenario_files():
        run_scenario("definitions/")

    @pytest.mark.parametrize("case", scenarios("definitions/"), ids=str)
    def test_scenario(case):  # one test per scenario
        case.run()

The steps run on the server's own engine, which comes with the server distribution
(``statewrightd``): it must be installed beside this client, e.g. ``pip install -e .
-e clients/python`` from a checkout. This module needs it only when imported.
"""

from __future__ import annotations

try:
    from statewrightd.scenarios.fluent import (
        NoTask,
        Scenario,
        ScenarioCase,
        ScenarioFileInvalid,
        StepRefused,
        Task,
        Timer,
        run_scenario,
        scenarios,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "statewright.testing runs workflows on the Statewright server's engine, which comes "
        "with the server distribution 'statewrightd': install it beside this client (from a "
        "checkout: pip install -e . -e clients/python)"
    ) from exc

__all__ = [
    "NoTask",
    "Scenario",
    "ScenarioCase",
    "ScenarioFileInvalid",
    "StepRefused",
    "Task",
    "Timer",
    "run_scenario",
    "scenarios",
]
