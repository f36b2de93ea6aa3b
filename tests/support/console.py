"""The web console's HTTP API from tests: JSON calls and Server-Sent Event streams over
plain sockets (http.client), as curl or a language without a gRPC client would use it."""

from __future__ import annotations

import http.client
import json
import re
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from tests.support.server import ServerProcess, wait_until

_CONSOLE = re.compile(r"web console on (https?)://(\S+):(\d+)/")


def console_url(server: ServerProcess, timeout: float = 10.0) -> str:
    """The console's base URL, from the line the server logs when it listens."""

    def found() -> re.Match[str] | None:
        return next((m for line in server.lines if (m := _CONSOLE.search(line))), None)

    assert wait_until(lambda: found() is not None, timeout), server.log()
    match = found()
    assert match is not None
    return f"{match.group(1)}://{match.group(2)}:{match.group(3)}"


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]

    @property
    def error(self) -> tuple[str, str]:
        """(status, reason) of an error answer: the gRPC code's name and the ErrorInfo's
        reason, checked to be in Google's error shape with this answer's HTTP status."""
        assert self.status >= 400, (self.status, self.body)
        assert self.body["error"]["code"] == self.status, self.body
        return self.body["error"]["status"], http_error_info(self.body)["reason"]

    @property
    def message(self) -> str:
        return str(self.body["error"]["message"])

    @property
    def metadata(self) -> dict[str, str]:
        return dict(http_error_info(self.body)["metadata"])


ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def http_error_info(body: Any) -> dict[str, Any]:
    """The ErrorInfo of an error body (an answer's, or an ``error`` event's data), checked
    to be Google's HTTP/JSON error shape:
    ``{"error": {"code", "message", "status", "details": [ErrorInfo, ...]}}``."""
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "status", "details"}, body
    assert isinstance(error["code"], int) and error["code"] >= 400, body
    assert isinstance(error["message"], str) and error["status"].isupper(), body
    infos = [d for d in error["details"] if d["@type"] == ERROR_INFO]
    assert len(infos) == 1, body
    info: dict[str, Any] = infos[0]
    assert set(info) == {"@type", "reason", "domain", "metadata"}, body
    assert info["domain"] == "statewright.dev", body
    return info


@dataclass
class Event:
    type: str
    data: Any
    id: str | None


@dataclass
class Http:
    base: str
    token: str | None = None
    context: ssl.SSLContext | None = None
    timeout: float = 15.0
    headers: dict[str, str] = field(default_factory=dict)

    def _connection(self, timeout: float | None = None) -> http.client.HTTPConnection:
        url = urlsplit(self.base)
        assert url.hostname is not None and url.port is not None
        if url.scheme == "https":
            return http.client.HTTPSConnection(
                url.hostname, url.port, timeout=timeout or self.timeout, context=self.context
            )
        return http.client.HTTPConnection(url.hostname, url.port, timeout=timeout or self.timeout)

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        out = {**self.headers, **(extra or {})}
        if self.token is not None:
            out["Authorization"] = f"Bearer {self.token}"
        return out

    def request(
        self,
        method: str,
        path: str,
        body: str | bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        conn = self._connection()
        try:
            conn.request(method, path, body=body, headers=self._headers(headers))
            response = conn.getresponse()
            raw = response.read()
            kind = response.getheader("Content-Type", "")
            parsed: Any = json.loads(raw) if kind.startswith("application/json") else raw
            return Answer(response.status, parsed, {k.lower(): v for k, v in response.getheaders()})
        finally:
            conn.close()

    def get(self, path: str, **query: Any) -> Answer:
        return self.request("GET", path + (f"?{urlencode(query)}" if query else ""))

    def post(self, path: str, body: Any) -> Answer:
        return self.request(
            "POST", path, json.dumps(body), headers={"Content-Type": "application/json"}
        )

    def events(
        self, path: str, last_event_id: str | None = None, timeout: float = 15.0
    ) -> EventStream:
        return EventStream(self, path, last_event_id, timeout)


class EventStream:
    """One SSE connection; ``close`` drops it as a network failure would."""

    def __init__(self, http: Http, path: str, last_event_id: str | None, timeout: float) -> None:
        self._conn = http._connection(timeout)
        extra = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            extra["Last-Event-ID"] = last_event_id
        self._conn.request("GET", path, headers=http._headers(extra))
        self.response = self._conn.getresponse()
        self.status = self.response.status

    def next(self, deadline: float = 15.0) -> Event | None:
        """The next event, or None when the stream ended. Comments are skipped."""
        ends = time.monotonic() + deadline
        kind, event_id = "message", None
        data: list[str] = []
        while time.monotonic() < ends:
            raw = self.response.readline()
            if not raw:
                return None
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line:
                if data:
                    return Event(kind, json.loads("\n".join(data)), event_id)
                kind, data, event_id = "message", [], None
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "event":
                kind = value
            elif name == "id":
                event_id = value
        raise AssertionError(f"no event within {deadline}s")

    def until(self, kind: str, deadline: float = 15.0) -> Event:
        ends = time.monotonic() + deadline
        while True:
            event = self.next(max(0.1, ends - time.monotonic()))
            assert event is not None, f"the stream ended before a {kind} event"
            if event.type == kind:
                return event

    def close(self) -> None:
        self._conn.close()
