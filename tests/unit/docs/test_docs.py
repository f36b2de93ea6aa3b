"""The documentation is true: its definitions validate as it says, and the site builds strictly.

Every YAML or JSON block in docs/ is a definition checked by the same code as
``statewrightd validate`` (see tests/unit/docs/blocks.py for the markers), every fixed
wording of a loader problem is on the validation page, and ``mkdocs build --strict``
succeeds, and fails on a broken link or a page left out of the nav.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor
from statewright import errors as client_errors
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.definitions.commands import validate_command
from statewrightd.reasons import Reason
from statewrightd.scenarios.command import scenarios_command
from statewrightd.scenarios.options import add_arguments
from tests.unit.docs.blocks import (
    DOCS,
    REPO,
    Block,
    all_blocks,
    definitions_with_reports,
    runnable_snippets,
    scenario_blocks,
)
from tests.unit.docs.messages import SOURCES, fragments, normalize
from tests.unit.docs.reasons import made_reasons, written_by_hand

DEFINITIONS = definitions_with_reports()
SCENARIOS = scenario_blocks()
_SEVERITY = re.compile(r"^(?:\d+:\d+: )?(error|warning): ")
BUILD_TIMEOUT = 120


def _validate(block: Block, directory: Path) -> tuple[int, list[str]]:
    """Run the validator on the block as a file; its exit status and problem lines."""
    suffix = ".json" if block.language == "json" else ".yaml"
    path = directory / f"example{suffix}"
    path.write_text(block.text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    status = validate_command([str(path)], out=out, err=err)
    # Each problem is "FILE: ..." or "FILE:LINE:COLUMN: ...", perhaps followed by indented
    # lines quoting the text; the page shows them without the file name.
    shown = []
    for line in err.getvalue().splitlines():
        if line.startswith("    "):
            shown.append(line.rstrip())
            continue
        assert line.startswith(f"{path}:"), line
        shown.append(line.removeprefix(f"{path}:").lstrip(" "))
    return status, shown


@pytest.mark.parametrize(
    ("block", "report"), DEFINITIONS, ids=[block.where for block, _ in DEFINITIONS]
)
def test_each_definition_validates_as_the_page_says(
    block: Block, report: Block | None, tmp_path: Path
) -> None:
    status, problems = _validate(block, tmp_path)
    if report is None:
        assert (status, problems) == (0, []), f"{block.where} should be valid without warnings"
        return
    claimed = [line.rstrip() for line in report.text.splitlines() if line.strip()]
    assert problems == claimed, f"{block.where}: the validator reports something else"
    severities = [m.group(1) for line in problems if (m := _SEVERITY.match(line))]
    if block.marker == "invalid":
        assert status == 1
        assert "error" in severities
    else:
        assert status == 0
        assert severities and set(severities) == {"warning"}


def test_the_reference_pages_are_full_of_checked_examples() -> None:
    # Guards the parametrized test above against finding nothing to check.
    by_page: dict[str, dict[str, int]] = {}
    for block, _ in DEFINITIONS:
        kinds = by_page.setdefault(block.page, {})
        kinds[block.marker or "valid"] = kinds.get(block.marker or "valid", 0) + 1
    assert by_page["docs/definitions.md"]["valid"] >= 15
    assert by_page["docs/execution.md"]["valid"] >= 4
    assert by_page["docs/tutorial.md"]["valid"] == 2
    assert by_page["docs/validation.md"]["invalid"] >= 10
    assert by_page["docs/validation.md"]["warns"] >= 1


def test_the_tutorial_definition_is_the_one_its_steps_use() -> None:
    tutorial = [b for b in all_blocks() if b.page == "docs/tutorial.md"]
    first, second = (b for b in tutorial if b.is_definition)
    assert "name: expense-claim\nversion: 1\n" in first.text
    assert "name: expense-claim\nversion: 2\n" in second.text
    python = [b for b in tutorial if b.language == "python"]
    assert python and 'client.start("expense-claim"' in python[0].text


_AT_LEAST = {"loader": 40, "parsing": 4, "problems": 1}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_loader_message_is_on_the_validation_page(source: str) -> None:
    page = normalize((DOCS / "validation.md").read_text(encoding="utf-8"))
    found = fragments(SOURCES[source])
    assert len(found) >= _AT_LEAST[source], "the message scan found too little to work"
    missing = [text for text in found if normalize(text) not in page]
    assert missing == [], f"docs/validation.md does not mention: {missing}"


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    # Not -q: MkDocs counts the warnings that --strict refuses only when it logs them.
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)]
    return subprocess.run(
        [*command, "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        env=env,
        check=False,
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    for page in sorted(DOCS.glob("*.md")):
        assert (tmp_path / "site" / page.stem / "index.html").exists() or page.stem == "index"
    assert (tmp_path / "site" / "index.html").exists()


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (("concepts.md", "\nSee [nowhere](no-such-page.md).\n"), "no-such-page.md"),
        (("concepts.md", "\nSee [a section](execution.md#no-such-anchor).\n"), "no-such-anchor"),
        (("unlisted.md", "# A page the nav forgets\n"), "unlisted.md"),
    ],
    ids=["broken link", "broken anchor", "page not in the nav"],
)
def test_the_strict_build_refuses_mistakes(
    change: tuple[str, str], complaint: str, tmp_path: Path
) -> None:
    # The refusal depends on mkdocs.yml's validation settings: prove they are in force.
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    name, text = change
    with (tmp_path / "docs" / name).open("a", encoding="utf-8") as page:
        page.write(text)
    result = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert complaint in result.stdout + result.stderr


# The README and the docs are all a clone has: they may not send readers elsewhere.
_ELSEWHERE = re.compile(r"\.\./shared|/work/shared|design\.md|\bissues?\s+#?\d+", re.I)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _user_texts() -> list[Path]:
    return [REPO / "README.md", REPO / "mkdocs.yml", *sorted(DOCS.rglob("*.md"))]


def test_no_page_points_outside_the_repository() -> None:
    for path in _user_texts():
        text = path.read_text(encoding="utf-8")
        assert not _ELSEWHERE.search(text), f"{path.relative_to(REPO)}: {_ELSEWHERE.search(text)}"


# The benchmark report is read, not searched: what a run measured in detail goes to the
# notebook (bench/NOTES.md), and the report keeps the figures and what they mean.
BENCHMARKS_LIMIT = 25_000


def test_the_benchmark_report_stays_a_report() -> None:
    size = len((REPO / "BENCHMARKS.md").read_bytes())
    assert size < BENCHMARKS_LIMIT, (
        f"BENCHMARKS.md is {size:,} bytes: move detail to bench/NOTES.md"
    )


def test_the_readme_is_a_front_door_whose_links_work() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "make dev" in readme and "make test" in readme and "make docs" in readme
    targets = [t for t in _LINK.findall(readme) if "://" not in t]
    assert targets, "the README links into nothing"
    for target in targets:
        assert (REPO / target.partition("#")[0]).is_file(), target
    for page in ("tutorial", "concepts", "definitions", "api", "operations"):
        assert f"docs/{page}.md" in targets


# -- the API page's reasons, and code shown from where it is built ------------------------------

_ROW = re.compile(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \|")


def _reasons_table() -> dict[str, set[str]]:
    """Each reason of the page's table, with its codes: a reason may stand in two groups, a
    request's answer and a step's failure, with a code in each (CONTEXT_TOO_LARGE)."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    section = text.partition("\n## Every reason\n")[2].partition("\n## ")[0]
    table: dict[str, set[str]] = {}
    groups = section.split("\n### ")[1:]
    assert len(groups) == 5, "the reasons table has lost one of its groups"
    for group in groups:
        in_group: set[str] = set()
        for row in (_ROW.match(line) for line in group.splitlines()):
            if row is not None:
                reason, code = row.groups()
                assert reason not in in_group, f"{reason}: twice in one group of docs/api.md"
                in_group.add(reason)
                table.setdefault(reason, set()).add(code)
    return table


