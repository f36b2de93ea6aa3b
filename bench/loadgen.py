"""Load generator: several OS processes, each a grpc.aio client, against a running server.

Not a test. One Python client process saturates before the server does, so
the load is spread over ``--processes`` processes started with ``spawn`` (no gRPC state
is forked). Every process drives its share of the load and records per-operation
latencies; the parent merges them.

Scenarios (``--scenario``):

- ``start``:  StartWorkflow order-pricing, an automatic chain that ends COMPLETED in
  the one step; one operation = one workflow started and completed durably.
- ``echo``:   the same StartWorkflow request against bench/echo_server.py (canned answer).
- ``hitl``:   human in the loop: StartWorkflow mail-approval (-> WAITING), then
  ResumeWorkflow ``approve`` (-> COMPLETED). Latency of the whole workflow, and of the
  start and the resume separately.
- ``resume``: resume steps alone: each process first parks ``--prepare`` mail-approval
  instances in WAITING (not measured), then resumes them under measurement.

Load shapes: closed loop (default; ``--concurrency`` lanes per process, each issuing its
next operation when the previous one answers: maximum throughput) or open loop
(``--rate`` total operations per second, sent on schedule whatever the answers do).
Open-loop latency is measured from the scheduled send time, so a client or server that
falls behind shows up as latency instead of silently lowering the offered rate.

Targets and routing: ``--target`` may name several servers, comma-separated
(``host:port,host:port``: statewrightd replicas, each on its own port). Each process opens
``--channels`` channels, channel i to target i % len(targets); with several targets and
fewer channels than targets, one channel per target. Calls are routed like a client that
routes each workflow to one replica (sticky routing, or a router keyed by workflow id):
every call of one workflow goes through the same channel. A start-to-complete or an echo
is a single call, so each takes the next channel round robin; human in the loop takes the
next channel for its start and resumes through the same one; the resume scenario parks
its instances round robin over the channels and resumes each through the channel that
parked it. (Routing per call would send most resumes to a replica that has not cached the
instance and must load it from PostgreSQL first: twice the work of a resume.)

Window: every process waits for one common start time; the first ``--warmup`` seconds are
not measured; an operation counts if it completes inside the ``--duration`` window.

Engines (``--engine``): ``python`` (default) runs the load processes above, grpc.aio in
Python, about 0.3-0.5 ms of client CPU a call. ``go`` runs bench/goload instead, a Go
program that does exactly what one Python load process does (same scenarios, inputs,
load shapes, window and error keys) and prints the same ChildReport as JSON, for about
0.1 ms a call in closed loop (0.2 ms in open loop, where each send is a wake-up); it is
built once per run with ``go build`` into .cache/goload/ (gitignored). One Go process
keeps up with the server, so with ``--engine go`` the defaults are 1 process and 48 lanes
(the Python defaults' 3 x 16 in one process); ``--processes``/``--concurrency`` still mean
processes and lanes (or in-flight cap) each.

    .venv/bin/python bench/loadgen.py --target 127.0.0.1:PORT[,127.0.0.1:PORT2] --scenario start \
        --processes 3 --concurrency 16 --duration 10 [--rate 1000] [--engine go]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import multiprocessing as mp
import multiprocessing.synchronize
import os
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import grpc
from google.protobuf import struct_pb2
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

SCENARIOS = ("start", "echo", "hitl", "resume")
ENGINES = ("python", "go")
COMPLETED = workflow_pb2.WORKFLOW_STATUS_COMPLETED
WAITING = workflow_pb2.WORKFLOW_STATUS_WAITING
# Same input as bench/echo_server.py's canned answer, so echo and start move the same bytes.
ORDER_INPUT: dict[str, Any] = {"items": ["a"], "price": 3.0, "quantity": 2}
# How long the parent waits for the children beyond the planned run before giving up.
CHILD_GRACE_SECONDS = 60.0
ROOT = Path(__file__).resolve().parent.parent
GOLOAD_SOURCE = ROOT / "bench" / "goload"
GOLOAD_CACHE = ROOT / ".cache" / "goload"  # gitignored
# Total closed-loop lanes of the defaults: 3 Python processes x 16 lanes, or 1 Go process.
DEFAULT_LANES = 48


def engine_list(text: str, known: tuple[str, ...]) -> list[str]:
    """An option naming one engine, several comma-separated, or ``all`` of ``known``: the
    engines in the order given, each once."""
    engines = list(known) if text == "all" else text.split(",")
    unknown = [e for e in engines if e not in known]
    if unknown or len(set(engines)) != len(engines):
        raise argparse.ArgumentTypeError(f"{text!r}: name each of {', '.join(known)} once")
    return engines


def default_shape(engine: str) -> tuple[int, int]:
    """(processes, concurrency each) when neither is given: the same 48 lanes in total."""
    return (3, DEFAULT_LANES // 3) if engine == "python" else (1, DEFAULT_LANES)


def channel_targets(target: str, channels: int) -> list[str]:
    """The target of each channel: ``target`` split at commas, channel i to target
    i % len(targets), at least one channel per target when there are several."""
    targets = [t.strip() for t in target.split(",") if t.strip()]
    if not targets:
        raise ValueError("no target")
    count = max(1, channels, len(targets) if len(targets) > 1 else 1)
    return [targets[i % len(targets)] for i in range(count)]


@dataclass(frozen=True)
class Plan:
    target: str  # HOST:PORT, or several comma-separated (one channel at least to each)
    scenario: str
    processes: int = 3
    concurrency: int = 16  # closed loop: lanes per process; open loop: in-flight cap
    rate: float = 0.0  # total offered operations/s; 0 means closed loop
    warmup: float = 2.0
    duration: float = 10.0
    prepare: int = 0  # resume scenario: WAITING instances each process parks first
    request_ids: bool = False  # send a request_id (idempotency key) with every call
    version: int = 0  # StartWorkflow.version; 0 asks the server for the latest
    channels: int = 1  # per process, spread over the targets (or SO_REUSEPORT servers)
    timeout: float = 10.0  # per-RPC deadline
    engine: str = "python"  # load processes: "python" (grpc.aio) or "go" (bench/goload)
    # The go engine only: TLS trusting this CA (a PEM file), and a bearer token (a file)
    # sent with every call; "" is plaintext, no token.
    tls_ca: str = ""
    token_file: str = ""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}; got {self.engine!r}")
        if (self.tls_ca or self.token_file) and self.engine != "go":
            raise ValueError("TLS and tokens are the go engine's: python load is plaintext")


@dataclass
class Recorder:
    """One process's measurements; latencies in seconds."""

    begin: float  # wall clock: window start (after warmup)
    end: float  # wall clock: window end
    ops: int = 0
    latencies: list[float] = field(default_factory=list)
    start_latencies: list[float] = field(default_factory=list)
    resume_latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    behind_max: float = 0.0  # open loop: how far the sender fell behind its schedule
    capped: int = 0  # open loop: sends skipped because the in-flight cap was reached
    exhausted_at: float = 0.0  # resume: wall time the parked pool ran out (0: never)

    def in_window(self, now: float) -> bool:
        return self.begin <= now <= self.end

    def error(self, key: str) -> None:
        self.errors[key] = self.errors.get(key, 0) + 1


