"""Request validation: each malformed field is named in the error's metadata."""

from __future__ import annotations

import pytest

from statewrightd.api import validation as v
from statewrightd.errors import InvalidArgument


@pytest.mark.parametrize(
    ("name", "expected"),
    [("workflows/a", "a"), ("workflows/order-17:v2.x_y", "order-17:v2.x_y")],
)
def test_workflow_names_parse(name: str, expected: str) -> None:
    assert v.workflow_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "",
        "a",
        "workflows/",
        "workflows/-a",
        "workflow/a",
        "workflows/a/b",
        "workflows/" + "a" * 129,
    ],
)
def test_bad_workflow_names_are_invalid_argument(name: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        v.workflow_name(name)
    assert caught.value.metadata["field"] == "name"
    assert caught.value.reason == ("FIELD_REQUIRED" if not name else "INVALID_FIELD")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("definitions/mail-approval", ("mail-approval", None)),
        ("definitions/mail-approval/versions/3", ("mail-approval", 3)),
    ],
)
def test_definition_resources_parse(name: str, expected: tuple[str, int | None]) -> None:
    assert v.definition_resource(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "definitions/Mail",
        "definitions/x/versions/0",
        "definitions/x/versions/-1",
        "definitions/x/version/1",
        "x/y",
    ],
)
def test_bad_definition_resources(name: str) -> None:
    with pytest.raises(InvalidArgument):
        v.definition_resource(name)


def test_page_size_defaults_and_caps() -> None:
    assert v.page_size(0) == v.DEFAULT_PAGE_SIZE
    assert v.page_size(7) == 7
    assert v.page_size(10**6) == v.MAX_PAGE_SIZE
    with pytest.raises(InvalidArgument):
        v.page_size(-1)


def test_event_names() -> None:
    assert v.event_name("", allow_empty=True) == ""
    assert v.event_name("approve") == "approve"
    for bad in ("", "has space", "1abc"):
        with pytest.raises(InvalidArgument) as caught:
            v.event_name(bad)
        assert caught.value.metadata["field"] == "event"


def test_request_ids() -> None:
    assert v.request_id("") == ""
    assert v.request_id("req-1") == "req-1"
    with pytest.raises(InvalidArgument):
        v.request_id("with space")
    with pytest.raises(InvalidArgument):
        v.request_id("x" * 129)