def test_the_api_page_lists_every_reason_the_server_makes_and_no_other() -> None:
    table = _reasons_table()
    made: dict[str, set[str | None]] = {}
    for found in made_reasons():
        made.setdefault(found.reason, set()).add(found.code)
    assert len(made) >= 60, "the reason scan found too little to work"
    assert sorted(set(made) - set(table)) == [], "reasons the server makes, missing on the page"
    assert sorted(set(table) - set(made)) == [], "reasons on the page the server never makes"
    # A code on the page that the source never raises the reason with is stale too, unless
    # some place makes the reason through a helper whose class the scan cannot tell.
    wrong = {
        reason: (sorted(table[reason]), sorted(str(c) for c in codes))
        for reason, codes in made.items()
        if (codes - {None}) - table[reason] or (None not in codes and table[reason] - codes)
    }
    assert wrong == {}, "reasons whose codes on the page are not the ones they are raised with"


def test_every_reason_is_named_from_the_one_registry() -> None:
    assert written_by_hand() == [], (
        "reasons written as strings: name them from statewrightd.reasons"
    )
    registry = {str(r) for r in Reason}
    made = {found.reason for found in made_reasons()}
    assert sorted(made - registry) == [], "names that are no member of the registry"
    assert sorted(registry - made) == [], "registry members the server never makes"
    assert set(_reasons_table()) == registry, "the page's table is not the registry"


