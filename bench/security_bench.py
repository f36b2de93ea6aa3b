"""The cost of security: throughput over TLS with JWT authentication against plaintext.

Not a test. Run it through bench/run_security.sh, which brings its own PostgreSQL. On
127.0.0.1 only, it runs one statewrightd (one process) in each of two modes, one after the
other, several rounds interleaved so that a drift of the machine hits both alike:

- ``plaintext``: no TLS, no authentication;
- ``tls+jwt``: TLS (a fresh ECDSA P-256 certificate) and an auth config that accepts
  RS256 JWTs from a JWKS file, with role ``client``; every call carries the same token,
  as a client with a cached token sends it.

In each it measures, closed loop (``--concurrency`` calls in flight, ``--seconds`` each):
start-to-complete (a one-state workflow), and resume (start a workflow that waits, then
resume it; the resumes are timed). It reports calls/s, p50/p99, server CPU per call, and the
ratio of each ``tls+jwt`` figure to the plaintext one (goal: >= 0.85).

``--engine go`` drives the same two modes with bench/goload (Go's gRPC and TLS, a resumed
TLS session, the token as per-call credentials) in place of grpc.aio in this process: its
client costs a fraction of the Python one's CPU, so the ratio is the server's share. Its
start is order-pricing's start-to-complete (as in the goal table's start line), its
"resume" the hitl scenario's resume (start mail-approval, then approve it). It also
measures the bare echo (bench/echo_server.py: gRPC alone, a canned answer) in plaintext and
over the same TLS, without authentication: what gRPC's own TLS costs a call, against which
the server's ratio tells what the rest of TLS + JWT (the interceptor, the token) costs.

``--engine go,python`` measures with both clients in turn on the same servers, in each
round; the report's ``runs`` has one entry per client, in that order.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

# The repository root, so that `bench` and `tests` are importable as packages.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.runtime_bench import start_echo
from bench.timer_bench import cpu_seconds, percentile, server, workspace
from tests.support.certs import ScratchCA

ISSUER = "https://bench.statewright.test/"
DEFINITIONS = {
    "instant.yaml": "name: instant\nversion: 1\nstates:\n  done: {}\n",
    "approval.yaml": """
name: approval
version: 1
states:
  waiting: {wait: true}
  done: {}
transitions:
  - {from: waiting, on: approve, to: done}
