"""The fenced code blocks of the documentation, with the marker that says what each shows.

A YAML or JSON block is a workflow definition unless the HTML comment on the line before it
says otherwise:

- no marker: the definition is valid and the validator reports nothing at all;
- ``<!-- invalid -->``: the definition has errors, and the next block (``text``) lists every
  problem the validator reports, one per line, as ``statewrightd validate`` prints them
  without the leading file name (``LINE:COLUMN: error: ...`` when a problem has a place in
  the text, then the indented lines that quote it);
- ``<!-- warns -->``: the definition is valid, and the next block lists its warnings so;
- ``<!-- not a definition -->``: some other YAML or JSON (a manifest, a command's output).

Other blocks may carry a marker too:

- ``<!-- runnable -->`` on a Python block: the end-to-end suite runs it against a real
  server (tests/e2e/test_docs_snippets.py), in the order of the page, and it must exit 0;
- ``<!-- runnable: background -->`` on a Python block: a program that runs until it is
  interrupted (a worker). It is started where it stands, runs while the page's later
  snippets run, and must exit 0 on Ctrl-C (SIGINT) at the end of the page;
- ``<!-- output -->`` on a text block after a runnable one (other blocks, such as the
  command that runs it, may stand between): what that snippet prints, line by line;
  ``…`` in a line stands for any text (an id, a time);
- ``<!-- source: PATH -->`` on any block: the block is the file PATH (from the
  repository's root) verbatim, so that code shown on a page is code that is built and
  tested where it lives;
- ``<!-- scenario -->`` on a YAML block: a scenario file (``statewrightd test``), whose
  definitions are the examples'; it must pass. ``<!-- scenario: fails -->``: it must fail,
  and the next text block is what the runner prints, line by line (``…`` stands for any
  text). A first line ``# NAME.test.yaml`` names the file it is shown as.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
DEFINITION_LANGUAGES = frozenset({"yaml", "yml", "json"})
MARKERS = frozenset({"invalid", "warns", "not a definition"})
RUNNABLE = frozenset({"runnable", "runnable: background"})
OUTPUT = "output"
SOURCE_PREFIX = "source: "
SCENARIO = frozenset({"scenario", "scenario: fails"})

_OPEN = re.compile(r"^```([A-Za-z0-9_+-]*)[^`]*$")
_MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")


class MarkupError(ValueError):
    """A page's blocks or markers are not laid out as this module's docstring says."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    marker: str  # "" when there is none

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_definition(self) -> bool:
        if self.marker in SCENARIO or self.marker.endswith((".test.yaml", ".schedules.yaml")):
            return False
        return self.language in DEFINITION_LANGUAGES and self.marker != "not a definition"

    @property
    def runnable(self) -> bool:
        return self.marker in RUNNABLE

    @property
    def source(self) -> Path | None:
        """The file this block must equal, for a ``source:`` marker."""
        if not self.marker.startswith(SOURCE_PREFIX):
            return None
        return REPO / self.marker.removeprefix(SOURCE_PREFIX).strip()


def _marker_fits(marker: str, language: str) -> bool:
    if marker in MARKERS:
        return language in DEFINITION_LANGUAGES
    if marker in RUNNABLE:
        return language == "python"
    if marker == OUTPUT:
        return language == "text"
    if marker in SCENARIO:
        return language in ("yaml", "yml")
    return marker.startswith(SOURCE_PREFIX)


def page_blocks(path: Path) -> list[Block]:
    """Every fenced block of one page, in order; nested or unclosed fences are refused."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(REPO).as_posix()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if opened is None:
            if lines[i].lstrip().startswith("```"):
                raise MarkupError(f"{page}:{i + 1}: an indented fence; keep fences at column 0")
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if i == len(lines):
            raise MarkupError(f"{page}:{start + 1}: the fence is never closed")
        marker = ""
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        if before >= 0 and (found := _MARKER.match(lines[before].strip())):
            marker = found.group(1)
        language = opened.group(1).lower()
        if marker and not _marker_fits(marker, language):
            raise MarkupError(
                f"{page}:{start + 1}: marker {marker!r} on a {language or 'plain'} block; "
                f"markers are {sorted(MARKERS)} (YAML or JSON), {sorted(RUNNABLE)} "
                f"(Python), {OUTPUT!r} (text), {sorted(SCENARIO)} (YAML) and "
                f"{SOURCE_PREFIX!r}PATH (any)"
            )
        text = "\n".join(lines[start + 1 : i]) + "\n"
        blocks.append(Block(page, start + 1, language, text, marker))
        i += 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for path in sorted(DOCS.rglob("*.md")) for block in page_blocks(path)]


def definitions_with_reports() -> list[tuple[Block, Block | None]]:
    """Each definition block, with the block listing its problems when it is marked."""
    out: list[tuple[Block, Block | None]] = []
    for path in sorted(DOCS.rglob("*.md")):
        blocks = page_blocks(path)
        for index, block in enumerate(blocks):
            if not block.is_definition:
                continue
            report = None
            if block.marker in ("invalid", "warns"):
                following = blocks[index + 1] if index + 1 < len(blocks) else None
                if following is None or following.language != "text":
                    raise MarkupError(
                        f"{block.where}: a block marked {block.marker!r} must be followed by a "
                        "text block listing the problems"
                    )
                report = following
            out.append((block, report))
    return out


@dataclass(frozen=True)
class Snippet:
    """A runnable block, with the output its page says it prints (None: not shown)."""

    block: Block
    output: Block | None

    @property
    def background(self) -> bool:
        return self.block.marker == "runnable: background"


def runnable_snippets(path: Path) -> list[Snippet]:
    """The page's runnable blocks in order, each with the output block that belongs to it:
    the next one marked output, before any other runnable block (a block showing the
    command that runs it may stand between)."""
    out: list[Snippet] = []
    for block in page_blocks(path):
        if block.runnable:
            out.append(Snippet(block, None))
        elif block.marker == OUTPUT:
            if not out or out[-1].output is not None:
                raise MarkupError(f"{block.where}: an output block must follow a runnable one")
            if out[-1].background:
                raise MarkupError(f"{block.where}: a background snippet's output is not checked")
            out[-1] = Snippet(out[-1].block, block)
    return out


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def scenario_blocks() -> list[tuple[Block, Block | None]]:
    """Each scenario block, with the text block of what the runner prints when it is one
    that must fail."""
    out: list[tuple[Block, Block | None]] = []
    for path in pages():
        blocks = page_blocks(path)
        for index, block in enumerate(blocks):
            if block.marker not in SCENARIO:
                continue
            printed = None
            if block.marker == "scenario: fails":
                following = blocks[index + 1] if index + 1 < len(blocks) else None
                if following is None or following.language != "text":
                    raise MarkupError(
                        f"{block.where}: a scenario that fails is followed by a text block "
                        "of what the runner prints"
                    )
                printed = following
            out.append((block, printed))
    return out