@dataclass
class ChildReport:
    index: int
    ops: int
    window: float
    latencies: list[float]
    start_latencies: list[float]
    resume_latencies: list[float]
    errors: dict[str, int]
    behind_max: float
    capped: int
    cpu_seconds: float  # this process's user+system CPU inside the window
    prepared: int


@dataclass
class Summary:
    scenario: str
    target: str
    shape: str  # "closed cX*pY" or "open R/s"
    offered_rate: float
    throughput: float  # operations completed per second in the window
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    start_p50_ms: float
    start_p99_ms: float
    resume_p50_ms: float
    resume_p99_ms: float
    resume_rate: float  # resume steps per second (hitl and resume)
    ops: int
    errors: dict[str, int]
    window: float
    client_cpu: float  # load processes' CPU, in cores, averaged over the window
    behind_max_ms: float
    capped: int
    prepared: int
    cpu: dict[str, float] = field(default_factory=dict)  # filled by the orchestrator

    def line(self) -> str:
        text = (
            f"{self.scenario:<7} {self.shape:<14} {self.throughput:>8,.0f} ops/s  "
            f"p50 {self.p50_ms:6.1f} ms  p99 {self.p99_ms:6.1f} ms  max {self.max_ms:6.1f} ms"
        )
        if self.resume_rate:
            text += (
                f"  | resume {self.resume_rate:,.0f}/s p50 {self.resume_p50_ms:.1f} "
                f"p99 {self.resume_p99_ms:.1f} ms"
            )
        if self.errors:
            text += f"  errors {self.errors}"
        if self.behind_max_ms > 5:
            text += f"  sender behind up to {self.behind_max_ms:.0f} ms"
        return text


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list, in the list's unit."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


