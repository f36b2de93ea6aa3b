"""The fault suite in `make test`: a small run with every kind of fault, which must find no
anomaly, and the checker's own tests, which break the server on purpose (one way at a
time, through tests/chaos/breaks.py) and must find each break.

`make chaos` runs the large version (chaos/README.md, RELIABILITY.md).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.conftest import MODULE, REPO
from tests.support.databases import ENV, postgres_admin_url

# Every fault kind the nemesis knows (chaos/nemesis.go allFaults).
FAULT_KINDS = {
    "kill",
    "drain",
    "pause",
    "pg-restart-fast",
    "pg-restart-immediate",
    "cut-after-commit",
    "cut-before-commit",
    "stall",
    "flood",
}
SEED_ENV = "STATEWRIGHT_CHAOS_SEED"
# make test runs the same schedule of faults and the same choice of operations every time,
# so that its verdict does not depend on the draw; STATEWRIGHT_CHAOS_SEED=N runs another
# schedule (make chaos draws its own).
DEFAULT_SEED = 20261201


def _seed() -> int:
    return int(os.environ.get(SEED_ENV) or DEFAULT_SEED)


def _run(binary: Path, out: Path, *args: str, timeout: float) -> tuple[int, dict[str, Any], str]:
    seed = _seed()
    argv = [str(binary), "run", "--repo", str(REPO), "--out", str(out), "--seed", str(seed), *args]
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM, not SIGKILL: the run then stops its replicas and its PostgreSQL.
            proc.terminate()
            output, _ = proc.communicate(timeout=60)
            pytest.fail(f"the run took more than {timeout:.0f}s (seed {seed}):\n{output}")
    text = output
    report_path = out / "report.json"
    assert report_path.exists(), f"no report (seed {seed}):\n{text}"
    report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    return proc.returncode, report, f"seed {seed} ({SEED_ENV}={seed} replays it)\n{text}"


def test_the_suite_builds_and_its_unit_tests_pass(chaos_binary: Path) -> None:
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}
    unformatted = subprocess.run(
        ["gofmt", "-l", "."], cwd=MODULE, capture_output=True, text=True, check=True
    ).stdout
    assert unformatted == "", f"gofmt would change: {unformatted}"
    for command in (["go", "vet", "./..."], ["go", "test", "-count=1", "./..."]):
        done = subprocess.run(
            command, cwd=MODULE, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_small_run_with_every_fault_finds_no_anomaly(chaos_binary: Path, tmp_path: Path) -> None:
    code, report, text = _run(chaos_binary, tmp_path / "run", "--size", "small", timeout=480)
    print(text)
    assert report["anomalies"] == 0, text
    assert code == 0, text
    faults = report["faults"]
    assert set(faults) == FAULT_KINDS, text
    for kind, stats in faults.items():
        assert stats["count"] >= 1, (kind, text)
    assert report["client_invocations"] >= 5000, text
    assert report["settled"], text
    linear = report["linearizability"]
    assert linear["not_linearizable"] == 0 and linear["inconclusive"] == 0, text
    # Every instance was followed by a watch stream, and the timer races were run: some
    # racing calls were in flight as their timer came due.
    assert report["watch"]["instances_followed"] == report["instances"], text
    assert report["timer_races"]["in_flight_at_due"] > 0, text
    # The workloads beyond the register's ran under the faults too: maps joined, children
    # delivered to their parents.
    side = report["side_workloads"]
    assert side["signal_with_start"]["applied"] > 0, text
    assert side["flow"]["leases"] > 0, text
    assert side["schedule"]["fires"] > 0, text
    assert side["family"]["joined"] > 0 and side["family"]["delivered"] > 0, text
    bulk = side["bulk"]
    assert bulk["completed"] > 0 and bulk["steps"] > 0 and bulk["resets"] > 0, text
    narrowed, _ = BREAKS["batch-ignore-prefix"]
    assert report["checked"].get(narrowed, 0) > 0, text  # batches narrowed by an id prefix
    beats, _ = BREAKS["unfenced-lease-memory"]
    assert report["checked"].get(beats, 0) > 0, text  # completions' heartbeat details


# Each break mode of the server, the property the checker must find broken, and words of
# the anomaly it must report (any of them).
BREAKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ack-before-save": (
        "every acknowledged operation is in its instance's history exactly once, at the "
        "revision it was told",
        ("acknowledged",),
    ),
    "skip-cas": (
        "each instance is a linearizable compare-and-swap register of (revision, state, "
        "context) (porcupine), none inconclusive",
        ("cannot",),
    ),
    "double-complete": (
        "every task is finished at most once, and every acknowledged completion exactly once, "
        "by its own task",
        ("completed twice",),
    ),
    "double-fire": (
        "every armed timer that was not disarmed fired exactly once, never early",
        ("fired twice",),
    ),
    "drop-watch": (
        "every instance is followed by a watch stream that sees each revision in order, as "
        "history has it, with no gap or duplicate, through reconnects, and soon",
        ("missing",),
    ),
    "batch-twice": (
        "a batch applies each item at most once: no instance has two steps of one batch; a "
        "completed batch stepped exactly the instances it counts done, with none failed; a "
        "cancelled one no fewer than it counts done and no more than it matched; every "
        "batch ends",
        ("again",),
    ),
    "batch-ignore-prefix": (
        "a batch narrowed by an id prefix steps only instances whose ids start with it",
        ("which matched only ids starting with",),
    ),
    "stale-retry": (
        "every step is a transition its definition allows from the revision before it "
        "(state, event, reachability) and begins from that revision's context",
        ("stale copy", "the revision before rests in"),
    ),
    "skip-timer-fence": (
        "every armed timer that was not disarmed fired exactly once, never early",
        ("before it was due", "fired twice"),
    ),
    "unfenced-lease-memory": (
        "a completion's answer shows the task's heartbeat details as its last heartbeat left them",
        ("answered the heartbeat details of",),
    ),
    "ignore-flow-limit": (
        "a limited queue never has more tasks leased at once than its max_leased, nor more "
        "of one concurrency key than its key_max_leased",
        ("leases held at once",),
    ),
}


# A timer's fence is crossed only when a racing step commits between the timer's claim
# and its step's save, moments that a racing call hits now and then: this run is twice
# the others' size, against a database 40 ms away (each step's COMMIT delayed, as with a
# synchronous standby in another zone, which widens those moments), so that its races
# hit them several times.
MORE = {
    "skip-timer-fence": ("--ops", "3000", "--duration", "90s", "--commit-delay", "40ms"),
    # A stale answer takes a task whose heartbeat went through the replica that did not
    # lease it and whose completion through the one that did: about one task in thirty.
    "unfenced-lease-memory": ("--ops", "4000", "--duration", "90s"),
}


# The runs, each against a server broken one way, or several ways that break promises no
# other of them touches (the tasks', the timers' and the watch streams'): each mode's
# anomaly can come from that mode only.
RUNS = [
    (
        "double-complete",
        "double-fire",
        "drop-watch",
        "ignore-flow-limit",
        "batch-twice",
        "batch-ignore-prefix",
    ),
    ("ack-before-save", "unfenced-lease-memory"),
    ("skip-cas",),
    ("stale-retry",),
    ("skip-timer-fence",),
]


def test_every_break_mode_is_run() -> None:
    run = [mode for modes in RUNS for mode in modes]
    assert sorted(run) == sorted(BREAKS) and len(run) == len(set(run))


@pytest.mark.postgres
@pytest.mark.parametrize("modes", RUNS, ids=["+".join(m) for m in RUNS])
def test_the_checker_reports_a_server_broken_on_purpose(
    chaos_binary: Path, tmp_path: Path, modes: tuple[str, ...]
) -> None:
    assert os.environ.get(ENV), "run under scripts/with-postgres"
    code, report, text = _run(
        chaos_binary,
        tmp_path / "run",
        "--size",
        "none",
        "--postgres-url",
        postgres_admin_url(),
        "--break",
        ",".join(modes),
        *(arg for mode in modes for arg in MORE.get(mode, ())),
        timeout=300,
    )
    print(text)
    assert code != 0, text
    assert report["break"] == ",".join(modes)
    for mode in modes:
        prop, words = BREAKS[mode]
        found = [a for a in report["anomaly_list"] if a["property"] == prop]
        assert found, (mode, text)
        assert any(w in a["detail"] for a in found for w in words), (mode, text)
