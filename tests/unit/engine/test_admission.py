"""The admission registry: one live segment per instance, owned through a token."""

from __future__ import annotations

import pytest

from statewrightd.engine.admission import AdmissionRegistry, AdmissionState


def test_one_live_segment_per_instance() -> None:
    registry = AdmissionRegistry()
    segment = registry.admit("w")
    assert registry.get("w") is segment
    with pytest.raises(AssertionError):
        registry.admit("w")
    other = registry.admit("v")
    assert other.token != segment.token
    assert len(registry) == 2


def test_a_stale_owner_can_neither_advance_nor_release() -> None:
    registry = AdmissionRegistry()
    first = registry.admit("w")
    assert registry.release("w", first.token) is first
    second = registry.admit("w")
    # The first owner's late callback arrives after its segment ended and a new one began.
    assert not registry.owns("w", first.token)
    assert not registry.advance("w", first.token, AdmissionState.PERSISTING)
    assert registry.release("w", first.token) is None
    assert registry.get("w") is second
    assert second.state is AdmissionState.ADMITTING


def test_states_are_counted() -> None:
    registry = AdmissionRegistry()
    a, b, c = (registry.admit(x) for x in "abc")
    assert registry.advance("a", a.token, AdmissionState.EXECUTING)
    assert registry.advance("b", b.token, AdmissionState.PERSISTING)
    assert registry.advance("c", c.token, AdmissionState.RECOVERY_REQUIRED)
    counts = registry.counts()
    assert counts[AdmissionState.EXECUTING] == 1
    assert counts[AdmissionState.PERSISTING] == 1
    assert counts[AdmissionState.RECOVERY_REQUIRED] == 1
    assert counts[AdmissionState.ADMITTING] == 0
