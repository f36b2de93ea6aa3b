"""``statewright``: the command-line client, printing JSON.

    statewright start mail-approval --input '{"topic": "launch"}'
    statewright resume workflows/ID --event approve
    statewright watch workflows/ID          # one JSON object per line, until terminal

Every command prints one JSON document on stdout (``watch`` prints one per line). A failed
call prints ``{"error": {...}}`` with the code, ErrorInfo reason and metadata on stderr and
exits with status 1; a usage error exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from google.protobuf import json_format
from google.protobuf.message import Message

from statewright import _common
from statewright.client import Client
from statewright.errors import StatewrightError
from statewright.models import WorkflowStatus
from statewright.values import JSONObject, JSONValue

__all__ = ["main"]

Handler = Callable[[Client, argparse.Namespace, TextIO], None]


def _json_object(text: str) -> JSONObject:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, e.g. \'{"topic": "x"}\'')
    return value


def _emit(out: TextIO, value: JSONValue, *, compact: bool) -> None:
    if compact:
        out.write(json.dumps(value, separators=(",", ":"), sort_keys=False) + "\n")
    else:
        out.write(json.dumps(value, indent=2) + "\n")
    out.flush()


def _message_dict(message: Message) -> JSONObject:
    return json_format.MessageToDict(
        message,
        preserving_proto_field_name=True,
        always_print_fields_with_no_presence=True,
    )


def _start(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    result = client.start(
        args.definition,
        args.input,
        workflow_id=args.id,
        version=args.version,
        request_id=args.request_id,
        if_exists=args.if_exists,
    )
    _emit(out, result.to_dict(), compact=args.compact)


def _resume(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    result = client.resume(
        args.name,
        args.event,
        args.input,
        expected_revision=args.expected_revision,
        request_id=args.request_id,
    )
    _emit(out, result.to_dict(), compact=args.compact)


def _signal(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    result = client.signal(args.name, args.event, args.payload, request_id=args.request_id)
    _emit(out, result.to_dict(), compact=args.compact)


def _get(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    _emit(out, client.get(args.name).to_dict(), compact=args.compact)


def _list(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    items: list[JSONValue] = []
    for workflow in client.list(
        definition=args.definition, status=args.status, page_size=args.page_size
    ):
        if args.limit is not None and len(items) >= args.limit:
            break
        items.append(workflow.to_dict())
    _emit(out, items, compact=args.compact)


def _cancel(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    workflow = client.cancel(
        args.name,
        args.reason,
        expected_revision=args.expected_revision,
        request_id=args.request_id,
    )
    _emit(out, workflow.to_dict(), compact=args.compact)


def _watch(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    # JSON Lines: a consumer can act on each revision as it arrives.
    for event in client.watch(args.name, after_revision=args.after_revision):
        _emit(out, event.to_dict(), compact=True)


def _diagnostics(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    message: Message = client.workflow_diagnostics(args.name) if args.name else client.diagnostics()
    _emit(out, _message_dict(message), compact=args.compact)


def _definitions(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.name:
        _emit(out, client.definition(args.name, args.version).to_dict(), compact=args.compact)
        return
    items: list[JSONValue] = [d.to_dict(source=False) for d in client.definitions()]
    _emit(out, items, compact=args.compact)


def _status(text: str) -> WorkflowStatus:
    try:
        return WorkflowStatus(text.upper())
    except ValueError:
        choices = ", ".join(s.value for s in WorkflowStatus if s is not WorkflowStatus.UNSPECIFIED)
        raise argparse.ArgumentTypeError(f"status must be one of {choices}") from None


def build_parser() -> argparse.ArgumentParser:
    # The connection options are accepted before or after the command name
    # (`statewright --target X get ID` and `statewright get ID --target X`): subcommands
    # take them with SUPPRESS defaults so they only override what was actually given.
    def connection_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
        def default(value: object) -> object:
            return value if defaults else argparse.SUPPRESS

        parser.add_argument(
            "--target",
            default=default(os.environ.get(_common.TARGET_ENV) or _common.DEFAULT_TARGET),
            help=f"server host:port (default: ${_common.TARGET_ENV} or {_common.DEFAULT_TARGET})",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=default(None),
            help="deadline of each call in seconds (default: per method)",
        )
        parser.add_argument(
            "--compact", action="store_true", default=default(False), help="one-line JSON"
        )

    parser = argparse.ArgumentParser(
        prog="statewright", description="Command-line client for the Statewright service."
    )
    connection_options(parser, defaults=True)
    common = argparse.ArgumentParser(add_help=False)
    connection_options(common, defaults=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help, parents=[common])
        sub.set_defaults(handler=handler)
        return sub

    p = command("start", _start, "start an instance of a definition")
    p.add_argument("definition", help="definition name, e.g. mail-approval")
    p.add_argument("--input", type=_json_object, help="initial context as a JSON object")
    p.add_argument("--id", help="workflow id (default: generated by the server)")
    p.add_argument("--version", type=int, help="definition version (default: latest)")
    p.add_argument("--request-id", help="idempotency key (default: generated)")
    p.add_argument("--if-exists", choices=["fail", "return_existing"])

    p = command("resume", _resume, "fire an event on a WAITING instance")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("--event", help="event (default: the wait state's first event)")
    p.add_argument("--input", type=_json_object, help="context values to merge, as JSON")
    p.add_argument("--expected-revision", type=int)
    p.add_argument("--request-id")

    p = command("signal", _signal, "deliver an event to a RUNNING instance")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("event")
    p.add_argument("--payload", type=_json_object, help="event payload as a JSON object")
    p.add_argument("--request-id")

    p = command("get", _get, "read one instance")
    p.add_argument("name", help="workflows/ID or ID")

    p = command("list", _list, "list instances (all pages)")
    p.add_argument("--definition")
    p.add_argument("--status", type=_status)
    p.add_argument("--page-size", type=int, help="instances per request (default: server's)")
    p.add_argument("--limit", type=int, help="stop after this many instances")

    p = command("cancel", _cancel, "cancel an instance that has not ended")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("--reason")
    p.add_argument("--expected-revision", type=int)
    p.add_argument("--request-id")

    p = command("watch", _watch, "stream every revision as JSON lines until terminal")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("--after-revision", type=int, help="replay every revision after this one")

    p = command("diagnostics", _diagnostics, "runtime diagnostics, or one instance's")
    p.add_argument("name", nargs="?", help="workflows/ID for one instance's diagnostics")

    p = command("definitions", _definitions, "list definitions, or show one with its source")
    p.add_argument("name", nargs="?", help="definition name or definitions/NAME/versions/N")
    p.add_argument("--version", type=int)
    return parser


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        with Client(args.target, timeout=args.timeout) as client:
            handler(client, args, out)
    except StatewrightError as exc:
        _emit(err, {"error": exc.to_dict()}, compact=args.compact)
        return 1
    except (ValueError, TypeError) as exc:
        # Arguments that parse but that the client refuses (e.g. a version with a
        # resource name): a usage error, reported like argparse's own.
        err.write(f"statewright: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `statewright watch ... | head -1`: the reader left; that is not a failure.
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
