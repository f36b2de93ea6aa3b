"""statewright: the command-line client, printing JSON.

    statewright start mail-approval --input '{"topic": "launch"}'
    statewright resume workflows/ID --event approve
    statewright history workflows/ID --format text    # every step so far, one per line
    statewright watch workflows/ID                    # one JSON object per line, until terminal

Every command prints one JSON document on stdout (watch prints one per line; history and
watch print readable lines with --format text). A failed call prints {"error": {...}}
with the code, ErrorInfo reason and metadata on stderr and exits with status 1; a usage
error exits with status 2.

The connection comes from --address, --tls, --tls-ca, --tls-cert, --tls-key and --token,
or from the variables the client library reads: STATEWRIGHT_ADDRESS (or STATEWRIGHT_TARGET),
STATEWRIGHT_TLS_CA, STATEWRIGHT_TLS_CERT, STATEWRIGHT_TLS_KEY and STATEWRIGHT_TOKEN.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from google.protobuf.message import Message

from statewright import _render, _security
from statewright.client import Client
from statewright.errors import StatewrightError
from statewright.models import WatchEvent, WorkflowStatus
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
        out.write(json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n")
    else:
        out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    out.flush()


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
    # One line per revision: a consumer can act on each as it arrives.
    for event in client.watch(args.name, after_revision=args.after_revision):
        _emit_event(out, event, args.format)


def _emit_event(out: TextIO, event: WatchEvent, form: str) -> None:
    if form == "text":
        out.write(_render.step_line(event) + "\n")
        out.flush()
    else:
        _emit(out, event.to_dict(), compact=True)


def _history(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    steps = _history_events(client, args.name)
    if args.format == "text":
        for event in steps:
            _emit_event(out, event, "text")
        return
    _emit(out, [_render.history_step(e) for e in steps], compact=args.compact)


def _history_events(client: Client, name: str) -> Iterator[WatchEvent]:
    """Every saved step, read through WatchWorkflow from revision 0.

    The watch replays history and then follows live steps: it ends by itself after a
    terminal revision; for a live instance, history is whatever was saved up to the
    revision read just before the watch opened.
    """
    latest = client.get(name).revision
    watch = client.watch(name, after_revision=0)
    try:
        for event in watch:
            yield event
            if event.revision >= latest:
                return
    finally:
        watch.close()


def _diagnostics(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    message: Message = client.workflow_diagnostics(args.name) if args.name else client.diagnostics()
    _emit(out, _render.message_dict(message), compact=args.compact)


def _definitions(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.name:
        _emit(out, client.definition(args.name, args.version).to_dict(), compact=args.compact)
        return
    items: list[JSONValue] = [d.to_dict(source=False) for d in client.definitions()]
    _emit(out, items, compact=args.compact)


def _status(text: str) -> WorkflowStatus:
    try:
        return WorkflowStatus.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    # The connection options are accepted before or after the command name
    # (`statewright --target X get ID` and `statewright get ID --target X`): subcommands
    # take them with SUPPRESS defaults so they only override what was actually given.
    def connection_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
        def default(value: object) -> object:
            return value if defaults else argparse.SUPPRESS

        # Unset connection options stay None: the client reads the same variables as the
        # library does, so the command line and a program connect alike.
        parser.add_argument(
            "--address",
            "--target",
            dest="target",
            metavar="HOST:PORT",
            default=default(None),
            help=f"server host:port (default: ${_security.ADDRESS_ENV}, else "
            f"${_security.TARGET_ENV}, else {_security.DEFAULT_ADDRESS})",
        )
        parser.add_argument(
            "--tls",
            action=argparse.BooleanOptionalAction,
            default=default(None),
            help="connect over TLS, verifying the server with the system's roots unless "
            "--tls-ca; --no-tls: plaintext whatever the environment says (default: TLS when "
            "a --tls-* option or STATEWRIGHT_TLS_* variable is set)",
        )
        parser.add_argument(
            "--tls-ca",
            metavar="FILE",
            default=default(None),
            help=f"PEM file of the CA that signed the server's certificate "
            f"(default: ${_security.TLS_CA_ENV}; turns TLS on)",
        )
        parser.add_argument(
            "--tls-cert",
            metavar="FILE",
            default=default(None),
            help=f"PEM client certificate for mTLS, with --tls-key "
            f"(default: ${_security.TLS_CERT_ENV})",
        )
        parser.add_argument(
            "--tls-key",
            metavar="FILE",
            default=default(None),
            help=f"PEM private key of --tls-cert (default: ${_security.TLS_KEY_ENV})",
        )
        parser.add_argument(
            "--token",
            metavar="TOKEN",
            default=default(None),
            help=f"bearer token (an API key or a JWT) sent with every call (default: "
            f"${_security.TOKEN_ENV}, the safer way: a command line is visible to others)",
        )
        parser.add_argument(
            "--insecure",
            action="store_true",
            default=default(False),
            help="allow the token over plaintext to a host other than this one "
            "(refused otherwise); it does not turn off certificate checks",
        )
        parser.add_argument(
            "--timeout",
            metavar="SECONDS",
            type=float,
            default=default(None),
            help="deadline of each unary call in seconds (default: 10 for reads, 30 for "
            "start, resume, signal and cancel; watch has none)",
        )
        parser.add_argument(
            "--compact",
            action="store_true",
            default=default(False),
            help="print each JSON document on one line (watch always does)",
        )

    parser = argparse.ArgumentParser(
        prog="statewright",
        description="Command-line client for the Statewright service. Every command prints "
        "JSON; 'statewright COMMAND --help' shows a command's options.",
    )
    connection_options(parser, defaults=True)
    common = argparse.ArgumentParser(add_help=False)
    connection_options(common, defaults=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help, parents=[common])
        sub.set_defaults(handler=handler)
        return sub

    revision_help = (
        "act only if the instance is at this revision; otherwise fail with "
        "REVISION_MISMATCH (default: any revision)"
    )
    request_help = (
        "idempotency key: a retry with the same key gets the first answer (default: generated)"
    )

    p = command("start", _start, "start an instance of a definition")
    p.add_argument("definition", help="definition name, e.g. mail-approval")
    p.add_argument(
        "--input", type=_json_object, metavar="JSON", help="initial context as a JSON object"
    )
    p.add_argument("--id", help="workflow id (default: generated by the server)")
    p.add_argument("--version", type=int, help="definition version (default: latest)")
    p.add_argument("--request-id", metavar="KEY", help=request_help)
    p.add_argument(
        "--if-exists",
        choices=["fail", "return_existing"],
        help="when --id is taken: fail with ALREADY_EXISTS, or return the existing instance "
        "with created false (default: fail)",
    )

    p = command("resume", _resume, "fire an event on a WAITING instance")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("--event", help="event to fire (default: the wait state's first event)")
    p.add_argument(
        "--input",
        type=_json_object,
        metavar="JSON",
        help="context values to merge before the event fires, as a JSON object",
    )
    p.add_argument("--expected-revision", type=int, metavar="N", help=revision_help)
    p.add_argument("--request-id", metavar="KEY", help=request_help)

    p = command("signal", _signal, "deliver an event to a RUNNING instance")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("event", help="event to deliver, e.g. score")
    p.add_argument(
        "--payload",
        type=_json_object,
        metavar="JSON",
        help="event payload as a JSON object (guards and actions read it as event.payload)",
    )
    p.add_argument("--request-id", metavar="KEY", help=request_help)

    p = command("get", _get, "read one instance")
    p.add_argument("name", help="workflows/ID or ID")

    p = command("list", _list, "list instances (all pages)")
    p.add_argument("--definition", metavar="NAME", help="only instances of this definition")
    statuses = ", ".join(s.value for s in WorkflowStatus if s is not WorkflowStatus.UNSPECIFIED)
    p.add_argument(
        "--status",
        type=_status,
        help=f"only instances with this status: {statuses} (any case; default: any)",
    )
    p.add_argument(
        "--page-size", type=int, metavar="N", help="instances per request (default: server's, 50)"
    )
    p.add_argument("--limit", type=int, metavar="N", help="stop after this many instances")

    p = command("cancel", _cancel, "cancel an instance that has not ended")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("--reason", help="why, recorded with the cancellation")
    p.add_argument("--expected-revision", type=int, metavar="N", help=revision_help)
    p.add_argument("--request-id", metavar="KEY", help=request_help)

    format_help = "json: one JSON object per line; text: one readable line each (default: json)"
    p = command("watch", _watch, "follow an instance: every revision, live, until a terminal one")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument(
        "--after-revision",
        type=int,
        metavar="N",
        help="replay every revision after N first (default: start with the instance now)",
    )
    p.add_argument("--format", choices=["json", "text"], default="json", help=format_help)

    p = command("history", _history, "every saved step of an instance, with transitions and event")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument(
        "--format",
        choices=["json", "text"],
        default="json",
        help="json: one JSON array of steps; text: one readable line per step (default: json)",
    )

    p = command("diagnostics", _diagnostics, "runtime diagnostics, or one instance's")
    p.add_argument(
        "name",
        nargs="?",
        help="workflows/ID or ID for one instance's diagnostics (default: the server's)",
    )

    p = command("definitions", _definitions, "list definitions, or show one with its source")
    p.add_argument(
        "name",
        nargs="?",
        help="definition name or definitions/NAME/versions/N to show (default: list them all)",
    )
    p.add_argument(
        "--version", type=int, help="version of the definition NAME to show (default: latest)"
    )
    return parser


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        with Client(
            args.target,
            tls=args.tls,
            tls_ca=args.tls_ca,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            token=args.token,
            insecure=args.insecure,
            timeout=args.timeout,
        ) as client:
            handler(client, args, out)
    except StatewrightError as exc:
        _emit(err, {"error": exc.to_dict()}, compact=args.compact)
        return 1
    except _security.InsecureTokenError as exc:
        err.write(
            f"statewright: error: refusing to send a token in plaintext to {exc.address}: "
            f"turn TLS on (--tls, --tls-ca or ${_security.TLS_CA_ENV}), or give --insecure "
            "to send it unencrypted anyway\n"
        )
        return 2
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