def _made_codes() -> dict[str, set[str]]:
    made: dict[str, set[str]] = {}
    for found in made_reasons():
        if found.code is not None:
            made.setdefault(found.reason, set()).add(found.code)
    return made


CLIENTS = REPO / "clients"
# How each client names a reason it branches on, with the code beside it where it says.
_CLIENT_REASONS = {
    "go": (
        "go/statewright",
        "*.go",
        re.compile(r'Reason\w*\s*=\s*"([A-Z][A-Z0-9_]+)"|^\s*case "([A-Z][A-Z0-9_]+)":'),
    ),
    "java": ("java/src/main", "*.java", re.compile(r'isReason\("([A-Z][A-Z0-9_]+)"\)')),
    "ts": ("ts/src", "*.ts", re.compile(r'reason === "([A-Z][A-Z0-9_]+)"')),
}
_CODE_ON_THE_LINE = re.compile(r"(?:Status\.Code\.|Code\.)([A-Za-z_]+)")


def _code_name(spelled: str) -> str:
    """FAILED_PRECONDITION (Java) and FailedPrecondition (TypeScript) alike."""
    return spelled if spelled.isupper() else re.sub(r"(?<!^)(?=[A-Z])", "_", spelled).upper()


def test_the_clients_error_classes_name_reasons_of_the_registry_with_their_codes() -> None:
    registry = {str(r) for r in Reason}
    made = _made_codes()
    # The Python client's table of reason classes, each valid under one code.
    python = {reason: entry.code.name for reason, entry in client_errors._REASONS.items()}
    assert sorted(set(python) - registry) == [], "Python client reasons the server never gives"
    wrong = {r: (code, sorted(made[r])) for r, code in python.items() if code not in made[r]}
    assert wrong == {}, "Python client reason classes under codes the server does not use"
    seen: dict[str, set[str]] = {}
    for language, (folder, pattern, reasons) in _CLIENT_REASONS.items():
        for path in sorted((CLIENTS / folder).rglob(pattern)):
            if path.name.endswith("_test.go"):
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                for found in reasons.finditer(line):
                    reason = next(g for g in found.groups() if g)
                    seen.setdefault(language, set()).add(reason)
                    assert reason in registry, f"{path.relative_to(REPO)}: {reason} is no reason"
                    for code in _CODE_ON_THE_LINE.findall(line):
                        assert _code_name(code) in made[reason], (path.name, reason, code)
    # The scan must see what each client branches on (a rename there would hide it).
    assert {"LEASE_SUPERSEDED", "TASK_CANCELLED"} <= seen["go"] & seen["java"] & seen["ts"]


