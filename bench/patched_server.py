"""Run ``statewrightd`` with experimental patches, to measure a suggested change before it is made.

Not a test, not for production. The profile (BENCHMARKS.md) suggests changes to the
service; each patch here is the smallest monkeypatch that behaves like one suggestion, so
bench/run.sh ``--server-patch NAME`` can measure its gain against the unpatched server
in the same run. The service code is not edited; when the service changes, a patch that
no longer matches what it replaces refuses to start instead of measuring something else.

    .venv/bin/python bench/patched_server.py --patch latest-cache -- serve --listen ...

Patches:

- ``latest-cache``: StartWorkflow without a version resolves the latest version from the
  registry's memory while its TTL is fresh, instead of a read-pool round trip per call.
- ``switch-interval=SECONDS``: ``sys.setswitchinterval``: how long a thread that wants
  the GIL waits for the running one to drop it (CPython's default is 0.005).
- ``gc-log``: no change in behaviour; logs every garbage collection that pauses the
  process for more than 10 ms, with its generation and the number of tracked objects.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from statewrightd import cli
from statewrightd.application import Application
from statewrightd.definitions import registry as registry_module
from statewrightd.definitions.registry import Loaded


def _expect(fn: Callable[..., Any], *fragments: str) -> None:
    """Refuse to patch a function whose source no longer has what the patch replaces."""
    source = inspect.getsource(fn)
    missing = [f for f in fragments if f not in source]
    if missing:
        raise SystemExit(f"patch out of date: {fn.__qualname__} no longer contains {missing}")


def latest_cache() -> None:
    original = Application.definition
    _expect(original, "return await self._read(lambda: registry.get(name, version))")
    _expect(registry_module.DefinitionRegistry._latest_version, "LATEST_TTL", "_latest_checked")

    async def definition(self: Application, name: str, version: int | None) -> Loaded:
        registry = self.registry
        if version is None:
            known = registry._latest.get(name)
            checked = registry._latest_checked.get(name, 0.0)
            if known is not None and time.monotonic() - checked < registry_module.LATEST_TTL:
                cached = registry.cached(name, known)
                if cached is not None:
                    return cached  # no I/O and no thread hop while the TTL is fresh
        return await original(self, name, version)

    Application.definition = definition  # type: ignore[method-assign]


def gc_log() -> None:
    log = logging.getLogger("bench.gc")
    started: list[float] = [0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        pause = time.perf_counter() - started[0]
        if pause > 0.010:
            log.warning(
                "gc pause %.1f ms: generation %d, %d collected, %d objects tracked",
                pause * 1000,
                info["generation"],
                info["collected"],
                len(gc.get_objects()) if info["generation"] == 2 else -1,
            )

    gc.callbacks.append(callback)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patch", action="append", default=[], help="a patch name (repeat)")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="-- statewrightd arguments")
    args = parser.parse_args()
    for patch in args.patch:
        name, _, value = patch.partition("=")
        if name == "latest-cache":
            latest_cache()
        elif name == "switch-interval":
            sys.setswitchinterval(float(value))
        elif name == "gc-log":
            gc_log()
        else:
            raise SystemExit(f"unknown patch {patch!r}")
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    sys.exit(cli.main(rest))


if __name__ == "__main__":
    main()
