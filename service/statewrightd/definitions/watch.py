"""``statewrightd dev``'s reload: poll the definitions directory, load what changed.

A thread of its own looks at the files' modification times and sizes every second, and
reads (and hashes) only a file whose stat changed; a file whose bytes changed is compiled
and placed by the registry, a changed definition becoming its next version. A file with
an error is reported, every problem of it, and what it loaded before stays loaded. The
registry's store I/O runs here, never on the EventLoop thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from pathlib import Path

from statewrightd.definitions.registry import (
    DefinitionRegistry,
    FileReport,
    definition_files,
    read_file,
)
from statewrightd.errors import StatewrightError

_log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
_Stat = tuple[int, int]  # (mtime in ns, size)
_UNSEEN: _Stat = (-1, -1)


class DefinitionWatcher:
    def __init__(
        self,
        registry: DefinitionRegistry,
        directory: Path,
        reports: Iterable[FileReport],
        *,
        interval: float = POLL_SECONDS,
    ) -> None:
        """``reports``: the files as the server read them at start, so that only what
        changes after that is loaded again."""
        self._registry = registry
        self._directory = directory
        self._interval = interval
        self._digests: dict[Path, str] = {r.path: r.digest for r in reports}
        # What each file serves: (name, version), to say what stays when an edit is broken.
        self._serving: dict[Path, tuple[str, int]] = {
            r.path: r.definition.key for r in reports if r.definition is not None
        }
        # No stat yet: the first poll reads every file and compares its bytes with what the
        # server read at start, so that an edit made after that read and before this
        # watcher began is not taken for the file as it was.
        self._stats: dict[Path, _Stat] = dict.fromkeys(self._digests, _UNSEEN)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="definition-watcher", daemon=True)

    def start(self) -> None:
        _log.info(
            "dev: watching %s for changes; a changed definition becomes its next version",
            self._directory,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.poll()
            except Exception:  # the watcher outlives whatever one poll ran into
                _log.exception("dev: reloading %s failed; trying again", self._directory)

    def poll(self) -> list[Path]:
        """Load every file whose content changed since it was last read; those files."""
        try:
            paths = definition_files(self._directory)
        except OSError as exc:
            _log.warning("dev: cannot list %s: %s", self._directory, exc.strerror)
            return []
        for gone in set(self._stats) - set(paths):
            del self._stats[gone]
            self._digests.pop(gone, None)
            if self._serving.pop(gone, None) is not None:
                _log.info("dev: %s was removed; the versions it loaded stay recorded", gone)
        changed = []
        for path in paths:
            stat = _stat(path)
            if stat is None or stat == self._stats.get(path):
                continue
            self._stats[path] = stat
            report = read_file(path)
            if report.digest and report.digest == self._digests.get(path):
                continue  # touched, or saved again as it was
            self._digests[path] = report.digest
            changed.append(path)
            self._load(report)
        return changed

    def _load(self, report: FileReport) -> None:
        path = report.path
        if report.definition is None:
            before = self._serving.get(path)
            stays = f"{before[0]} v{before[1]} stays loaded" if before else "nothing loaded from it"
            _log.error("dev: %s has %d error(s); %s", path, report.errors, stays)
            for line in report.lines():
                _log.error("%s", line)
            return
        for line in report.lines():
            _log.warning("%s", line)
        try:
            placed = self._registry.place(report, head=True)
        except StatewrightError as exc:
            _log.error("dev: %s not loaded: %s", path, exc)
            return
        name, version = placed.loaded.definition.key
        self._serving[path] = (name, version)
        if placed.note:
            _log.info("dev: %s", placed.note)
        elif placed.recorded:
            _log.info("dev: loaded %s v%d from %s", name, version, path)
        else:
            _log.info("dev: %s changed, but not %s v%d's meaning: nothing new", path, name, version)


def _stat(path: Path) -> _Stat | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)