def test_code_shown_from_a_file_is_that_file() -> None:
    shown = [block for block in all_blocks() if block.source is not None]
    assert len(shown) >= 8, "fewer source blocks than the client pages show"
    for block in shown:
        assert block.source is not None and block.source.is_file(), block.where
        assert block.text == block.source.read_text(encoding="utf-8"), (
            f"{block.where} is not {block.source.relative_to(REPO)} as it is now"
        )


def test_runnable_snippets_are_laid_out_as_their_markers_say() -> None:
    snippets = {page.name: runnable_snippets(page) for page in DOCS.rglob("*.md")}
    assert sum(len(s) for s in snippets.values()) >= 8
    for page in ("tutorial.md", "tutorial-escalation.md", "tutorial-worker.md", "python.md"):
        assert snippets[page] and any(s.output is not None for s in snippets[page]), page
    assert any(s.background for s in snippets["tutorial-worker.md"])


# -- the troubleshooting page explains every diagnostics field ----------------------------------

_DIAGNOSTICS_FILE = "statewright/v1/diagnostics.proto"


def _diagnostics_fields(message: Descriptor, prefix: str = "") -> Iterator[str]:
    """Every field of a diagnostics answer, into the messages diagnostics.proto declares;
    a field of a type declared elsewhere (a Transition, a Timer, a Status) is explained as
    a whole."""
    for field in message.fields:
        yield f"{prefix}{field.name}"
        nested = field.message_type
        if nested is not None and nested.file.name == _DIAGNOSTICS_FILE:
            yield from _diagnostics_fields(nested, f"{prefix}{field.name}.")


def _leaf(field: str) -> str:
    return field.rpartition(".")[2]


def test_the_troubleshooting_page_explains_every_diagnostics_field() -> None:
    page = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    quoted = " ".join(re.findall(r"`([^`\n]+)`", page))
    one = pb.GetWorkflowDiagnosticsResponse.DESCRIPTOR.fields_by_name["diagnostics"]
    assert one.message_type is not None
    fields = [
        *_diagnostics_fields(pb.GetDiagnosticsResponse.DESCRIPTOR),
        *_diagnostics_fields(one.message_type),
    ]
    assert len(fields) >= 50, "the field walk found too little to work"
    # A page names a nested field by itself (`batches`) or with its parent (`timers.armed`).
    missing = [f for f in fields if not re.search(rf"\b{re.escape(_leaf(f))}\b", quoted)]
    assert missing == [], f"docs/troubleshooting.md does not explain: {missing}"


@pytest.mark.parametrize(
    ("block", "printed"), SCENARIOS, ids=[block.where for block, _ in SCENARIOS]
)
def test_each_scenario_runs_as_the_page_says(
    block: Block, printed: Block | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = block.text.splitlines()[0]
    name = first.removeprefix("# ").strip() if first.startswith("# ") else "doc.test.yaml"
    (tmp_path / name).write_text(block.text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--definitions", str(REPO / "examples" / "definitions"), name])
    out, err = io.StringIO(), io.StringIO()
    status = scenarios_command(args, out=out, err=err)
    if printed is None:
        assert status == 0, f"{block.where}: {out.getvalue()}{err.getvalue()}"
        return
    assert status == 1, f"{block.where} should fail: {out.getvalue()}{err.getvalue()}"
    claimed = printed.text.splitlines()
    shown = out.getvalue().splitlines()
    assert len(shown) == len(claimed), f"{printed.where}: the runner prints {shown}"
    for line, claim in zip(shown, claimed, strict=True):
        pattern = ".*".join(re.escape(part) for part in claim.split("…"))
        assert re.fullmatch(pattern, line), f"{printed.where}: {line!r} is not {claim!r}"


def test_the_testing_page_shows_scenarios_that_run() -> None:
    pages = {block.page for block, _ in SCENARIOS}
    assert "docs/testing.md" in pages and len(SCENARIOS) >= 4
