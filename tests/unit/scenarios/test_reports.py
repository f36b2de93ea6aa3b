"""JUnit XML (checked against the JUnit schema), coverage as text and as Mermaid."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from tests.unit.scenarios.conftest import Runner

SCHEMA = etree.XMLSchema(etree.parse(str(Path(__file__).with_name("junit.xsd"))))

MIXED = """
scenarios:
  - name: passes
    steps:
      - start: {}
        expect: {state: open}
  - name: "fails <here> & there"
    steps:
      - start: {}
      - resume: go
        expect: {state: done}
"""


def valid(path: Path) -> etree._ElementTree:
    document = etree.parse(str(path))
    assert SCHEMA.validate(document), SCHEMA.error_log
    return document


def test_junit_results_validate_against_the_schema(run: Runner, project: Path) -> None:
    result = run(MIXED, "--junit", "reports/junit.xml")
    assert result.code == 1
    document = valid(project / "reports" / "junit.xml")
    root = document.getroot()
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == (
        "testsuites",
        "2",
        "1",
        "0",
    )
    (suite,) = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == (
        "ticket.test.yaml",
        "2",
        "1",
    )
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["passes", "fails <here> & there"]
    assert [c.get("classname") for c in cases] == ["ticket", "ticket"]
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None
    assert failure.get("message") == "step 2 `resume go`: not as expected: state"
    assert failure.text is not None and 'expected: "done"' in failure.text
    assert cases[1].get("line") == "7" and cases[1].get("file") == "ticket.test.yaml"


def test_an_invalid_file_is_an_erroneous_suite(run: Runner, project: Path) -> None:
    result = run("scenarios: [{steps: [{start: {}, expect: {sate: x}}]}]", "--junit", "j.xml")
    assert result.code == 2
    root = valid(project / "j.xml").getroot()
    assert (root.get("tests"), root.get("errors")) == ("1", "1")
    error = root.find("testsuite/testcase/error")
    assert error is not None and error.get("type") == "InvalidScenarioFile"
    assert error.text is not None and "unknown key 'sate'" in error.text


def test_coverage_lists_what_no_scenario_reached(run: Runner) -> None:
    result = run(MIXED, "--coverage")
    lines = result.out.splitlines()
    at = lines.index("Coverage of the definitions the scenarios ran:")
    assert lines[at + 1 :] == [
        "  ticket v1: transitions 1/6, states 2/5 (17%)",
        "    never entered: state late",
        "    never entered: state done",
        "    never entered: state broken",
        "    never taken:   transitions[1] open -> late after duration(context.when)",
        "    never taken:   transitions[2] open -> done after 2h",
        "    never taken:   transitions[3] working -> done",
        "    never taken:   transitions[4] working -> broken on task_failed",
        "    never taken:   transitions[5] late -> done on poke if event.payload.hard == true",
    ]


def test_coverage_counts_the_steps_the_server_starts(run: Runner) -> None:
    # A timer's step and the sweeper's give-up take transitions too.
    result = run(
        """
        scenarios:
          - name: timer
            steps: [{start: {}}, {advance: 1h}]
          - name: deadline
            steps: [{start: {}}, {resume: go}, {advance: 1h}]
        """,
        "--coverage",
    )
    assert "  ticket v1: transitions 3/6, states 4/5 (50%)" in result.out
    assert "transitions[1]" not in result.out and "transitions[4]" not in result.out


def test_coverage_as_mermaid_marks_what_was_missed(run: Runner) -> None:
    out = run(MIXED, "--coverage-graph", "-").out
    diagram = out[out.index("stateDiagram-v2") :]
    assert "s_open --> s_working : go / set n\n" in diagram
    assert "s_open --> s_late : after duration(context.when) / set tags (never taken)" in diagram
    assert "s_working --> s_done : never taken\n" in diagram
    assert "classDef unvisited" in diagram
    assert "    class s_late,s_done,s_broken unvisited\n" in diagram


def test_min_coverage_fails_a_run_that_passed(run: Runner) -> None:
    short = run(
        MIXED.replace("expect: {state: done}", "expect: {state: working}"), "--min-coverage", "50"
    )
    assert short.code == 1
    assert "under --min-coverage 50%" in short.err
    assert "Coverage of the definitions" in short.out
    enough = run(None, "--min-coverage", "10")
    assert enough.code == 0


def test_coverage_graph_as_a_markdown_page(run: Runner, project: Path) -> None:
    run(MIXED, "--coverage-graph", "out/coverage.md")
    page = (project / "out" / "coverage.md").read_text()
    assert page.startswith("# Scenario coverage\n\n## ticket v1\n\nTransitions 1/6, states 2/5.")
    assert "```mermaid\nstateDiagram-v2\n" in page and page.endswith("```\n")
