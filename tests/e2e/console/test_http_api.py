"""The console's HTTP/JSON API: every endpoint, its errors, and its event streams,
against a real server on PostgreSQL."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.support.api import uid
from tests.support.console import Http, console_url, http_error_info
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import wait_until

W = "/api/v1/workflows"


def start(http: Http, definition: str, **fields: object) -> dict[str, object]:
    answer = http.post(W, {"definition": definition, **fields})
    assert answer.status == 200, answer.body
    workflow: dict[str, object] = answer.body["workflow"]
    return workflow


# -- definitions ---------------------------------------------------------------------------


def test_definitions_are_listed_paged_and_read_by_name_and_version(http: Http) -> None:
    listed = http.get("/api/v1/definitions", pageSize=1000)
    assert listed.status == 200
    names = {d["definition"] for d in listed.body["definitions"]}
    assert {"mail-approval", "review-loop", "order-fulfilment"} <= names
    mail = next(d for d in listed.body["definitions"] if d["definition"] == "mail-approval")
    assert mail["mermaid"].startswith("stateDiagram-v2") and mail["source"]
    first = http.get("/api/v1/definitions", pageSize=1)
    assert len(first.body["definitions"]) == 1 and first.body["nextPageToken"]
    second = http.get("/api/v1/definitions", pageSize=1, pageToken=first.body["nextPageToken"])
    assert second.body["definitions"] != first.body["definitions"]
    only = http.get("/api/v1/definitions", definition="mail-approval")
    assert {d["definition"] for d in only.body["definitions"]} == {"mail-approval"}

    latest = http.get("/api/v1/definitions/mail-approval")
    assert latest.status == 200
    version = latest.body["definition"]["version"]
    pinned = http.get(f"/api/v1/definitions/mail-approval/versions/{version}")
    assert pinned.body == latest.body


def test_a_definition_declares_its_context_fields_with_their_defaults(http: Http) -> None:
    pricing = http.get("/api/v1/definitions/order-pricing").body["definition"]
    fields = {f["name"]: f for f in pricing["contextFields"]}
    assert list(fields)[:3] == ["items", "quantity", "price"]  # declaration order
    assert fields["quantity"] == {
        "name": "quantity",
        "type": "int",
        "reducer": "replace",
        "defaultValue": 1,
        "nullable": False,
    }
    assert fields["log"]["reducer"] == "append" and fields["log"]["defaultValue"] == []
    assert fields["shipment"]["defaultValue"] == {}
    assert fields["reason"]["nullable"] is True and fields["reason"]["defaultValue"] is None


def test_whole_numbers_read_back_as_integers(http: Http) -> None:
    started = http.post(
        W, {"definition": "order-pricing", "input": {"quantity": 4, "price": 2.5, "items": ["a"]}}
    )
    assert started.status == 200, started.body
    context = started.body["workflow"]["context"]
    # A Struct holds every number as a double, which canonical JSON writes as 4.0.
    assert type(context["quantity"]) is int and context["quantity"] == 4
    assert type(context["price"]) is float and context["price"] == 2.5
    assert type(context["total"]) is int and context["total"] == 10


def test_definition_errors_are_the_grpc_api_s(http: Http) -> None:
    assert http.get("/api/v1/definitions/no-such-thing").error == (
        "NOT_FOUND",
        "DEFINITION_NOT_FOUND",
    )
    missing = http.get("/api/v1/definitions/mail-approval/versions/999")
    assert missing.status == 404 and missing.error[0] == "NOT_FOUND"
    assert http.get("/api/v1/definitions/mail-approval/versions/x").status == 400
    bad_token = http.get("/api/v1/definitions", pageToken="nonsense")
    assert bad_token.status == 400 and bad_token.error[0] == "INVALID_ARGUMENT"
    unknown = http.get("/api/v1/definitions", colour="blue")
    assert unknown.error == ("INVALID_ARGUMENT", "MALFORMED_REQUEST")


# -- workflows -----------------------------------------------------------------------------


def test_start_get_and_list(http: Http) -> None:
    workflow_id = uid("http")
    started = http.post(
        W, {"definition": "mail-approval", "workflowId": workflow_id, "input": {"topic": "launch"}}
    )
    assert started.status == 200 and started.body["created"] is True
    workflow = started.body["workflow"]
    assert workflow["status"] == "WORKFLOW_STATUS_WAITING"
    assert workflow["state"] == "awaiting_approval"
    assert workflow["revision"] == "1"  # int64 is a string in canonical JSON
    assert workflow["context"]["topic"] == "launch"

    got = http.get(f"{W}/{workflow_id}")
    assert got.status == 200 and got.body["workflow"]["workflowId"] == workflow_id

    again = http.post(W, {"definition": "mail-approval", "workflowId": workflow_id})
    assert again.error == ("ALREADY_EXISTS", "WORKFLOW_ALREADY_EXISTS") and again.status == 409
    kept = http.post(
        W,
        {
            "definition": "mail-approval",
            "workflowId": workflow_id,
            "ifExists": "IF_EXISTS_POLICY_RETURN_EXISTING",
        },
    )
    assert kept.status == 200 and kept.body.get("created", False) is False

    listed = http.get(
        W, definition="mail-approval", status="WORKFLOW_STATUS_WAITING", pageSize=1000
    )
    assert workflow_id in {w["workflowId"] for w in listed.body["workflows"]}
    none = http.get(
        W, definition="mail-approval", status="WORKFLOW_STATUS_CANCELLED", pageSize=1000
    )
    assert workflow_id not in {w["workflowId"] for w in none.body.get("workflows", [])}


def test_the_list_orders_and_searches_by_query_parameters(http: Http) -> None:
    prefix = uid("ordered")
    made = [start(http, "tally", workflowId=f"{prefix}-{i}")["workflowId"] for i in range(3)]
    newest = http.get(W, orderBy="create_time desc", idPrefix=prefix, pageSize=2)
    assert [w["workflowId"] for w in newest.body["workflows"]] == made[:0:-1]
    rest = http.get(
        W, order_by="create_time desc", id_prefix=prefix, pageToken=newest.body["nextPageToken"]
    )
    assert [w["workflowId"] for w in rest.body["workflows"]] == made[:1]
    refused = http.get(W, orderBy="newest")
    assert refused.status == 400 and refused.error == ("INVALID_ARGUMENT", "INVALID_ORDER_BY")
    assert http.get(W, idPrefix="-no").error == ("INVALID_ARGUMENT", "INVALID_FIELD")
    stream = http.events(f"{W}:watch?orderBy=create_time%20desc&idPrefix={prefix}&pageSize=1")
    try:
        assert [w["workflowId"] for w in stream.until("page").data["workflows"]] == made[-1:]
        assert stream.until("count").data == {"count": 3, "more": False}
    finally:
        stream.close()


def test_workflow_errors_are_the_grpc_api_s(http: Http) -> None:
    absent = http.get(f"{W}/{uid('absent')}")
    assert absent.status == 404 and absent.error == ("NOT_FOUND", "WORKFLOW_NOT_FOUND")
    assert absent.metadata["workflow_id"]
    assert http.get(f"{W}/bad%20id").status == 400
    assert http.get(W, status="WORKFLOW_STATUS_SLEEPING").error == (
        "INVALID_ARGUMENT",
        "MALFORMED_REQUEST",
    )
    assert http.get(W, pageSize=-1).status == 400
    assert http.post(W, {"definition": "nope"}).error == ("NOT_FOUND", "DEFINITION_NOT_FOUND")
    assert http.post(W, {"definition": "mail-approval", "input": {"topic": 5}}).status == 400
    assert http.post(W, {"definitionn": "mail-approval"}).error == (
        "INVALID_ARGUMENT",
        "MALFORMED_REQUEST",
    )
    not_json = http.request("POST", W, "{", headers={"Content-Type": "application/json"})
    assert not_json.error == ("INVALID_ARGUMENT", "MALFORMED_REQUEST")
    # A form or plain-text POST (what another site's page may send unasked) is refused.
    plain = http.request(
        "POST", W, '{"definition": "mail-approval"}', headers={"Content-Type": "text/plain"}
    )
    assert plain.error == ("INVALID_ARGUMENT", "UNSUPPORTED_MEDIA_TYPE")
    foreign = http.request(
        "POST",
        W,
        '{"definition": "mail-approval"}',
        headers={"Content-Type": "application/json", "Origin": "http://evil.example"},
    )
    assert foreign.status == 403 and foreign.error == ("PERMISSION_DENIED", "CROSS_ORIGIN")
    assert http.get("/api/v1/nothing").error == ("NOT_FOUND", "ENDPOINT_NOT_FOUND")
    assert http.request("DELETE", W).error == ("UNIMPLEMENTED", "METHOD_NOT_ALLOWED")


def test_resume_signal_and_cancel_and_their_refusals(http: Http) -> None:
    mail = start(http, "mail-approval", input={"topic": "t"})
    path = f"{W}/{mail['workflowId']}"
    wrong = http.post(f"{path}/resume", {"event": "nope"})
    assert wrong.status == 400 and wrong.error == ("INVALID_ARGUMENT", "UNKNOWN_EVENT")
    stale = http.post(f"{path}/resume", {"event": "approve", "expectedRevision": "7"})
    assert stale.status == 409 and stale.error[0] == "ABORTED"
    other = http.post(f"{path}/resume", {"name": "workflows/someone-else", "event": "approve"})
    assert other.error == ("INVALID_ARGUMENT", "MALFORMED_REQUEST")
    done = http.post(
        f"{path}/resume",
        {"event": "approve", "input": {"approver": "ann"}, "expectedRevision": "1"},
    )
    assert done.status == 200, done.body
    assert done.body["workflow"]["status"] == "WORKFLOW_STATUS_COMPLETED"
    assert done.body["transitions"]
    finished = http.post(f"{path}/resume", {"event": "approve"})
    assert finished.status == 400 and finished.error[0] == "FAILED_PRECONDITION"

    loop = start(http, "review-loop", input={"document": "d"})
    path = f"{W}/{loop['workflowId']}"
    signalled = http.post(f"{path}/signal", {"event": "score", "payload": {"score": 0.2}})
    assert signalled.status == 200 and signalled.body["accepted"] is True
    assert signalled.body["workflow"]["state"] == "improving"
    undeclared = http.post(f"{path}/signal", {"event": "applause"})
    assert undeclared.status == 400 and undeclared.error[1] == "UNKNOWN_EVENT"
    cancelled = http.post(f"{path}/cancel", {"reason": "enough"})
    assert cancelled.status == 200
    assert cancelled.body["workflow"]["status"] == "WORKFLOW_STATUS_CANCELLED"
    # The instance's error is a google.rpc.Status: the fields of an error answer's, with
    # the gRPC code's number, and the same ErrorInfo.
    failure = cancelled.body["workflow"]["error"]
    assert (failure["code"], failure["message"]) == (1, "enough")
    assert [(d["@type"], d["reason"], d["domain"]) for d in failure["details"]] == [
        ("type.googleapis.com/google.rpc.ErrorInfo", "CANCELLED", "statewright.dev")
    ]
    late = http.post(f"{path}/signal", {"event": "revised", "payload": {"document": "x"}})
    assert late.status == 200 and late.body["accepted"] is False
    assert late.body["reason"] == "SIGNAL_REJECTION_NOT_RUNNING"
    assert http.post(f"{W}/{uid('absent')}/cancel", {}).error == ("NOT_FOUND", "WORKFLOW_NOT_FOUND")


def test_an_idempotent_retry_gets_the_original_answer(http: Http) -> None:
    loop = start(http, "review-loop")
    path = f"{W}/{loop['workflowId']}/signal"
    body = {"event": "score", "payload": {"score": 0.3}, "requestId": uid("req")}
    first, second = http.post(path, body), http.post(path, body)
    assert first.status == second.status == 200
    assert first.body["workflow"]["revision"] == second.body["workflow"]["revision"] == "2"


# -- diagnostics ---------------------------------------------------------------------------


def test_diagnostics_of_the_server_and_of_one_workflow(http: Http) -> None:
    answer = http.get("/api/v1/diagnostics")
    assert answer.status == 200
    assert answer.body["eventLoop"]["phase"] == "EVENT_LOOP_PHASE_RUNNING"
    assert answer.body["persistence"]["backend"] == "postgresql"
    mail = start(http, "mail-approval")
    one = http.get(f"{W}/{mail['workflowId']}/diagnostics")
    assert one.status == 200 and one.body["diagnostics"]["revision"] == "1"
    assert http.get(f"{W}/{uid('absent')}/diagnostics").error == ("NOT_FOUND", "WORKFLOW_NOT_FOUND")


# -- streams -------------------------------------------------------------------------------


def test_a_watch_replays_follows_and_ends_with_the_instance(http: Http) -> None:
    loop = start(http, "review-loop", input={"document": "d"})
    path = f"{W}/{loop['workflowId']}"
    stream = http.events(f"{path}/watch")
    try:
        assert stream.status == 200
        assert stream.response.getheader("Content-Type", "").startswith("text/event-stream")
        current = stream.next()
        assert current is not None and current.type == "current" and current.id == "1"
        assert current.data["type"] == "WATCH_EVENT_TYPE_CURRENT"
        assert (
            http.post(f"{path}/signal", {"event": "score", "payload": {"score": 0.9}}).status == 200
        )
        step = stream.next()
        assert step is not None and step.type == "step" and step.id == "2"
        assert step.data["event"] == "score" and step.data["actor"] == "anonymous"
        assert "accepted" in {t["toState"] for t in step.data["transitions"]}
        assert step.data["workflow"]["status"] == "WORKFLOW_STATUS_COMPLETED"
        end = stream.next()
        assert end is not None and end.type == "end"
        assert stream.next() is None
    finally:
        stream.close()
    # Nothing can follow a terminal revision: 204, which stops an EventSource for good.
    after_end = http.events(f"{path}/watch", last_event_id="2")
    assert after_end.status == 204
    after_end.close()


def test_a_dropped_watch_resumes_with_last_event_id_losing_and_repeating_nothing(
    http: Http,
) -> None:
    loop = start(http, "review-loop", input={"document": "d", "max_iterations": 50})
    path = f"{W}/{loop['workflowId']}"
    signals = [("score", {"score": 0.1}), ("revised", {"document": "x"})] * 6

    def send(count: int) -> None:
        for _ in range(count):
            event, payload = signals.pop(0)
            assert http.post(f"{path}/signal", {"event": event, "payload": payload}).status == 200

    first = http.events(f"{path}/watch?afterRevision=0")
    seen: list[int] = []
    send(4)  # revisions 2..5
    for _ in range(3):
        event = first.next()
        assert event is not None and event.type == "step"
        seen.append(int(event.data["revision"]))
        assert event.id == event.data["revision"]
    first.close()  # dropped mid-stream, as a network failure or a closed laptop would
    send(5)  # revisions 6..10, while nobody watches
    second = http.events(f"{path}/watch?afterRevision=0", last_event_id=str(seen[-1]))
    try:
        while seen[-1] < 12:
            if seen[-1] == 10:
                send(2)  # live again: 11, 12
            event = second.next()
            assert event is not None and event.type == "step"
            seen.append(int(event.data["revision"]))
    finally:
        second.close()
    assert seen == list(range(1, 13))


def test_watch_refusals_are_plain_http_errors(http: Http) -> None:
    mail = start(http, "mail-approval")
    path = f"{W}/{mail['workflowId']}/watch"
    beyond = http.events(f"{path}?afterRevision=5")
    assert beyond.status == 400
    beyond.close()
    absent = http.events(f"{W}/{uid('absent')}/watch")
    assert absent.status == 404
    absent.close()
    garbled = http.events(path, last_event_id="yesterday")
    assert garbled.status == 400
    garbled.close()


def test_the_list_stream_counts_and_pages_live(http: Http) -> None:
    stream = http.events(f"{W}:watch?definition=order-pricing&pageSize=5")
    try:
        page = stream.until("page")
        count = stream.until("count")
        before = count.data["count"]
        assert count.data["more"] is False
        assert len(page.data.get("workflows", [])) == min(before, 5)
        started = start(
            http, "order-pricing", input={"items": [{"sku": "a", "price": 1.0, "quantity": 1}]}
        )
        while True:
            event = stream.until("count")
            if event.data["count"] == before + 1:
                break
        assert started["definition"] == "order-pricing"
    finally:
        stream.close()
    bad = http.events(f"{W}:watch?status=WORKFLOW_STATUS_NOPE")
    assert bad.status == 400
    bad.close()


def test_the_diagnostics_stream_resumes_after_its_last_sample(http: Http) -> None:
    stream = http.events("/api/v1/diagnostics:watch")
    try:
        first = stream.until("diagnostics")
        assert first.id is not None and first.data["eventLoop"]["phase"]
        newer = stream.until("diagnostics")
        assert newer.id is not None and int(newer.id) > int(first.id)
    finally:
        stream.close()
    resumed = http.events("/api/v1/diagnostics:watch", last_event_id=newer.id)
    try:
        after = resumed.until("diagnostics")
        assert after.id is not None and int(after.id) > int(newer.id)
    finally:
        resumed.close()


# -- the pages -----------------------------------------------------------------------------


def test_the_pages_are_served_with_a_strict_policy(http: Http) -> None:
    index = http.get("/")
    assert index.status == 200 and b'<script type="module" src="/static/app.js">' in index.body
    policy = index.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert http.get("/workflows/anything").body == index.body  # the front end routes it
    app = http.get("/static/app.js")
    assert app.status == 200 and app.headers["content-type"].startswith(
        ("application/javascript", "text/javascript")
    )
    assert http.get("/static/no-such-file.js").status == 404


# -- drain ---------------------------------------------------------------------------------


def test_streams_end_cleanly_at_drain(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions", test_definitions=False)
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(url, definitions, cwd=tmp_path, extra_args=args, grace=10.0) as server:
        http = Http(console_url(server))
        loop = start(http, "review-loop")
        watch = http.events(f"{W}/{loop['workflowId']}/watch")
        listing = http.events(f"{W}:watch")
        runtime = http.events("/api/v1/diagnostics:watch")
        assert watch.until("current").id == "1"
        listing.until("count")
        runtime.until("diagnostics")
        server.signal(signal.SIGTERM)
        for stream in (watch, listing, runtime):
            error = stream.until("error")
            assert error.data["error"]["status"] == "UNAVAILABLE"
            assert error.data["error"]["code"] == 503
            assert http_error_info(error.data)["reason"] == "SHUTTING_DOWN"
            assert stream.next() is None
            stream.close()
        assert server.wait(20) == 0
        assert "Traceback" not in server.log(), server.log()
    postgres_databases.drop_soon(url)


def test_a_fan_out_shows_its_progress_and_pages_its_items(http: Http) -> None:
    workflow_id = uid("http-fan")
    lines = [{"sku": f"s{i}", "amount": 1.5} for i in range(3)]
    started = start(
        http, "order-lines-batch", workflowId=workflow_id, input={"order_id": "o", "lines": lines}
    )
    progress = {"total": 3, "open": 3, "completed": 0, "givenUp": 0, "revision": "1"}
    assert started["fanOut"] == progress
    items = http.get("/api/v1/tasks", workflow=f"workflows/{workflow_id}", pageSize=2)
    assert items.status == 200 and len(items.body["tasks"]) == 2
    rest = http.get(
        "/api/v1/tasks",
        workflow=f"workflows/{workflow_id}",
        pageSize=2,
        pageToken=items.body["nextPageToken"],
    )
    listed = items.body["tasks"] + rest.body["tasks"]
    assert sorted(t["itemIndex"] for t in listed) == [0, 1, 2]
    assert all(t["status"] == "TASK_STATUS_SCHEDULED" and "result" not in t for t in listed)
    assert [t["input"]["line"] for t in sorted(listed, key=lambda t: t["itemIndex"])] == [0, 1, 2]


def test_a_child_names_its_parent_and_the_parent_filter_lists_it(http: Http) -> None:
    parent = uid("http-onb")
    started = start(http, "customer-onboarding", workflowId=parent, input={"customer_id": "c"})
    assert started["state"] == "verify_identity"
    child = f"kyc-{parent}"
    assert wait_until(lambda: http.get(f"{W}/{child}").status == 200, timeout=30)
    got = http.get(f"{W}/{child}").body["workflow"]
    assert got["parent"] == {
        "name": f"workflows/{parent}",
        "state": "verify_identity",
        "taskId": "1",
    }
    assert http.get(f"{W}/{parent}").body["workflow"]["children"] == {
        "open": 1,
        "names": [f"workflows/{child}"],
    }
    listed = http.get(W, filter=f'parent = "workflows/{parent}"')
    assert [w["workflowId"] for w in listed.body["workflows"]] == [child]