""",
}


def _secure(root: Path) -> tuple[list[str], bytes, str]:
    """Server arguments for TLS and JWT auth, the CA to trust, and a token."""
    ca = ScratchCA(root / "ca")
    issued = ca.issue("server", server=True)
    signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing.public_key()))
    jwk["kid"] = "bench"
    (root / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    auth = root / "auth.yaml"
    auth.write_text(
        f"jwt:\n  issuer: {ISSUER}\n  audience: statewright\n  jwks_file: jwks.json\n"
        "  roles_claim: roles\n"
    )
    now = int(time.time())
    token = jwt.encode(
        {"iss": ISSUER, "aud": "statewright", "sub": "bench", "roles": ["client"],
         "iat": now, "exp": now + 3600},
        signing,
        algorithm="RS256",
        headers={"kid": "bench"},
    )  # fmt: skip
    args = ["--tls-cert", str(issued.cert), "--tls-key", str(issued.key)]
    return [*args, "--auth-config", str(auth)], ca.pem(), token


def _channel(target: str, ca: bytes | None, token: str | None) -> grpc.aio.Channel:
    if ca is None:
        return grpc.aio.insecure_channel(target)
    credentials = grpc.ssl_channel_credentials(root_certificates=ca)
    if token is not None:
        credentials = grpc.composite_channel_credentials(
            credentials, grpc.access_token_call_credentials(token)
        )
    return grpc.aio.secure_channel(target, credentials)


async def _loop(
    target: str,
    ca: bytes | None,
    token: str | None,
    *,
    seconds: float,
    concurrency: int,
    kind: str,
) -> tuple[int, list[float]]:
    latencies: list[float] = []
    done = 0
    async with _channel(target, ca, token) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        start_instant = pb.StartWorkflowRequest(definition="instant", version=1)
        start_waiting = pb.StartWorkflowRequest(definition="approval", version=1)
        stop = time.monotonic() + seconds

        async def one() -> None:
            nonlocal done
            while time.monotonic() < stop:
                if kind == "start":
                    began = time.perf_counter()
                    await stub.StartWorkflow(start_instant, timeout=30)
                else:
                    started = await stub.StartWorkflow(start_waiting, timeout=30)
                    resume = pb.ResumeWorkflowRequest(name=started.workflow.name, event="approve")
                    began = time.perf_counter()
                    await stub.ResumeWorkflow(resume, timeout=30)
                latencies.append(time.perf_counter() - began)
                done += 1

        await asyncio.gather(*(one() for _ in range(concurrency)))
    return done, latencies


def measure(
    target: str, pid: int, ca: bytes | None, token: str | None, args: argparse.Namespace
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    asyncio.run(
        _loop(target, ca, token, seconds=2.0, concurrency=args.concurrency, kind="start")
    )  # warm-up
    for kind in ("start", "resume"):
        cpu = cpu_seconds(pid)
        began = time.monotonic()
        done, latencies = asyncio.run(
            _loop(target, ca, token, seconds=args.seconds, concurrency=args.concurrency, kind=kind)
        )
        elapsed = time.monotonic() - began
        # A resume run also starts every instance it resumes: CPU is per resume plus start.
        out[kind] = {
            "per_s": done / elapsed,
            "p50_ms": percentile(latencies, 0.5) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "server_cpu_ms_per_call": (cpu_seconds(pid) - cpu) / max(1, done) * 1000,
        }
    return out


GOLOAD_DEFINITIONS = ("order-pricing", "mail-approval")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "definitions"


def measure_go(
    target: str, pid: int, secure: Path | None, args: argparse.Namespace
) -> dict[str, Any]:
    """``measure`` with bench/goload; ``secure``: the directory with ``ca.pem`` and
    ``token`` (None: plaintext)."""
    out: dict[str, Any] = {}
    ca = str(secure / "ca.pem") if secure is not None else ""
    token = str(secure / "token") if secure is not None else ""
    for kind, scenario in (("start", "start"), ("resume", "hitl")):
        plan = loadgen.Plan(
            target=target,
            scenario=scenario,
            processes=1,
            concurrency=args.concurrency,
            warmup=2.0,
            duration=args.seconds,
            engine="go",
            tls_ca=ca,
            token_file=token,
        )
        summary = loadgen.run(plan, probe=lambda: {"server": cpu_seconds(pid)})
        if summary.errors:
            raise RuntimeError(f"{kind} over goload failed calls: {summary.errors}")
        rate = summary.throughput if kind == "start" else summary.resume_rate
        p50 = summary.p50_ms if kind == "start" else summary.resume_p50_ms
        p99 = summary.p99_ms if kind == "start" else summary.resume_p99_ms
        out[kind] = {
            "per_s": rate,
            "p50_ms": p50,
            "p99_ms": p99,
            "server_cpu_ms_per_call": summary.cpu["server"] / max(rate, 1e-9) * 1000,
        }
    return out


def measure_echo_go(
    logs: Path, tls_args: list[str], secure: Path | None, args: argparse.Namespace, name: str
) -> dict[str, Any]:
    """The bare echo's starts with bench/goload; ``secure``: over TLS (``tls_args``)."""
    echo = start_echo("direct", logs, tls_args if secure is not None else [], name)
    try:
        plan = loadgen.Plan(
            target=echo.target,
            scenario="echo",
            processes=1,
            concurrency=args.concurrency,
            warmup=2.0,
            duration=args.seconds,
            engine="go",
            tls_ca=str(secure / "ca.pem") if secure is not None else "",
        )
        pid = echo.process.pid
        summary = loadgen.run(plan, probe=lambda: {"server": cpu_seconds(pid)})
    finally:
        echo.stop()
    if summary.errors:
        raise RuntimeError(f"the echo over goload failed calls: {summary.errors}")
    return {
        "per_s": summary.throughput,
        "p50_ms": summary.p50_ms,
        "p99_ms": summary.p99_ms,
        "server_cpu_ms_per_call": summary.cpu["server"] / max(summary.throughput, 1e-9) * 1000,
    }


