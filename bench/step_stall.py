"""How long one costly step holds the server's EventLoop, as every other caller feels it.

Starts ``statewrightd serve`` (SQLite, in a scratch directory; ``--statewrightd`` picks
the executable, so that two checkouts can be compared), then for each scenario: a probe
thread reads another instance (GetWorkflow) every 5 ms while one signal runs the costly
step; the probe's slowest answer is the stall every other instance saw. Scenarios:

- ``guard-10k``: the test suite's hostile guard (quadratic ``map`` in a ``map``) over a
  list at the item limit (10,000 items);
- ``map-5k``: one ``map`` over 5,000 items (quadratic in the CEL library);
- ``double-24``: a string doubled by 24 automatic transitions in one step.

    .venv/bin/python bench/step_stall.py [--statewrightd PATH] [--rounds 3]

The goal: no step holds the EventLoop over 100 ms (the probe's worst answer, minus its
usual latency). Prints the load average with the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 100.0

STALLS = """\
name: stalls
version: 1
recursion_limit: 100
context:
  items: {type: list, default: []}
  text: {type: string, default: "x"}
  n: {type: int, default: 0}
  limit: {type: int, default: 24}
states:
  idle: {}
  grow:
    entry: [{set: {text: "context.text + context.text", n: "context.n + 1"}}]
  done: {}
transitions:
  - {from: idle, on: square, to: done, guard: "context.items.map(x, x * 2).size() > 0"}
  - {from: idle, on: double, to: grow}
  - {from: grow, to: grow, guard: "context.n < context.limit"}
  - {from: grow, to: done}
"""

# scenario -> (definition, input, event)
SCENARIOS: dict[str, tuple[str, dict[str, Any], str]] = {
    "guard-10k": ("hostile", {"big": list(range(10_000))}, "go"),
    "map-5k": ("stalls", {"items": list(range(5_000))}, "square"),
    "double-24": ("stalls", {"limit": 24}, "double"),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _struct(values: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(values)
    return message


def _probe(stub: pb_grpc.WorkflowServiceStub, name: str, stop: threading.Event) -> list[float]:
    latencies = []
    while not stop.is_set():
        began = time.perf_counter()
        stub.GetWorkflow(pb.GetWorkflowRequest(name=name), timeout=60)
        latencies.append((time.perf_counter() - began) * 1000)
        time.sleep(0.005)
    return latencies


def run(statewrightd: str, rounds: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="stall-"))
    definitions = scratch / "definitions"
    definitions.mkdir()
    shutil.copy(ROOT / "tests" / "e2e" / "definitions" / "hostile.yaml", definitions)
    (definitions / "stalls.yaml").write_text(STALLS)
    port = _free_port()
    server = subprocess.Popen(
        [statewrightd, "serve", "--listen", f"127.0.0.1:{port}",
         "--database", f"sqlite:///{scratch / 'stall.db'}", "--definitions", str(definitions),
         "--processes", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=60)
        stub = pb_grpc.WorkflowServiceStub(channel)
        bystander = stub.StartWorkflow(
            pb.StartWorkflowRequest(definition="stalls"), timeout=30
        ).workflow.name
        print(f"{statewrightd}  load average {os.getloadavg()[0]:.2f}")
        for scenario, (definition, values, event) in SCENARIOS.items():
            worst_stall = worst_step = 0.0
            outcome = ""
            for _ in range(rounds):
                started = stub.StartWorkflow(
                    pb.StartWorkflowRequest(definition=definition, input=_struct(values)),
                    timeout=60,
                ).workflow
                stop = threading.Event()
                result: list[list[float]] = []
                probe = threading.Thread(
                    target=lambda result=result, stop=stop: result.append(
                        _probe(stub, bystander, stop)
                    )
                )
                probe.start()
                time.sleep(0.2)
                began = time.perf_counter()
                answer = stub.SignalWorkflow(
                    pb.SignalWorkflowRequest(name=started.name, event=event), timeout=120
                )
                step_ms = (time.perf_counter() - began) * 1000
                time.sleep(0.2)
                stop.set()
                probe.join()
                latencies = result[0]
                usual = sorted(latencies)[len(latencies) // 2]
                worst_stall = max(worst_stall, max(latencies) - usual)
                worst_step = max(worst_step, step_ms)
                error = answer.workflow.error
                outcome = error.message[:70] if error.message else "no error"
            print(
                f"  {scenario:10} signal {worst_step:9.1f} ms   worst stall of another caller "
                f"{worst_stall:9.1f} ms ({worst_stall / GOAL_MS:.2f} x the goal)   {outcome}"
            )
        channel.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = str(Path(sys.executable).parent / "statewrightd")
    parser.add_argument("--statewrightd", default=default)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    run(args.statewrightd, args.rounds)


if __name__ == "__main__":
    main()
