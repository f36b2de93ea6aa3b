"""Run ``statewrightd`` with experimental patches, to measure a suggested change before it is made.

Not a test, not for production. The profile (bench/NOTES.md) suggests changes to the
service; each patch here is the smallest monkeypatch that behaves like one suggestion, so
bench/run.sh ``--server-patch NAME`` can measure its gain against the unpatched server
in the same run. The service code is not edited; when the service changes, a patch that
no longer matches what it replaces refuses to start instead of measuring something else.

    .venv/bin/python bench/patched_server.py --patch latest-cache -- serve --listen ...

With ``serve --processes N`` every server process the supervisor starts is this script
again (``--worker``), with the same patches. bench/runtime_bench.py also takes
``python=PATH`` among the patches: the same server under another interpreter (a virtual
environment with the project installed), for the A/B of a Python version.

Patches:

- ``latest-cache``: StartWorkflow without a version resolves the latest version from the
  registry's memory while its TTL is fresh, instead of a read-pool round trip per call.
- ``switch-interval=SECONDS``: ``sys.setswitchinterval``: how long a thread that wants
  the GIL waits for the running one to drop it (CPython's default is 0.005).
- ``old-convert``: contexts become ``Struct`` the way they did before the exact-type walk
  (a copy without non-finite numbers, then protobuf's ``Struct.update``): the A/B of that
  change in the server.
- ``inline-writer``: no writer thread. The EventLoop runs each group-commit transaction
  itself, at the end of the batch of commands that queued its saves (the hook the writer's
  submissions already use), and its answers come back through the EventLoop's own queue.
  That removes the two thread crossings per step that an asyncio writer on the EventLoop
  thread would remove, with the same batches, compare-and-swap and reconciliation (the
  store's own code), but the EventLoop waits for each commit (psycopg's blocking API): an
  upper bound on what that design saves, not the design itself.
- ``gc-threshold=A,B,C``: ``gc.set_threshold(A, B, C)`` once the server has started (the
  default is 700, 10, 10: a young collection every 700 net allocations of containers).
- ``uvloop``: the asyncio loop (grpc.aio's handlers, the answers) is uvloop's instead of
  CPython's (``pip install uvloop`` into the environment that runs the server).
- ``orjson-codec``: the store's JSON (contexts, history, timers) is written and read by
  orjson instead of the standard library's ``json``, after the same check of the value
  (``pip install orjson``); what it writes reads back as the same values.
- ``old-statements``: the group commit chooses PostgreSQL's statements as it did before
  ``SET_BASED_FROM``: the set-based ones for any batch without request ids (a lone step
  included), one statement per step for any batch with one.
- ``gc-log``: no change in behaviour; logs every garbage collection that pauses the
  process for more than 10 ms, with its generation and the number of tracked objects.
- ``no-handler-cycle``: grpc.aio finds each call's handler in a coroutine of its Cython
  core that keeps a nested function in its own closure, a reference cycle per call (with
  the call's details and metadata): all the cyclic garbage a server makes. The patch puts
  in its place the same lookup without the closure, so that the collector has nothing to
  free. Written against grpcio 1.85; refuses to start where that function is not there.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import inspect
import logging
import math
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import struct_pb2
from psycopg.types import json as psycopg_json

from statewrightd import cli, server

try:
    from statewrightd import supervisor
except ImportError:  # a tree from before serve --processes (a before/after run)
    supervisor = None  # type: ignore[assignment]
from statewrightd.api import convert
from statewrightd.app.reads import Reads
from statewrightd.definitions import registry as registry_module
from statewrightd.definitions.registry import Loaded
from statewrightd.errors import StoreError
from statewrightd.store import codec, postgres
from statewrightd.store.codec import EncodedOp
from statewrightd.store.records import Operation
from statewrightd.store.writer import Callback, GroupCommitWriter


def _expect(fn: Callable[..., Any], *fragments: str) -> None:
    """Refuse to patch a function whose source no longer has what the patch replaces."""
    source = inspect.getsource(fn)
    missing = [f for f in fragments if f not in source]
    if missing:
        raise SystemExit(f"patch out of date: {fn.__qualname__} no longer contains {missing}")


def latest_cache() -> None:
    original = Reads.definition
    _expect(original, "return await self._storage.read(lambda: registry.get(name, version))")
    _expect(registry_module.DefinitionRegistry._latest_version, "LATEST_TTL", "_latest_checked")

    async def definition(self: Reads, name: str, version: int | None) -> Loaded:
        registry = self._registry
        if version is None:
            known = registry._latest.get(name)
            checked = registry._latest_checked.get(name, 0.0)
            if known is not None and time.monotonic() - checked < registry_module.LATEST_TTL:
                cached = registry.cached(name, known)
                if cached is not None:
                    return cached  # no I/O and no thread hop while the TTL is fresh
        return await original(self, name, version)

    Reads.definition = definition  # type: ignore[method-assign]


def old_convert() -> None:
    _expect(convert.dict_to_struct, "_fill(message, values)")

    def finite(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, Mapping):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [finite(v) for v in value]
        return value

    def dict_to_struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
        message = struct_pb2.Struct()
        message.update(finite(values))
        return message

    convert.dict_to_struct = dict_to_struct


def inline_writer() -> None:
    _expect(GroupCommitWriter._commit, "self._observe(self._apply", "self._deliver_batch(batch")
    _expect(GroupCommitWriter.commit_queued, "self._commit(batch)")
    submit_many = GroupCommitWriter.submit_many

    def start(self: GroupCommitWriter) -> None:
        with self._cond:
            self._accepting = True

    def submit_inline(
        self: GroupCommitWriter, items: list[tuple[Operation, Callback]]
    ) -> list[StoreError | None]:
        refusals = submit_many(self, items)
        self.commit_queued()  # what the writer thread would do, on the EventLoop thread
        return refusals

    GroupCommitWriter.start = start  # type: ignore[method-assign]
    GroupCommitWriter.submit_many = submit_inline  # type: ignore[method-assign]


def gc_threshold(*thresholds: int) -> None:
    # After start-up: tune_interpreter's gc.freeze() runs a collection first.
    names = vars(server)  # the server module's own binding of tune_interpreter
    original = names["tune_interpreter"]

    def tune() -> None:
        original()
        gc.set_threshold(*thresholds)

    names["tune_interpreter"] = tune


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


def no_handler_cycle() -> None:
    cygrpc = importlib.import_module("grpc._cython.cygrpc")
    resolver = getattr(cygrpc, "_MethodResolver", None)
    if not hasattr(cygrpc, "_find_method_handler") or not hasattr(resolver, "resolve_handler"):
        raise SystemExit("patch out of date: grpc.aio no longer finds handlers as in grpcio 1.85")
    details_type = cygrpc._HandlerCallDetails
    run_interceptor = cygrpc._run_interceptor

    async def find_method_handler(
        method: str, metadata: tuple[Any, ...], method_resolver: Any, interceptors: tuple[Any, ...]
    ) -> Any:
        details = details_type(method, metadata)
        if interceptors:
            return await run_interceptor(
                iter(interceptors), method_resolver.resolve_handler, details
            )
        return method_resolver.resolve_handler(details)

    cygrpc._find_method_handler = find_method_handler  # type: ignore[attr-defined]


# uvloop and orjson are no dependencies of the service: only the patch that measures one
# imports it.
def use_uvloop() -> None:
    uvloop = importlib.import_module("uvloop")

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def orjson_codec() -> None:
    orjson = importlib.import_module("orjson")

    _expect(codec.dumps, "check_json(value, where)", "json.dumps(value")
    _expect(codec.loads, "return json.loads(text)")
    check = codec.check_json
    original_dumps, original_loads = codec.dumps, codec.loads

    def dumps(value: object, where: str) -> str:
        check(value, where)
        return str(orjson.dumps(value).decode())

    def loads(text: str | bytes) -> Any:
        return orjson.loads(text)

    codec.dumps = dumps
    codec.loads = loads
    # PostgreSQL's jsonb columns are read by psycopg's own loader.
    psycopg_json.set_json_loads(orjson.loads)
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if not name.startswith("statewrightd.") or module is codec:
            continue
        if getattr(module, "dumps", None) is original_dumps:
            module.dumps = dumps  # type: ignore[attr-defined]
        if getattr(module, "loads", None) is original_loads:
            module.loads = loads  # type: ignore[attr-defined]


def old_statements() -> None:
    _expect(postgres.PostgresRepository._execute, "self._set_based_from", "_one_per_instance")
    one_per_instance = postgres._one_per_instance

    def without_request_ids(encoded: list[EncodedOp]) -> bool:
        return all(e.op.request is None for e in encoded) and one_per_instance(encoded)

    init = postgres.PostgresRepository.__init__

    def init_from_one(self: postgres.PostgresRepository, url: str, **settings: Any) -> None:
        init(self, url, **{**settings, "set_based_from": 1})

    postgres.PostgresRepository.__init__ = init_from_one  # type: ignore[method-assign]
    postgres._one_per_instance = without_request_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patch", action="append", default=[], help="a patch name (repeat)")
    parser.add_argument(
        "--worker", action="store_true", help="a server process under the supervisor"
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="-- statewrightd arguments")
    args = parser.parse_args()
    patches = [arg for patch in args.patch for arg in ("--patch", patch)]
    if supervisor is not None:
        supervisor.worker_command = lambda: [sys.executable, __file__, *patches, "--worker"]
    for patch in args.patch:
        name, _, value = patch.partition("=")
        if name == "latest-cache":
            latest_cache()
        elif name == "switch-interval":
            sys.setswitchinterval(float(value))
        elif name == "old-convert":
            old_convert()
        elif name == "inline-writer":
            inline_writer()
        elif name == "gc-threshold":
            gc_threshold(*(int(part) for part in value.split(",")))
        elif name == "old-statements":
            old_statements()
        elif name == "gc-log":
            gc_log()
        elif name == "no-handler-cycle":
            no_handler_cycle()
        elif name == "uvloop":
            use_uvloop()
        elif name == "orjson-codec":
            orjson_codec()
        else:
            raise SystemExit(f"unknown patch {patch!r}")
    if args.worker:
        sys.exit(server.worker_main())
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    sys.exit(cli.main(rest))


if __name__ == "__main__":
    main()
