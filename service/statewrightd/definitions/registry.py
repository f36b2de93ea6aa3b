"""The definitions a server can run: its directory's files plus every version in the store.

Every (name, version) ever recorded stays runnable, so instances parked on an old version
resume after a deploy that ships only the new one. Versions recorded by another replica
are fetched from the store on first use. Definitions are immutable, so readers on any
thread may use what ``get`` returns; only insertion takes the lock.

``statewrightd serve`` takes versions as the files declare them: new content under a
recorded (name, version) is refused. ``statewrightd dev`` instead records a changed file
as the next version of its name (``dev=True``), so that an edit can be tried at once;
instances already running stay on the version they started on either way.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from statewrightd.definitions.families import family_problems
from statewrightd.definitions.files import is_definition_file
from statewrightd.definitions.loader import load_definition, validate_source, with_version
from statewrightd.definitions.model import Definition
from statewrightd.definitions.problems import Problem, closest, suggestion
from statewrightd.errors import InvalidArgument, NotFound, RecordExists, RecordNotFound
from statewrightd.reasons import Reason
from statewrightd.store.records import DefinitionRecord
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

LATEST_TTL = 5.0
# A likeness is sought among at most this many names (it takes time on the caller's thread).
MAX_SUGGESTION_CHOICES = 1000


@dataclass(frozen=True, slots=True)
class Loaded:
    definition: Definition
    record: DefinitionRecord


class DefinitionConflict(InvalidArgument):
    """The same (name, version) with different content, from two sources."""

    default_reason = Reason.DEFINITION_VERSION_CONFLICT


def _conflict(
    definition: Definition, first: str, second: str, *, recorded: bool = False
) -> DefinitionConflict:
    where = "the version already recorded from" if recorded else "the content in"
    return DefinitionConflict(
        f"definition {definition.name!r} version {definition.version} from {second} differs "
        f"from {where} {first}; a (name, version) is immutable: bump the version",
        metadata={
            "definition": definition.name,
            "version": definition.version,
            "first_source": first,
            "second_source": second,
        },
    )


@dataclass(frozen=True, slots=True)
class FileReport:
    """One definition file as read: its definition (None when it has an error) and every
    problem found in it."""

    path: Path
    digest: str  # of the file's bytes: whether it changed since it was last read
    definition: Definition | None
    problems: tuple[Problem, ...]

    def lines(self, severity: str | None = None) -> list[str]:
        """Every problem (of ``severity``) as ``statewrightd validate`` prints it."""
        return [
            problem.render(str(self.path))
            for problem in self.problems
            if severity is None or problem.severity == severity
        ]

    @property
    def errors(self) -> int:
        return sum(1 for p in self.problems if p.severity == "error")


def definition_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if is_definition_file(p) and p.is_file())


def read_file(path: Path) -> FileReport:
    try:
        data = path.read_bytes()
    except OSError as exc:
        problem = Problem("", f"cannot read: {exc.strerror}")
        return FileReport(path, "", None, (problem,))
    definition, problems = validate_source(data, str(path))
    return FileReport(path, hashlib.sha256(data).hexdigest(), definition, tuple(problems))


def _read_directory(
    directory: Path,
) -> tuple[list[FileReport], list[str], dict[tuple[str, int], FileReport]]:
    """Every file of the directory as read; the error lines of them all (one per error),
    with one for each (name, version) given two contents; the first report of each
    (name, version) that compiled."""
    reports = [read_file(path) for path in definition_files(directory)]
    lines = [line for r in reports for line in r.lines("error")]
    seen: dict[tuple[str, int], FileReport] = {}
    for report in reports:
        if report.definition is None:
            continue
        first = seen.setdefault(report.definition.key, report)
        if first is not report and _digest(first) != _digest(report):
            conflict = _conflict(report.definition, str(first.path), str(report.path))
            lines.append(f"{report.path}: error: {conflict}")
    return reports, lines, seen


def check_directory(directory: Path) -> None:
    """Refuse a directory whose files have errors, as a server's start would, without a
    store: a supervisor checks once, so that its server processes do not each report the
    same problems (the store's own checks stay theirs)."""
    reports, lines, _ = _read_directory(directory)
    if lines:
        warnings = [line for r in reports for line in r.lines("warning")]
        raise DefinitionsRefused(directory, lines, len(lines), warnings)


class DefinitionsRefused(Exception):
    """A definitions directory the server cannot start with. ``lines`` holds every error
    of every file (and every version conflict), ``warnings`` every warning, as
    ``statewrightd validate`` prints them."""

    def __init__(self, directory: Path, lines: list[str], errors: int, warnings: list[str]) -> None:
        super().__init__(f"{errors} error(s) in the definitions in {directory}")
        self.lines = lines
        self.warnings = warnings


@dataclass(frozen=True, slots=True)
class Placed:
    """What loading one file did: the version it serves, and, in dev, why it is not the
    version the file declares (``note``)."""

    report: FileReport
    loaded: Loaded
    recorded: bool  # dev: a version this load added (not one the store had already)
    note: str = ""


@dataclass(frozen=True, slots=True)
class DirectoryLoad:
    placed: list[Placed]
    warnings: list[str]  # every file's warnings, rendered
    # Dev only (serve refuses them): the errors of the files that were left out.
    refused: list[str]
    reports: list[FileReport]  # every file as read, loaded or not

    @property
    def loaded(self) -> list[Loaded]:
        return [p.loaded for p in self.placed]


class DefinitionRegistry:
    def __init__(self, repo: Repository) -> None:
        self._repo = repo
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, int], Loaded] = {}
        self._latest: dict[str, int] = {}
        self._latest_checked: dict[str, float] = {}
        self._queues: set[str] = set()  # named by a task state of a definition here

    def load_directory(self, directory: Path, *, dev: bool = False) -> DirectoryLoad:
        """Compile every file, refuse any error or conflicting content, then record each
        version; DefinitionsRefused lists every problem of every file.

        Nothing is recorded unless the whole directory is acceptable: a refused deploy
        must not leave one of its versions permanently in the store. In dev, files with
        errors are left out instead (what they loaded before stays), and changed content
        under a recorded version becomes the next version (``place``).
        """
        reports, lines, seen = _read_directory(directory)
        missing, cycles = family_problems(
            ((r.path, r.definition) for r in seen.values() if r.definition), self._recorded
        )
        # In dev a child's definition may come in a later reload: a warning until then.
        lines += [] if dev else missing
        errors = len(lines)
        if not dev:
            for report in seen.values():
                definition = report.definition
                assert definition is not None
                try:
                    stored = self._repo.get_definition(definition.name, definition.version)
                except RecordNotFound:
                    continue
                if stored.digest != definition.digest:
                    conflict = _conflict(
                        definition, stored.source_name, str(report.path), recorded=True
                    )
                    lines.append(f"{report.path}: error: {conflict}")
                    errors += 1
        family = [*(m.replace(": error: ", ": warning: ", 1) for m in missing if dev), *cycles]
        if errors and not dev:
            warnings = [line for r in reports for line in r.lines("warning")] + family
            raise DefinitionsRefused(directory, lines, errors, warnings)
        heads = _heads(list(seen.values()))
        placed = [
            self.place(report, head=report.path in heads)
            if dev
            else self._place_as_declared(report)
            for report in seen.values()
        ]
        warnings = [line for r in reports for line in r.lines("warning")] + family
        return DirectoryLoad(placed, warnings, lines, reports)

    def _recorded(self, name: str, version: int | None) -> bool:
        try:
            self._repo.get_definition(name, version)
        except RecordNotFound:
            return False
        return True

    def _place_as_declared(self, report: FileReport) -> Placed:
        definition = report.definition
        assert definition is not None
        return Placed(report, self._record(definition, str(report.path)), recorded=False)

    def place(self, report: FileReport, *, head: bool = True) -> Placed:
        """Dev only: load a file whose content may have changed under its version.

        The file's content is recorded under the version it declares when that is new.
        Otherwise, when it is the file that says what its name's latest version is
        (``head``: the highest version any file declares, or a file just edited), its
        content must be the latest version's, and becomes the next version when it is
        not. A file's other versions are loaded as recorded.
        """
        definition = report.definition
        assert definition is not None
        source = str(report.path)
        name, version = definition.key
        try:
            declared = self._repo.get_definition(name, version)
        except RecordNotFound:
            return Placed(report, self._record(definition, source), recorded=True)
        latest = self._repo.get_definition(name, None)
        if declared.digest == definition.digest and (not head or latest.version == version):
            return Placed(report, self.get(name, version), recorded=False)
        as_latest = _relabel(definition, latest.version, source)
        if as_latest is not None and as_latest.digest == latest.digest:
            return Placed(report, self.get(name, latest.version), recorded=False)
        bumped = _relabel(definition, latest.version + 1, source)
        if bumped is None:
            raise DefinitionConflict(
                f"{source}: the content of {name!r} version {version} changed, and its "
                "`version:` line could not be rewritten to record it as the next version: "
                f"write `version: {latest.version + 1}` in the file",
                metadata={"definition": name, "version": version, "second_source": source},
            )
        loaded = self._record(bumped, source)
        note = (
            f"{source} changed {name!r} version {version}: recorded as version "
            f"{bumped.version}, the latest (dev only: serve takes versions as files declare "
            "them); running instances stay on their version"
        )
        return Placed(report, loaded, recorded=True, note=note)

    def load_stored(self) -> int:
        """Compile every version the store holds that is not loaded yet."""
        count = 0
        for record in self._repo.list_definitions():
            if (record.name, record.version) not in self._by_key:
                self._add(self._compile(record))
                count += 1
        return count

    def _record(self, definition: Definition, source_name: str) -> Loaded:
        record = DefinitionRecord(
            name=definition.name,
            version=definition.version,
            source=definition.source,
            digest=definition.digest,
            source_name=source_name,
            create_time=datetime.now(UTC),
        )
        try:
            stored = self._repo.put_definition(record)
        except RecordExists as exc:  # recorded by another replica a moment ago
            existing = self._repo.get_definition(definition.name, definition.version)
            raise _conflict(definition, existing.source_name, source_name, recorded=True) from exc
        loaded = Loaded(definition, stored)
        self._add(loaded)
        return loaded

    def _compile(self, record: DefinitionRecord) -> Loaded:
        return Loaded(load_definition(record.source, source_name=record.source_name), record)

    def _add(self, loaded: Loaded) -> None:
        name, version = loaded.definition.key
        queues = {s.task.queue for s in loaded.definition.states.values() if s.task}
        with self._lock:
            self._by_key[(name, version)] = loaded
            if version > self._latest.get(name, 0):
                self._latest[name] = version
            self._queues |= queues

    def names_queue(self, queue: str) -> bool:
        """Whether a definition this process has compiled has a task state on ``queue``."""
        return queue in self._queues

    def get(self, name: str, version: int | None = None) -> Loaded:
        """The compiled definition; None means the latest. Falls back to the store (I/O)."""
        if version is None:
            version = self._latest_version(name)
        loaded = self._by_key.get((name, version))
        if loaded is not None:
            return loaded
        try:
            record = self._repo.get_definition(name, version)
        except RecordNotFound:
            raise self._not_found(
                f"definition {name!r} version {version} not found",
                {"definition": name, "version": version},
            ) from None
        loaded = self._compile(record)
        self._add(loaded)
        return loaded

    def _latest_version(self, name: str) -> int:
        # Another replica may have recorded a newer version; ask the store, but at most
        # once per LATEST_TTL per name so that starts stay free of extra reads.
        now = time.monotonic()
        known = self._latest.get(name)
        if known is not None and now - self._latest_checked.get(name, 0.0) < LATEST_TTL:
            return known
        try:
            stored = self._repo.get_definition(name, None).version
        except RecordNotFound:
            stored = 0
        latest = max(known or 0, stored)
        if latest:
            # Only names that exist are remembered: a caller cannot grow this by asking
            # for names that do not.
            self._latest_checked[name] = now
        if not latest:
            raise self._not_found(f"definition {name!r} not found", {"definition": name})
        return latest

    def _not_found(self, message: str, metadata: dict[str, object]) -> NotFound:
        """DEFINITION_NOT_FOUND, suggesting the known name a typo most likely meant (in
        ``did_you_mean``; the API drops it for a caller whose scope does not reach it)."""
        known = list(self._latest)  # one step under the GIL: another thread may add names
        name = metadata["definition"]
        meant = None
        # A known name whose version is missing is no typo.
        if name not in known and len(known) <= MAX_SUGGESTION_CHOICES:
            meant = closest(name, known)
        if meant is not None:
            message += suggestion(meant)
            metadata = {**metadata, "did_you_mean": meant}
        return NotFound(message, reason=Reason.DEFINITION_NOT_FOUND, metadata=metadata)

    def latest_cached(self, name: str) -> Loaded | None:
        """Without I/O: the latest version, if this process checked it within LATEST_TTL."""
        known = self._latest.get(name)
        if known is None or time.monotonic() - self._latest_checked.get(name, 0.0) >= LATEST_TTL:
            return None
        return self._by_key.get((name, known))

    def cached(self, name: str, version: int) -> Loaded | None:
        """Without I/O: what this process has compiled already."""
        return self._by_key.get((name, version))

    def all_recorded(self) -> list[Loaded]:
        """Every version in the store, other replicas' included, compiled (I/O)."""
        return [self.get(r.name, r.version) for r in self._repo.list_definitions()]

    def all(self) -> list[Loaded]:
        with self._lock:
            return sorted(self._by_key.values(), key=lambda item: item.definition.key)


def _digest(report: FileReport) -> str:
    assert report.definition is not None
    return report.definition.digest


def _heads(reports: list[FileReport]) -> set[Path]:
    """Per name, the file declaring its highest version."""
    best: dict[str, FileReport] = {}
    for report in reports:
        definition = report.definition
        assert definition is not None
        current = best.get(definition.name)
        if current is None or definition.version > _version(current):
            best[definition.name] = report
    return {report.path for report in best.values()}


def _version(report: FileReport) -> int:
    assert report.definition is not None
    return report.definition.version


def _relabel(definition: Definition, version: int, source_name: str) -> Definition | None:
    """The same definition under another version, its source saying so; None when the
    source's `version` cannot be rewritten for certain."""
    if version == definition.version:
        return definition
    text = with_version(definition.source, version)
    if text is None:
        return None
    relabelled = load_definition(text, source_name=source_name)
    if relabelled.key != (definition.name, version):
        return None
    return relabelled
