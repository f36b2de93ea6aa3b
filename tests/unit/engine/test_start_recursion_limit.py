"""A start's own recursion limit bounds every step of its instance, not only the first,
and can only lower the definition's."""

from __future__ import annotations

from datetime import UTC, datetime

from statewrightd.definitions import Definition, load_definition
from statewrightd.domain import Status
from statewrightd.engine import signal, start
from statewrightd.engine.snapshots import instance_record, snapshot_of

# The first step takes one transition (s -> idle); "go" then chains four (idle -> a -> b
# -> c -> __finish__), well under the definition's limit of 10.
CHAIN = """
name: chain
version: 1
recursion_limit: 10
states:
  s: {}
  idle: {}
  a: {}
  b: {}
  c: {}
transitions:
  - {from: s, to: idle}
  - {from: idle, to: a, on: go}
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: __finish__}
"""


_T = datetime(2026, 1, 1, tzinfo=UTC)


def _chain() -> Definition:
    return load_definition(CHAIN)


def test_a_later_step_over_the_starts_limit_fails_with_recursion_limit() -> None:
    d = _chain()
    first = start(d, "w", {}, recursion_limit=2)
    assert first.status is Status.RUNNING and first.snapshot.state == "idle"
    assert first.snapshot.recursion_limit == 2
    # Kept with the instance: the store's record gives the next step the same limit.
    stored = snapshot_of(instance_record(first.snapshot, create_time=_T, update_time=_T))
    assert stored.recursion_limit == 2
    second = signal(d, stored, "go", {})
    assert second.status is Status.FAILED
    assert second.error is not None and second.error.reason == "RECURSION_LIMIT"
    assert second.error.metadata["limit"] == "2"
    assert len(second.transitions) == 2
    assert second.snapshot.recursion_limit == 2


def test_without_a_starts_limit_the_definitions_applies() -> None:
    d = _chain()
    first = start(d, "w", {})
    assert first.snapshot.recursion_limit is None
    assert signal(d, first.snapshot, "go", {}).status is Status.COMPLETED
    # A limit at least the chain's length lets it finish too.
    limited = start(d, "w", {}, recursion_limit=4)
    assert signal(d, limited.snapshot, "go", {}).status is Status.COMPLETED


def test_a_starts_limit_never_raises_the_definitions() -> None:
    d = load_definition(CHAIN.replace("recursion_limit: 10", "recursion_limit: 3"))
    # The door refuses such a start; the engine takes the lower of the two regardless.
    first = start(d, "w", {}, recursion_limit=50)
    failed = signal(d, first.snapshot, "go", {})
    assert failed.status is Status.FAILED
    assert failed.error is not None and failed.error.metadata["limit"] == "3"


def test_the_first_step_obeys_it_too() -> None:
    d = _chain()
    at_limit = start(d, "w", {}, recursion_limit=1)
    assert at_limit.status is Status.RUNNING  # s -> idle is one transition: at the limit
    d2 = load_definition(CHAIN.replace("  - {from: s, to: idle}\n", "  - {from: s, to: a}\n"))
    over = start(d2, "w", {}, recursion_limit=2)
    assert over.status is Status.FAILED
    assert over.error is not None and over.error.reason == "RECURSION_LIMIT"
