"""What ``statewrightd test`` prints, and the JUnit XML it writes for CI."""

from __future__ import annotations

import difflib
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from statewrightd.scenarios.language import ScenarioFile
from statewrightd.scenarios.runner import Mismatch, ScenarioResult, StepFailure

# A value this long, or one spread over lines, is shown as a diff instead of inline.
INLINE = 60


def shown_path(path: Path) -> str:
    """A file as the report names it: relative to the working directory when inside it."""
    absolute = path.resolve()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def result_line(result: ScenarioResult) -> str:
    """One line per scenario: its verdict, file, name, and how far it got."""
    scenario = result.scenario
    where = f"{shown_path(scenario.file)}: {scenario.name}"
    ms = f"{result.seconds * 1000:.1f} ms"
    if result.crash is not None:
        return f"ERROR {where} (step {result.steps}, {ms})"
    if result.failure is not None:
        return f"FAIL  {where} (step {result.steps} of {len(scenario.steps)}, {ms})"
    return f"PASS  {where} ({result.steps} steps, {ms})"


def failure_text(result: ScenarioResult, indent: str = "      ") -> str:
    """Why a scenario failed: the step (its line in the file), then each field that
    differs, expected against actual."""
    if result.crash is not None:
        body = "the runner itself failed (this is a bug of statewrightd; please report it):\n"
        body += result.crash.rstrip()
        return _indented(body, indent)
    failure = result.failure
    if failure is None:
        return ""
    return _indented(step_failure_text(result, failure), indent)


def step_failure_text(result: ScenarioResult, failure: StepFailure) -> str:
    step = failure.step
    line = f":{step.line}" if step.line is not None else ""
    lines = [
        f"{shown_path(result.scenario.file)}{line}: step {step.index} `{step.text}`: "
        f"{failure.summary}"
    ]
    for mismatch in failure.mismatches:
        lines.extend("  " + text for text in mismatch_lines(mismatch))
    return "\n".join(lines)


def mismatch_lines(mismatch: Mismatch) -> list[str]:
    expected, actual = _json(mismatch.expected), _json(mismatch.actual)
    if len(expected) <= INLINE and len(actual) <= INLINE:
        return [mismatch.field, f"  expected: {expected}", f"  actual:   {actual}"]
    diff = difflib.unified_diff(
        _pretty(mismatch.expected).splitlines(),
        _pretty(mismatch.actual).splitlines(),
        "expected",
        "actual",
        lineterm="",
    )
    return [mismatch.field, *("  " + line for line in diff)]


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return repr(value)


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except TypeError:
        return repr(value)


def _indented(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.splitlines())


def summary_line(results: Sequence[ScenarioResult], files: int, seconds: float) -> str:
    passed = sum(1 for r in results if r.passed)
    failed = sum(1 for r in results if r.failure is not None)
    crashed = sum(1 for r in results if r.crash is not None)
    steps = sum(r.steps for r in results)
    parts = [f"{passed} passed"]
    if failed:
        parts.append(f"{failed} failed")
    if crashed:
        parts.append(f"{crashed} errors")
    return (
        f"{len(results)} scenario(s) in {files} file(s): {', '.join(parts)} "
        f"({steps} steps in {seconds:.2f} s)"
    )


# -- JUnit XML -----------------------------------------------------------------------------


def junit_xml(
    results: Sequence[ScenarioResult], invalid: Sequence[ScenarioFile] = ()
) -> ET.ElementTree[ET.Element]:
    """The results as JUnit XML: a test suite per scenario file, a test case per scenario;
    a scenario file that is itself invalid is a suite with one erroneous case."""
    root = ET.Element("testsuites", name="statewrightd test")
    by_file: dict[Path, list[ScenarioResult]] = {}
    for result in results:
        by_file.setdefault(result.scenario.file, []).append(result)
    stamp = datetime.now(UTC).replace(microsecond=0, tzinfo=None).isoformat()
    totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
    for path, items in by_file.items():
        suite = _suite(root, path, stamp)
        for result in items:
            _case(suite, result)
        _count(suite, items, totals)
    for broken in invalid:
        suite = _suite(root, broken.path, stamp)
        case = ET.SubElement(
            suite,
            "testcase",
            classname=_classname(broken.path),
            name="the scenario file",
            time="0",
            file=shown_path(broken.path),
        )
        error = ET.SubElement(
            case, "error", message="the scenario file is invalid", type="InvalidScenarioFile"
        )
        error.text = "\n".join(broken.lines())
        suite.set("tests", "1")
        suite.set("errors", "1")
        suite.set("failures", "0")
        suite.set("skipped", "0")
        suite.set("time", "0")
        totals["tests"] += 1
        totals["errors"] += 1
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", str(totals["errors"]))
    root.set("time", f"{totals['time']:.6f}")
    ET.indent(root)
    return ET.ElementTree(root)


def _suite(root: ET.Element, path: Path, stamp: str) -> ET.Element:
    return ET.SubElement(
        root, "testsuite", name=shown_path(path), timestamp=stamp, hostname="localhost"
    )


def _classname(path: Path) -> str:
    name = shown_path(path)
    for suffix in (".test.yaml", ".test.yml", ".test.json"):
        name = name.removesuffix(suffix)
    return name.replace(os.sep, ".")


def _case(suite: ET.Element, result: ScenarioResult) -> None:
    scenario = result.scenario
    case = ET.SubElement(
        suite,
        "testcase",
        classname=_classname(scenario.file),
        name=scenario.name,
        time=f"{result.seconds:.6f}",
        file=shown_path(scenario.file),
    )
    if scenario.line is not None:
        case.set("line", str(scenario.line))
    if result.crash is not None:
        error = ET.SubElement(case, "error", message="the runner failed", type="RunnerError")
        error.text = result.crash
    elif result.failure is not None:
        failure = result.failure
        node = ET.SubElement(
            case,
            "failure",
            message=f"step {failure.step.index} `{failure.step.text}`: {failure.summary}",
            type="ScenarioFailure",
        )
        node.text = step_failure_text(result, failure)


def _count(suite: ET.Element, items: list[ScenarioResult], totals: dict[str, Any]) -> None:
    failures = sum(1 for r in items if r.failure is not None)
    errors = sum(1 for r in items if r.crash is not None)
    seconds = sum(r.seconds for r in items)
    suite.set("tests", str(len(items)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    suite.set("time", f"{seconds:.6f}")
    totals["tests"] += len(items)
    totals["failures"] += failures
    totals["errors"] += errors
    totals["time"] += seconds


def write_junit(path: Path, tree: ET.ElementTree[ET.Element]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
