"""The HTTP routes of the API, read from the protos' ``google.api.http`` annotations.

Each RPC's ``HttpRule`` (and its ``additional_bindings``) names an HTTP method, a path
template and where the request's fields come from: the template's variables, the JSON
body (``body: "*"`` for the whole message, or one field's name) and, for every field bound
by neither, the query string. This module parses the templates (the grammar of
google/api/http.proto) and matches request paths against them; ``transcode`` builds the
request message from a match.

    Template = "/" Segments [ Verb ] ;
    Segments = Segment { "/" Segment } ;
    Segment  = "*" | "**" | LITERAL | Variable ;
    Variable = "{" FieldPath [ "=" Segments ] "}" ;
    Verb     = ":" LITERAL ;
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from google.api import annotations_pb2, http_pb2
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

HTTP_EXTENSION = annotations_pb2.http.full_name  # google.api.http
_LITERAL = re.compile(r"^[A-Za-z0-9._~!$&'()+,;=@-]+$")
_FIELD_PATH = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")


class TemplateError(ValueError):
    """A path template that does not follow the grammar: a defect in the protos."""


@dataclass(frozen=True, slots=True)
class _Segment:
    literal: str | None  # None: a wildcard, "*" (one segment) or "**" (the rest)
    many: bool = False


@dataclass(frozen=True, slots=True)
class _Variable:
    field_path: str
    first: int  # index of its first segment
    count: int  # how many segments; -1: to the end ("**")


@dataclass(frozen=True, slots=True)
class PathTemplate:
    """One compiled template: ``match`` gives the variables' values, or None."""

    text: str
    segments: tuple[_Segment, ...]
    variables: tuple[_Variable, ...]
    verb: str | None

    @property
    def literals(self) -> int:
        """How specific the template is: more literal segments win over wildcards."""
        return sum(1 for s in self.segments if s.literal is not None) + (self.verb is not None)

    def match(self, raw_path: str) -> dict[str, str] | None:
        """The variables of ``raw_path`` (percent-encoded, as sent), decoded; None if it
        does not match. Raises ``UnicodeDecodeError`` for a segment that is not UTF-8."""
        path = raw_path
        if self.verb is not None:
            suffix = ":" + self.verb
            if not path.endswith(suffix):
                return None
            path = path[: -len(suffix)]
        if not path.startswith("/"):
            return None
        parts = path[1:].split("/")
        if not self._shape_fits(parts):
            return None
        values: dict[str, str] = {}
        for variable in self.variables:
            if variable.count < 0:
                taken = parts[variable.first :]
                # A multi-segment value keeps '/' (and an encoded one) as sent.
                values[variable.field_path] = "/".join(_decode(p, keep_slash=True) for p in taken)
            else:
                taken = parts[variable.first : variable.first + variable.count]
                values[variable.field_path] = "/".join(_decode(p) for p in taken)
        return values

    def _shape_fits(self, parts: Sequence[str]) -> bool:
        segments = self.segments
        many = bool(segments) and segments[-1].many
        if len(parts) < len(segments) if many else len(parts) != len(segments):
            return False
        for index, part in enumerate(parts):
            if not part:
                return False  # an empty segment ("//", a trailing '/') matches nothing
            segment = segments[min(index, len(segments) - 1)]
            if segment.literal is not None and part != segment.literal:
                return False
        return True


def _decode(segment: str, *, keep_slash: bool = False) -> str:
    if keep_slash:
        segment = segment.replace("%2F", "%252F").replace("%2f", "%252f")
    return unquote(segment, errors="strict")


def parse_template(text: str) -> PathTemplate:
    """Compile one path template, or raise ``TemplateError``."""
    if not text.startswith("/"):
        raise TemplateError(f"{text!r}: a path template starts with '/'")
    body, verb = _split_verb(text[1:])
    segments: list[_Segment] = []
    variables: list[_Variable] = []
    for token in _tokens(body, text):
        if token.startswith("{"):
            inner = token[1:-1]
            field_path, _, pattern = inner.partition("=")
            if not _FIELD_PATH.match(field_path):
                raise TemplateError(f"{text!r}: {field_path!r} is not a field path")
            first = len(segments)
            for part in (pattern or "*").split("/"):
                segments.append(_segment(part, text))
            many = any(s.many for s in segments[first:])
            variables.append(_Variable(field_path, first, -1 if many else len(segments) - first))
        else:
            segments.append(_segment(token, text))
    if any(s.many for s in segments[:-1]):
        raise TemplateError(f"{text!r}: '**' may only be the last segment")
    fields = [v.field_path for v in variables]
    if len(set(fields)) != len(fields):
        raise TemplateError(f"{text!r}: a field is bound twice")
    return PathTemplate(text, tuple(segments), tuple(variables), verb)


