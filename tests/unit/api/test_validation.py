"""Request validation: each malformed field is named in the error's metadata."""

from __future__ import annotations

import pytest

from statewrightd.api import validation as v
from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason
from statewrightd.store.records import OLDEST_FIRST


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
        v.request_id("x" * 257)


# Control characters (a final newline above all: ``$`` matches before it), spaces,
# quotes, non-ASCII letters and anything a URL or a log line would have to escape.
OUTSIDE_THE_SET = [
    "nl\n",
    "\nnl",
    "tab\t1",
    "nul\x00",
    "sp ace",
    "quote'",
    'dq"',
    "uml\u00e4ut",
    "x\u2028",
    "semi;colon",
    "per%cent",
    "plus+",
    "star*",
    "back\\slash",
    "cr\r",
]


@pytest.mark.parametrize("bad", OUTSIDE_THE_SET)
def test_ids_outside_the_documented_set_are_invalid_argument_naming_the_field(bad: str) -> None:
    for check, field in ((v.workflow_id, "workflow_id"), (v.request_id, "request_id")):
        with pytest.raises(InvalidArgument) as caught:
            check(bad)
        assert caught.value.metadata["field"] == field, bad
        assert caught.value.reason == "INVALID_FIELD"
    with pytest.raises(InvalidArgument) as named:
        v.workflow_name("workflows/" + bad)
    assert named.value.metadata["field"] == "name"


@pytest.mark.parametrize(
    "derived",
    [
        # A child instance's default id: <parent id>.<state>.<revision>.
        "order-17.verify_identity.3",
        "tenant@acme:order-17.charge-items.12",
        # A schedule's fire: <schedule id>-<fire time, RFC 3339 in UTC>.
        "nightly-2026-01-01T00:00:00Z",
        "nightly-2026-01-01T00:00:00.250Z",
        # Shapes the clients, examples and tests use.
        "6f1c2a0e9b7d4c3e8a5f1d2b3c4e5f60",
        "mail:2024-05-01:alice@example.com",
    ],
)
def test_derived_and_usual_ids_fit_the_set(derived: str) -> None:
    assert v.workflow_id(derived) == derived
    assert v.request_id(derived) == derived


def test_a_workers_request_id_fits_for_the_longest_workflow_id() -> None:
    # Every client's worker names its report after the task: name#attempt#kind.
    task = "workflows/" + "w" * v.MAX_WORKFLOW_ID_LENGTH + "/tasks/" + "9" * 19
    assert v.request_id(f"{task}#12#complete") == f"{task}#12#complete"


def test_list_orders_are_keys_separated_by_commas() -> None:
    assert v.list_order("") == OLDEST_FIRST
    for spelled in ("create_time desc", "create_time", "update_time desc", "update_time"):
        assert v.list_order(spelled).spelled == spelled
        assert not v.list_order(spelled).by_keys  # one time: the listing of old
    two = v.list_order(" update_time  desc ,search.amount")
    assert two.spelled == "update_time desc, search.amount"
    assert [(k.column, k.descending) for k in two.keys] == [
        ("update_time", True),
        ("search.amount", False),
    ]
    assert v.list_order("state").by_keys
    assert v.list_order("definition, create_time desc, name").spelled == (
        "definition, create_time desc, name"
    )
    for bad, problem in (
        ("newest", "unknown field newest"),
        ("create_time asc", "'create_time asc' is not a field with an optional ' desc'"),
        ("CREATE_TIME DESC", "'CREATE_TIME DESC' is not a field with an optional ' desc'"),
        ("create_tme", "unknown field create_tme, did you mean create_time"),
        ("state, state desc", "state is named twice"),
        ("name, state", "name is unique: no key can follow it"),
        ("state,", "'' is not a field with an optional ' desc'"),
        (
            ", ".join(["name"] + [f"search.f{i}" for i in range(8)]),
            "name is unique: no key can follow it",
        ),
        (", ".join(f"search.f{i}" for i in range(9)), "an order has at most 8 keys"),
    ):
        with pytest.raises(InvalidArgument) as refused:
            v.list_order(bad)
        assert refused.value.reason == Reason.INVALID_ORDER_BY
        assert refused.value.metadata["field"] == "order_by"
        assert refused.value.metadata["problem"] == problem, bad


def test_id_prefixes_are_validated_like_ids() -> None:
    assert v.id_prefix("") is None
    assert v.id_prefix("order-2026") == "order-2026"
    for bad in ("-x", "a b", "a%", "x" * 129):
        with pytest.raises(InvalidArgument):
            v.id_prefix(bad)