# -- the child process ------------------------------------------------------------------


def _struct(values: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(values)
    return message


if TYPE_CHECKING:  # the async stub class exists only in the generated type stubs
    Stub: TypeAlias = pb_grpc.WorkflowServiceAsyncStub


class Client:
    """The operations of every scenario, over the process's channels.

    Sticky routing: every call of one workflow goes through one channel (see the module
    docstring); ``pick`` chooses it, round robin, once per workflow.
    """

    def __init__(self, channels: list[grpc.aio.Channel], plan: Plan) -> None:
        self._stubs = itertools.cycle([pb_grpc.WorkflowServiceStub(c) for c in channels])
        self.plan = plan
        self.order = pb.StartWorkflowRequest(
            definition="order-pricing", version=plan.version, input=_struct(ORDER_INPUT)
        )
        self.mail = pb.StartWorkflowRequest(
            definition="mail-approval", version=plan.version, input=_struct({"topic": "benchmark"})
        )
        self.approve_input = _struct({"approver": "bench"})
        # Resume scenario: WAITING instances, each with the stub (channel) that parked it.
        self.parked: list[tuple[str, Stub]] = []

    def pick(self) -> Stub:
        # Round robin over channels: with one channel this is always the same stub.
        stub: Stub = next(self._stubs)
        return stub

    def _with_id(self, request: pb.StartWorkflowRequest) -> pb.StartWorkflowRequest:
        if not self.plan.request_ids:
            return request  # no idempotency key: the server skips its replay lookup
        copy = pb.StartWorkflowRequest()
        copy.CopyFrom(request)
        copy.request_id = uuid.uuid4().hex
        return copy

    async def start_order(self, rec: Recorder, t0: float) -> None:
        response = await self.pick().StartWorkflow(
            self._with_id(self.order), timeout=self.plan.timeout
        )
        now = time.time()
        if response.workflow.status != COMPLETED:
            rec.error("not-completed")
            return
        if rec.in_window(now):
            rec.ops += 1
            rec.latencies.append(now - t0)

    async def start_mail(self, stub: Stub) -> str:
        response = await stub.StartWorkflow(self._with_id(self.mail), timeout=self.plan.timeout)
        if response.workflow.status != WAITING:
            raise RuntimeError(f"mail-approval started in status {response.workflow.status}")
        return response.workflow.name

    async def resume(self, stub: Stub, name: str) -> None:
        request = pb.ResumeWorkflowRequest(name=name, event="approve", input=self.approve_input)
        if self.plan.request_ids:
            request.request_id = uuid.uuid4().hex
        response = await stub.ResumeWorkflow(request, timeout=self.plan.timeout)
        if response.workflow.status != COMPLETED:
            raise RuntimeError(f"resume left status {response.workflow.status}")

    async def human_in_the_loop(self, rec: Recorder, t0: float) -> None:
        stub = self.pick()  # sticky: the start and the resume of this workflow go here
        name = await self.start_mail(stub)
        t1 = time.time()
        await self.resume(stub, name)
        now = time.time()
        if rec.in_window(now):
            rec.ops += 1
            rec.latencies.append(now - t0)
            rec.start_latencies.append(t1 - t0)
            rec.resume_latencies.append(now - t1)

    async def resume_parked(self, rec: Recorder, t0: float) -> None:
        if not self.parked:
            if not rec.exhausted_at:
                rec.exhausted_at = time.time()
            raise _PoolExhausted
        name, stub = self.parked.pop()
        await self.resume(stub, name)
        now = time.time()
        if rec.in_window(now):
            rec.ops += 1
            rec.latencies.append(now - t0)
            rec.resume_latencies.append(now - t0)


class _PoolExhausted(Exception):
    """The resume scenario ran out of parked instances."""


Operation = Callable[[Recorder, float], Awaitable[None]]


async def _guarded(op: Operation, rec: Recorder, t0: float) -> None:
    """Run one operation, counting failures by gRPC status instead of raising."""
    try:
        await op(rec, t0)
    except grpc.aio.AioRpcError as exc:
        rec.error(exc.code().name)
    except RuntimeError as exc:
        rec.error(str(exc)[:60])


async def _closed_loop(op: Operation, rec: Recorder, lanes: int) -> None:
    async def lane() -> None:
        while time.time() < rec.end:
            try:
                await _guarded(op, rec, time.time())
            except _PoolExhausted:
                return

    await asyncio.gather(*(lane() for _ in range(lanes)))


async def _open_loop(
    op: Operation, rec: Recorder, *, rate: float, start: float, phase: float, cap: int
) -> None:
    interval = 1.0 / rate
    # Processes interleave their schedules (phase in [0, 1)) so the total is evenly spaced.
    scheduled = start + phase * interval
    inflight: set[asyncio.Task[None]] = set()
    while scheduled < rec.end:
        delay = scheduled - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            rec.behind_max = max(rec.behind_max, -delay)
        if len(inflight) >= cap:
            rec.capped += 1
        else:
            task = asyncio.create_task(_guarded(op, rec, scheduled))
            inflight.add(task)
            task.add_done_callback(inflight.discard)
        scheduled += interval
    if inflight:
        await asyncio.wait(inflight, timeout=rec.end - time.time() + 5.0)
        for task in inflight:
            task.cancel()


@dataclass(frozen=True)
class _Sync:
    """What the parent and its load processes coordinate through."""

    ready: mp.Queue[Any]  # children: ("ready" | "failed", index) once connected (and parked)
    results: mp.Queue[Any]  # children: ("report", ChildReport fields) | ("failed", text)
    go: multiprocessing.synchronize.Event  # parent: start_at is set, start
    start_at: Any  # multiprocessing Value("d"): the common wall-clock start time


async def _child_main(plan: Plan, index: int, sync: _Sync) -> ChildReport:
    # One channel per process by default: the lanes multiplex over its HTTP/2 connection,
    # as a real client's calls do. A local subchannel pool gives each channel its own
    # connection, so that several channels to one shared (SO_REUSEPORT) port may reach
    # several server processes; with several targets, channel i goes to target i % n.
    channels = [
        grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
        for target in channel_targets(plan.target, plan.channels)
    ]
    async with contextlib.AsyncExitStack() as stack:
        for channel in channels:
            await stack.enter_async_context(channel)
            await asyncio.wait_for(channel.channel_ready(), 10)
        client = Client(channels, plan)
        if plan.scenario == "resume":
            sem = asyncio.Semaphore(plan.concurrency)

            async def park() -> None:
                async with sem:
                    stub = client.pick()  # remembered: the resume goes through it too
                    client.parked.append((await client.start_mail(stub), stub))

            await asyncio.gather(*(park() for _ in range(plan.prepare)))
        sync.ready.put(("ready", index))
        await asyncio.to_thread(sync.go.wait)
        t0 = float(sync.start_at.value)
        rec = Recorder(begin=t0 + plan.warmup, end=t0 + plan.warmup + plan.duration)
        op: Operation = {
            "start": client.start_order,
            "echo": client.start_order,
            "hitl": client.human_in_the_loop,
            "resume": client.resume_parked,
        }[plan.scenario]
        cpu: list[float] = []

        async def sample_cpu() -> None:
            for moment in (rec.begin, rec.end):
                await asyncio.sleep(max(0.0, moment - time.time()))
                usage = resource.getrusage(resource.RUSAGE_SELF)
                cpu.append(usage.ru_utime + usage.ru_stime)

        sampler = asyncio.create_task(sample_cpu())
        await asyncio.sleep(max(0.0, t0 - time.time()))
        if plan.rate > 0:
            per_process = plan.rate / plan.processes
            phase = index / plan.processes
            await _open_loop(op, rec, rate=per_process, start=t0, phase=phase, cap=plan.concurrency)
        else:
            await _closed_loop(op, rec, plan.concurrency)
        if not sampler.done():
            # The pool ran out before the window ended: take the second sample now.
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu.append(usage.ru_utime + usage.ru_stime)
    window_end = rec.end
    if rec.exhausted_at and rec.exhausted_at < rec.end:
        window_end = rec.exhausted_at
        rec.error("pool-exhausted")
    return ChildReport(
        index=index,
        ops=rec.ops,
        window=max(1e-9, window_end - rec.begin),
        latencies=rec.latencies,
        start_latencies=rec.start_latencies,
        resume_latencies=rec.resume_latencies,
        errors=rec.errors,
        behind_max=rec.behind_max,
        capped=rec.capped,
        cpu_seconds=(cpu[1] - cpu[0]) if len(cpu) == 2 else 0.0,
        prepared=plan.prepare if plan.scenario == "resume" else 0,
    )


def _child(plan: Plan, index: int, sync: _Sync) -> None:
    try:
        report = asyncio.run(_child_main(plan, index, sync))
        sync.results.put(("report", asdict(report)))
    except BaseException as exc:
        sync.ready.put(("failed", index))
        sync.results.put(("failed", f"process {index}: {type(exc).__name__}: {exc}"))
        raise


# -- the parent -------------------------------------------------------------------------

Probe = Callable[[], dict[str, float]]


class _Children(Protocol):
    """The load processes of one run, whichever engine runs them."""

    def wait_ready(self, budget: float) -> None: ...

    def start(self, t0: float) -> None: ...

    def reports(self, deadline: float) -> list[ChildReport]: ...

    def close(self) -> None: ...


class _PythonChildren:
    """``plan.processes`` spawned Python processes running ``_child``."""

    def __init__(self, plan: Plan) -> None:
        ctx = mp.get_context("spawn")
        self.sync = _Sync(
            ready=ctx.Queue(), results=ctx.Queue(), go=ctx.Event(), start_at=ctx.Value("d", 0.0)
        )
        self.children = [
            ctx.Process(
                target=_child,
                args=(plan, i, self.sync),
                name=f"loadgen-{i}",
                daemon=True,
            )
            for i in range(plan.processes)
        ]
        for child in self.children:
            child.start()

    def wait_ready(self, budget: float) -> None:
        for _ in self.children:
            kind, index = self.sync.ready.get(timeout=budget)
            if kind != "ready":
                raise RuntimeError(f"load process {index} failed before the start")

    def start(self, t0: float) -> None:
        self.sync.start_at.value = t0
        self.sync.go.set()

    def reports(self, deadline: float) -> list[ChildReport]:
        reports: list[ChildReport] = []
        for _ in self.children:
            kind, payload = self.sync.results.get(timeout=max(1.0, deadline - time.time()))
            if kind != "report":
                raise RuntimeError(payload)
            reports.append(ChildReport(**payload))
        return reports

    def close(self) -> None:
        for child in self.children:
            child.join(5)
            if child.is_alive():
                child.terminate()
                child.join(5)


@functools.cache
def goload_binary() -> Path:
    """Build bench/goload (once per run; ``go build`` is incremental) and return its path."""
    GOLOAD_CACHE.mkdir(parents=True, exist_ok=True)
    binary = GOLOAD_CACHE / "goload"
    env = dict(os.environ)
    # As clients/go/test.sh: go.mod and go.sum are committed and must not change.
    env["GOFLAGS"] = f"{env.get('GOFLAGS', '')} -mod=readonly".strip()
    try:
        built = subprocess.run(
            ["go", "build", "-o", str(binary), "."],
            cwd=GOLOAD_SOURCE,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    except FileNotFoundError as exc:
        raise RuntimeError("the go engine needs the Go toolchain (`go`) on PATH") from exc
    if built.returncode != 0:
        raise RuntimeError(f"go build of bench/goload failed:\n{built.stderr[-3000:]}")
    return binary


def goload_argv(binary: Path, plan: Plan, index: int, ready_fd: int) -> list[str]:
    """The Go load process's command line: the plan as flags (see bench/goload/main.go)."""
    argv = [
        str(binary),
        f"--target={plan.target}",
        f"--scenario={plan.scenario}",
        f"--processes={plan.processes}",
        f"--index={index}",
        f"--concurrency={plan.concurrency}",
        f"--rate={plan.rate!r}",
        f"--warmup={plan.warmup!r}",
        f"--duration={plan.duration!r}",
        f"--prepare={plan.prepare}",
        f"--version={plan.version}",
        f"--channels={plan.channels}",
        f"--timeout={plan.timeout!r}",
        f"--ready-fd={ready_fd}",
    ]
    if plan.request_ids:
        argv.append("--request-ids")
    if plan.tls_ca:
        argv.append(f"--tls-ca={plan.tls_ca}")
    if plan.token_file:
        argv.append(f"--token-file={plan.token_file}")
    return argv


class _GoChildren:
    """``plan.processes`` bench/goload processes.

    Each one writes "ready" to a pipe of its own once connected (and parked), reads the
    common start time from its stdin, and prints its ChildReport as JSON on stdout (into a
    file in a temporary directory, so a large report never blocks on a pipe)."""

    def __init__(self, plan: Plan) -> None:
        binary = goload_binary()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.ready: dict[int, int] = {}  # read end of each ready pipe -> process index
        self.outputs = Path(tempfile.mkdtemp(prefix="statewright-goload."))
        try:
            for index in range(plan.processes):
                read_fd, write_fd = os.pipe()
                self.ready[read_fd] = index
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                out = os.open(self.outputs / f"{index}.json", flags, 0o600)
                err = os.open(self.outputs / f"{index}.err", flags, 0o600)
                try:
                    self.processes.append(
                        subprocess.Popen(
                            goload_argv(binary, plan, index, write_fd),
                            stdin=subprocess.PIPE,
                            stdout=out,
                            stderr=err,
                            pass_fds=(write_fd,),
                            cwd=ROOT,
                        )
                    )
                finally:
                    for fd in (write_fd, out, err):
                        os.close(fd)
        except BaseException:
            self.close()
            raise

    def _failure(self, index: int, what: str) -> RuntimeError:
        process = self.processes[index]
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)
        text = (self.outputs / f"{index}.err").read_text(errors="replace").strip()[-2000:]
        return RuntimeError(
            f"load process {index} {what} (exit status {process.returncode}): {text}"
        )

    def wait_ready(self, budget: float) -> None:
        deadline = time.time() + budget
        pending = dict(self.ready)
        while pending:
            remaining = deadline - time.time()
            if remaining <= 0:
                raise RuntimeError(f"load processes {sorted(pending.values())} not ready in time")
            readable, _, _ = select.select(list(pending), [], [], remaining)
            for fd in readable:
                index = pending.pop(fd)
                if not os.read(fd, 64).startswith(b"ready"):
                    raise self._failure(index, "failed before the start")

    def start(self, t0: float) -> None:
        for index, process in enumerate(self.processes):
            assert process.stdin is not None
            try:
                process.stdin.write(f"{t0!r}\n".encode())
                process.stdin.close()
            except BrokenPipeError:
                raise self._failure(index, "failed before the start") from None

    def reports(self, deadline: float) -> list[ChildReport]:
        reports: list[ChildReport] = []
        for index, process in enumerate(self.processes):
            try:
                process.wait(max(1.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"load process {index} did not finish in time") from None
            if process.returncode != 0:
                raise self._failure(index, "failed")
            report = json.loads((self.outputs / f"{index}.json").read_bytes())
            # JSON does not tell 3 from 3.0: keep the float fields floats, as Python's are.
            for key in ("window", "behind_max", "cpu_seconds"):
                report[key] = float(report[key])
            for key in ("latencies", "start_latencies", "resume_latencies"):
                report[key] = [float(v) for v in report[key]]
            reports.append(ChildReport(**report))
        return reports

    def close(self) -> None:
        for process in self.processes:
            if process.stdin is not None and not process.stdin.closed:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
        for fd in self.ready:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.ready.clear()
        shutil.rmtree(self.outputs, ignore_errors=True)


def run(plan: Plan, probe: Probe | None = None) -> Summary:
    """Run one scenario in ``plan.processes`` processes and merge their measurements.

    ``probe`` (if given) is called at the window's start and end; the per-key difference
    divided by the window becomes ``Summary.cpu`` (e.g. CPU cores used by each role).
    """
    children: _Children = _GoChildren(plan) if plan.engine == "go" else _PythonChildren(plan)
    try:
        # Preparing (resume) can take a while; bound it by what the pool size implies.
        prepare_budget = 30.0 + plan.prepare * plan.processes / 200.0
        children.wait_ready(prepare_budget)
        t0 = time.time() + 0.5
        children.start(t0)
        window = (t0 + plan.warmup, t0 + plan.warmup + plan.duration)
        before: dict[str, float] = {}
        after: dict[str, float] = {}
        if probe is not None:
            time.sleep(max(0.0, window[0] - time.time()))
            before = probe()
            time.sleep(max(0.0, window[1] - time.time()))
            after = probe()
        reports = children.reports(window[1] + CHILD_GRACE_SECONDS)
    finally:
        children.close()
    summary = _merge(plan, reports)
    seconds = plan.duration
    summary.cpu = {
        key: (after[key] - before.get(key, 0.0)) / seconds for key in after if key in before
    }
    return summary


def _merge(plan: Plan, reports: list[ChildReport]) -> Summary:
    def ms(values: list[float]) -> list[float]:
        return sorted(v * 1000 for v in values)

    latencies = ms([v for r in reports for v in r.latencies])
    starts = ms([v for r in reports for v in r.start_latencies])
    resumes = ms([v for r in reports for v in r.resume_latencies])
    errors: dict[str, int] = {}
    for report in reports:
        for key, count in report.errors.items():
            errors[key] = errors.get(key, 0) + count
    # Per-process rates summed: the resume pool may end one process's window early.
    throughput = sum(r.ops / r.window for r in reports)
    resume_rate = (
        sum(len(r.resume_latencies) / r.window for r in reports)
        if plan.scenario in ("hitl", "resume")
        else 0.0
    )
    shape = (
        f"open {plan.rate:,.0f}/s"
        if plan.rate > 0
        else f"closed {plan.concurrency}x{plan.processes}"
    )
    return Summary(
        scenario=plan.scenario,
        target=plan.target,
        shape=shape,
        offered_rate=plan.rate,
        throughput=throughput,
        p50_ms=percentile(latencies, 0.50),
        p90_ms=percentile(latencies, 0.90),
        p99_ms=percentile(latencies, 0.99),
        max_ms=latencies[-1] if latencies else 0.0,
        start_p50_ms=percentile(starts, 0.50),
        start_p99_ms=percentile(starts, 0.99),
        resume_p50_ms=percentile(resumes, 0.50),
        resume_p99_ms=percentile(resumes, 0.99),
        resume_rate=resume_rate,
        ops=sum(r.ops for r in reports),
        errors=errors,
        window=max(r.window for r in reports),
        client_cpu=sum(r.cpu_seconds / r.window for r in reports),
        behind_max_ms=max(r.behind_max for r in reports) * 1000,
        capped=sum(r.capped for r in reports),
        prepared=sum(r.prepared for r in reports),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--target", required=True, help="HOST:PORT of the server, or several comma-separated"
    )
    parser.add_argument("--scenario", choices=SCENARIOS, required=True)
    parser.add_argument("--processes", type=int, help="load processes (default: 3 python, 1 go)")
    parser.add_argument(
        "--concurrency",
        type=int,
        help="lanes (open loop: in-flight cap) per process (default: 16 python, 48 go)",
    )
    parser.add_argument(
        "--engine", choices=ENGINES, default="python", help="what runs each load process"
    )
    parser.add_argument("--rate", type=float, default=0.0, help="open loop: total ops/s")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--prepare", type=int, default=0, help="resume: instances/process")
    parser.add_argument("--request-ids", action="store_true")
    parser.add_argument("--version", type=int, default=0, help="definition version; 0: latest")
    parser.add_argument(
        "--channels",
        type=int,
        default=1,
        help="channels per process, spread over the targets (at least one per target)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    processes, concurrency = default_shape(args.engine)
    plan = Plan(
        target=args.target,
        scenario=args.scenario,
        processes=args.processes or processes,
        concurrency=args.concurrency or concurrency,
        rate=args.rate,
        warmup=args.warmup,
        duration=args.duration,
        prepare=args.prepare,
        request_ids=args.request_ids,
        version=args.version,
        channels=args.channels,
        engine=args.engine,
    )
    if plan.scenario == "resume" and plan.prepare <= 0:
        sys.exit("--scenario resume needs --prepare N (WAITING instances per process)")
    summary = run(plan)
    print(json.dumps(asdict(summary), indent=2) if args.json else summary.line())


if __name__ == "__main__":
    main()