def summary(runs: dict[str, list[dict[str, Any]]], engine: str) -> dict[str, Any]:
    """The medians of one client's rounds, and each TLS + JWT figure's ratio to plaintext."""
    out: dict[str, Any] = {"engine": engine}
    kinds = ("start", "resume", "echo") if engine == "go" else ("start", "resume")
    for kind in kinds:
        plain = statistics.median(r[kind]["per_s"] for r in runs["plaintext"])
        secured = statistics.median(r[kind]["per_s"] for r in runs["tls+jwt"])
        out[kind] = {
            "plaintext_per_s": plain,
            "tls_jwt_per_s": secured,
            "ratio": secured / plain,
            "plaintext_p99_ms": statistics.median(r[kind]["p99_ms"] for r in runs["plaintext"]),
            "tls_jwt_p99_ms": statistics.median(r[kind]["p99_ms"] for r in runs["tls+jwt"]),
            "plaintext_cpu_ms": statistics.median(
                r[kind]["server_cpu_ms_per_call"] for r in runs["plaintext"]
            ),
            "tls_jwt_cpu_ms": statistics.median(
                r[kind]["server_cpu_ms_per_call"] for r in runs["tls+jwt"]
            ),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="3 s windows, one round")
    parser.add_argument(
        "--engine",
        type=functools.partial(loadgen.engine_list, known=loadgen.ENGINES),
        default=["python"],
        help="the client: grpc.aio in this process (python), or bench/goload (go: the"
        " server's share); several, comma-separated (or all), in turn on the same servers",
    )
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 3.0, 1
    database = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        engine: {"plaintext": [], "tls+jwt": []} for engine in args.engine
    }
    # goload starts order-pricing and mail-approval, as in the other benchmarks.
    examples = {f"{n}.yaml": (EXAMPLES / f"{n}.yaml").read_text() for n in GOLOAD_DEFINITIONS}
    with (
        workspace({**DEFINITIONS, **examples}, "security-bench-") as (definitions, logs),
        tempfile.TemporaryDirectory(prefix="security-bench-keys-") as keys,
    ):
        secure_args, ca, token = _secure(Path(keys))
        (Path(keys) / "ca.pem").write_bytes(ca)
        (Path(keys) / "token").write_text(token)
        for round_ in range(args.rounds):
            for mode in ("plaintext", "tls+jwt"):
                secure = mode == "tls+jwt"
                extra = ["--processes", "1"] + (secure_args if secure else [])
                results: dict[str, dict[str, Any]] = {}
                with server(database, definitions, logs, f"{mode}-{round_}", extra) as (t, pid):
                    for engine in args.engine:
                        if engine == "go":
                            results[engine] = measure_go(
                                t, pid, Path(keys) if secure else None, args
                            )
                        else:
                            results[engine] = measure(
                                t, pid, ca if secure else None, token if secure else None, args
                            )
                if "go" in results:
                    secure_dir = Path(keys) if secure else None
                    name = f"echo-{mode}-{round_}"
                    results["go"]["echo"] = measure_echo_go(
                        logs, secure_args[:4], secure_dir, args, name
                    )
                for engine, result in results.items():
                    runs[engine][mode].append(result)
                    print(json.dumps({mode: result, "engine": engine}), file=sys.stderr, flush=True)
    report: dict[str, Any] = {
        "engines": args.engine,
        "seconds": args.seconds,
        "concurrency": args.concurrency,
        "runs": [summary(runs[engine], engine) for engine in args.engine],
    }
    print(json.dumps(report, indent=2))
    for run in report["runs"]:
        for kind in ("start", "resume"):
            ratio = run[kind]["ratio"]
            verdict = "met" if ratio >= 0.85 else "NOT met"
            print(
                f"{run['engine']} client: goal {kind} over TLS+JWT >= 0.85 of plaintext:"
                f" {ratio:.2f}: {verdict}"
            )
        if "echo" in run:
            print(f"the bare echo over TLS / plaintext: {run['echo']['ratio']:.2f} (gRPC's own)")


if __name__ == "__main__":
    main()