def _split_verb(body: str) -> tuple[str, str | None]:
    last = body.rsplit("/", 1)[-1]
    if ":" in last and not last.endswith("}"):
        head, _, verb = body.rpartition(":")
        if "}" not in verb and _LITERAL.match(verb):
            return head, verb
    return body, None


def _tokens(body: str, text: str) -> Iterator[str]:
    """Segments of ``body``, a variable (with its own '/') being one token."""
    i = 0
    while i < len(body):
        if body[i] == "{":
            end = body.find("}", i)
            if end < 0:
                raise TemplateError(f"{text!r}: an unclosed '{{'")
            yield body[i : end + 1]
            i = end + 1
        else:
            end = body.find("/", i)
            end = len(body) if end < 0 else end
            yield body[i:end]
            i = end
        if i < len(body):
            if body[i] != "/":
                raise TemplateError(f"{text!r}: a variable must be a whole segment")
            i += 1
            if i == len(body):
                raise TemplateError(f"{text!r}: a template does not end with '/'")


def _segment(part: str, text: str) -> _Segment:
    if part == "*":
        return _Segment(None)
    if part == "**":
        return _Segment(None, many=True)
    if not _LITERAL.match(part):
        raise TemplateError(f"{text!r}: {part!r} is not a literal segment")
    return _Segment(part)


@dataclass(frozen=True, slots=True)
class Route:
    """One HTTP binding of one RPC."""

    method: MethodDescriptor
    http_method: str  # GET, POST, ...
    template: PathTemplate
    body: str  # "" (no body), "*" (the whole request) or a top-level field's name

    @property
    def rpc(self) -> str:
        """The RPC's full name as gRPC routes it: ``/statewright.v1.WorkflowService/X``."""
        return f"/{self.method.containing_service.full_name}/{self.method.name}"

    @property
    def streaming(self) -> bool:
        return bool(self.method.server_streaming)


def _bindings(method: MethodDescriptor) -> Iterator[tuple[str, str, str]]:
    """(HTTP method, path template, body) of each binding of ``method``."""
    # ListFields: the extension's stubs type it as a plain field, which Extensions[] refuses.
    found = [v for f, v in method.GetOptions().ListFields() if f.full_name == HTTP_EXTENSION]
    if not found:
        return
    rule: http_pb2.HttpRule = found[0]
    for one in (rule, *rule.additional_bindings):
        kind = one.WhichOneof("pattern")
        if kind is None:
            raise TemplateError(f"{method.full_name}: an HTTP binding without a pattern")
        if kind == "custom":
            yield one.custom.kind.upper(), one.custom.path, one.body
        else:
            yield kind.upper(), getattr(one, kind), one.body


def routes(services: Iterable[ServiceDescriptor]) -> list[Route]:
    """Every binding of every RPC of ``services``; an RPC without one raises: every RPC is
    on HTTP."""
    found: list[Route] = []
    for service in services:
        for method in service.methods:
            bindings = list(_bindings(method))
            if not bindings:
                raise TemplateError(f"{method.full_name} has no google.api.http annotation")
            for http_method, path, body in bindings:
                template = parse_template(path)
                request = method.input_type
                if body not in ("", "*") and body not in request.fields_by_name:
                    raise TemplateError(f"{method.full_name}: body {body!r} is not a field")
                for variable in template.variables:
                    _check_path_field(method, variable.field_path)
                found.append(Route(method, http_method, template, body))
    return found


def _check_path_field(method: MethodDescriptor, field_path: str) -> None:
    message = method.input_type
    *outer, last = field_path.split(".")
    for name in outer:
        field = message.fields_by_name.get(name)
        if field is None or field.message_type is None:
            raise TemplateError(f"{method.full_name}: {field_path!r} is not a field path")
        message = field.message_type
    field = message.fields_by_name.get(last)
    if field is None or field.type != field.TYPE_STRING or field.is_repeated:
        # Path variables are resource names: strings, read back as they were sent.
        raise TemplateError(f"{method.full_name}: {field_path!r} is not a singular string field")


class RouteTable:
    """The routes, most specific first, matched by HTTP method and path."""

    def __init__(self, found: Iterable[Route]) -> None:
        self._routes = sorted(found, key=lambda r: -r.template.literals)

    def __iter__(self) -> Iterator[Route]:
        return iter(self._routes)

    def match(self, http_method: str, raw_path: str) -> tuple[Route, dict[str, str]] | None:
        """The route for the call and its path variables; None when no template matches
        the path. ``LookupError`` when one matches the path but not the method."""
        allowed: list[str] = []
        for route in self._routes:
            values = route.template.match(raw_path)
            if values is None:
                continue
            if route.http_method == http_method or (
                # HEAD: a read's headers without its body (aiohttp sends none).
                http_method == "HEAD" and route.http_method == "GET" and not route.streaming
            ):
                return route, values
            allowed.append(route.http_method)
        if allowed:
            raise LookupError(sorted(set(allowed)))
        return None
