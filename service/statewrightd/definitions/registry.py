"""The definitions a server can run: its directory's files plus every version in the store.

Every (name, version) ever recorded stays runnable, so instances parked on an old version
resume after a deploy that ships only the new one. Versions recorded by another replica
are fetched from the store on first use. Definitions are immutable, so readers on any
thread may use what ``get`` returns; only insertion takes the lock.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from statewrightd.definitions.loader import load_definition
from statewrightd.definitions.model import Definition
from statewrightd.errors import InvalidArgument, NotFound, RecordExists, RecordNotFound
from statewrightd.store.records import DefinitionRecord
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml", ".json")
LATEST_TTL = 5.0


@dataclass(frozen=True, slots=True)
class Loaded:
    definition: Definition
    record: DefinitionRecord


class DefinitionConflict(InvalidArgument):
    """The same (name, version) with different content, from two sources."""

    default_reason = "DEFINITION_VERSION_CONFLICT"


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


class DefinitionRegistry:
    def __init__(self, repo: Repository) -> None:
        self._repo = repo
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, int], Loaded] = {}
        self._latest: dict[str, int] = {}
        self._latest_checked: dict[str, float] = {}

    def load_directory(self, directory: Path) -> list[Loaded]:
        """Compile every file, refuse conflicting content, then record each version.

        Nothing is recorded unless the whole directory is acceptable: a refused deploy
        must not leave one of its versions permanently in the store.
        """
        files = sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES and p.is_file())
        seen: dict[tuple[str, int], tuple[Definition, str]] = {}
        for path in files:
            definition = load_definition(path.read_text(encoding="utf-8"), source_name=str(path))
            previous = seen.get(definition.key)
            if previous is not None and previous[0].digest != definition.digest:
                raise _conflict(definition, previous[1], str(path))
            seen.setdefault(definition.key, (definition, str(path)))
        for definition, source_name in seen.values():
            try:
                stored = self._repo.get_definition(definition.name, definition.version)
            except RecordNotFound:
                continue
            if stored.digest != definition.digest:
                raise _conflict(definition, stored.source_name, source_name, recorded=True)
        return [self._record(definition, source) for definition, source in seen.values()]

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
        with self._lock:
            self._by_key[(name, version)] = loaded
            if version > self._latest.get(name, 0):
                self._latest[name] = version

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
            raise NotFound(
                f"definition {name!r} version {version} not found",
                reason="DEFINITION_NOT_FOUND",
                metadata={"definition": name, "version": version},
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
        self._latest_checked[name] = now
        latest = max(known or 0, stored)
        if not latest:
            raise NotFound(
                f"definition {name!r} not found",
                reason="DEFINITION_NOT_FOUND",
                metadata={"definition": name},
            )
        return latest

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
