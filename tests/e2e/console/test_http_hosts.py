"""Requests another site can make a browser send are refused, with authentication off as
`statewrightd dev` runs: a Host that is not this server's (DNS rebinding), a page of
another origin, a write that is not JSON (a form or a plain-text POST needs no CORS
preflight). Against a real server; the names it answers to are its listen address,
localhost, and --http-allowed-hosts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.console import Http, console_url
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

W = "/api/v1/workflows"


def _start(http: Http) -> str:
    started = http.post(W, {"definition": "review-loop"})
    assert started.status == 200, started.body
    workflow_id: str = started.body["workflow"]["workflowId"]
    return workflow_id


def _status(http: Http, workflow_id: str) -> str:
    status: str = http.get(f"{W}/{workflow_id}").body["workflow"]["status"]
    return status


def test_a_foreign_host_is_refused_even_when_origin_and_host_agree(
    http: Http, base_url: str
) -> None:
    port = urlsplit(base_url).port
    victim = _start(http)
    rebound = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}
    for method, path, body in (
        ("GET", W, None),
        ("GET", f"{W}/{victim}", None),
        ("POST", f"{W}/{victim}/cancel", b"{}"),
        ("GET", "/", None),  # the pages too: they are what a rebound page would read
        ("GET", "/api/v1/openapi.json", None),
    ):
        headers = {**rebound, "Content-Type": "application/json"} if body else rebound
        answer = http.request(method, path, body, headers=headers)
        assert answer.status == 403, (method, path, answer.body)
        assert answer.error == ("PERMISSION_DENIED", "HOST_NOT_ALLOWED")
    assert _status(http, victim) != "WORKFLOW_STATUS_CANCELLED"
    # The names this server does answer to.
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        assert http.request("GET", W, headers={"Host": host}).status == 200, host


def test_writes_from_forms_and_foreign_pages_are_refused(http: Http, base_url: str) -> None:
    victim = _start(http)
    cancel = f"{W}/{victim}/cancel"
    for content_type, body in (
        ("text/plain", b""),  # the cross-site form of old: empty, and it cancelled
        ("text/plain", b'{"reason": "x"}'),
        ("application/x-www-form-urlencoded", b"reason=x"),
        ("multipart/form-data; boundary=b", b"--b--\r\n"),
        (None, b""),
    ):
        headers = {"Content-Type": content_type} if content_type else {}
        answer = http.request("POST", cancel, body, headers=headers)
        assert answer.error == ("INVALID_ARGUMENT", "UNSUPPORTED_MEDIA_TYPE"), content_type
    foreign = http.request(
        "POST",
        cancel,
        b"{}",
        headers={"Content-Type": "application/json", "Origin": "http://evil.example"},
    )
    assert foreign.error == ("PERMISSION_DENIED", "CROSS_ORIGIN")
    stream = http.request("GET", f"{W}/{victim}/watch", headers={"Origin": "http://evil.example"})
    assert stream.error == ("PERMISSION_DENIED", "CROSS_ORIGIN")
    assert _status(http, victim) != "WORKFLOW_STATUS_CANCELLED"
    # The console's own page: same origin, JSON.
    own = http.request(
        "POST", cancel, b"{}", headers={"Content-Type": "application/json", "Origin": base_url}
    )
    assert own.status == 200 and _status(http, victim) == "WORKFLOW_STATUS_CANCELLED"


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Http, ServerProcess]]:
    root = tmp_path_factory.mktemp("hosts")
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    args = [
        "--http-listen", "127.0.0.1:0",
        "--http-allowed-hosts", "console.example.com, .ops.example.org",
    ]  # fmt: skip
    with running_server(f"sqlite:///{root / 'sw.db'}", definitions, cwd=root, extra_args=args) as s:
        yield Http(console_url(s)), s
        assert "Traceback" not in s.log(), s.log()


def test_names_given_with_http_allowed_hosts_are_served(named: tuple[Http, ServerProcess]) -> None:
    http, _ = named
    for host, served in (
        ("console.example.com", True),
        ("CONSOLE.example.com:443", True),
        ("a.ops.example.org", True),
        ("ops.example.org.evil", False),
        ("example.com", False),
        ("127.0.0.1", True),
    ):
        answer = http.request("GET", "/api/v1/definitions", headers={"Host": host})
        assert (answer.status == 200) is served, (host, answer.body)


def test_http_allowed_hosts_is_read_from_the_environment(tmp_path: Path) -> None:
    definitions = definitions_dir(tmp_path / "definitions", test_definitions=False)
    args = ["--http-listen", "127.0.0.1:0"]
    server = ServerProcess(
        database_url=f"sqlite:///{tmp_path / 'sw.db'}",
        definitions=definitions,
        extra_args=args,
        env={"STATEWRIGHT_HTTP_ALLOWED_HOSTS": "env.example.net"},
        cwd=tmp_path,
    )
    server.start()
    try:
        http = Http(console_url(server))
        assert http.request("GET", W, headers={"Host": "env.example.net"}).status == 200
        assert http.request("GET", W, headers={"Host": "other.example.net"}).status == 403
    finally:
        server.stop(timeout=15)
