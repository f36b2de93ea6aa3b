"""Every example definition ships scenarios that take each of its transitions."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from statewrightd.definitions.files import is_definition_file
from statewrightd.scenarios.command import scenarios_command
from statewrightd.scenarios.options import add_arguments

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "definitions"


def test_every_example_definition_has_a_scenario_file() -> None:
    definitions = sorted(p.stem for p in EXAMPLES.iterdir() if is_definition_file(p))
    scenarios = sorted(p.name.removesuffix(".test.yaml") for p in EXAMPLES.glob("*.test.yaml"))
    assert definitions == scenarios


def test_the_examples_scenarios_pass_and_cover_every_transition() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    code = scenarios_command(
        parser.parse_args([str(EXAMPLES), "--min-coverage", "100", "--coverage"]),
        out=out,
        err=err,
    )
    assert code == 0, out.getvalue() + err.getvalue()
    report = out.getvalue()
    assert " failed (" not in report
    assert "never entered" not in report and "never taken" not in report
    assert report.count("(100%)") == len(list(EXAMPLES.glob("*.test.yaml")))
