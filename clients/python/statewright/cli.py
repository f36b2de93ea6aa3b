"""statewright: the command-line client.

    statewright start mail-approval --input '{"topic": "launch"}'
    statewright start tally --delay 30s               # the first step runs in 30 seconds
    statewright start tally --recursion-limit 5       # at most 5 transitions a step
    statewright resume workflows/ID --event approve
    statewright signal-with-start tally customer-42 tick --payload '{"id": "a"}'
    statewright get workflows/ID                      # a readable table; -o json for JSON
    statewright list --status waiting                 # one instance a row
    statewright list --order-by "create_time desc" --id-prefix order-  # newest first
    statewright list --filter 'status = WAITING AND search.customer = "c-42"'
    statewright count --filter 'definition = mail-approval'
    statewright list --order-by "update_time desc, search.amount"  # several keys
    statewright tasks --queue payments --filter 'status = BACKOFF AND attempt >= 3'
    statewright history workflows/ID                  # every step so far, one a row
    statewright watch workflows/ID                    # one JSON object per line, until terminal
    statewright schedule create nightly report --cron "0 2 * * *" --time-zone Europe/Berlin
    statewright schedule get nightly                  # next fires, recent actions, counts
    statewright queue set payments --rate 25 --burst 5  # flow control; queue get / list
    statewright retry workflows/ID --reason "bank is back" --dry-run  # a FAILED instance
    statewright reset workflows/ID --to-revision 2 --reason "approved by mistake"
    statewright migrate workflows/ID --to-version 2 --map review=approval --dry-run
    statewright pause workflows/ID --reason "incident 7"   # unpause lets it go on
    statewright batch start --op retry --filter 'status = FAILED' --reason "bank is back" --dry-run
    statewright batch get BATCH-ID --wait -o text     # a line per progress, until it ends
    statewright batch list --state running            # batch cancel BATCH-ID --reason ... stops one

``get``, ``list`` and ``history`` print a table unless ``-o json`` (or ``--json``, or
``--compact``: JSON on one line); ``history`` and ``watch`` print one readable line per
step with ``-o text``. The other commands print one JSON document. A failed call prints
its code, ErrorInfo reason and message on stderr (as ``{"error": {...}}`` where the output
is JSON) and exits with status 1; a server that cannot be reached is one line saying so,
status 1; a usage error exits with status 2.

The connection comes from --address, --tls, --tls-ca, --tls-cert, --tls-key, --token,
--insecure and --timeout, before or after the command, or from the variables the client
library reads: STATEWRIGHT_ADDRESS (or STATEWRIGHT_TARGET), STATEWRIGHT_TLS_CA,
STATEWRIGHT_TLS_CERT, STATEWRIGHT_TLS_KEY and STATEWRIGHT_TOKEN.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from typing import TextIO, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from statewright import _render, _security
from statewright.client import Client
from statewright.errors import StatewrightError
from statewright.models import (
    BATCH_OPERATIONS,
    BatchAction,
    BatchDelete,
    BatchMigrate,
    BatchOperation,
    BatchReset,
    BatchSignal,
    BatchState,
    MigrationResult,
    PauseResult,
    QueueConfig,
    RepairResult,
    StepResult,
    Task,
    WatchEvent,
    Workflow,
    WorkflowStatus,
    batch_action,
)
from statewright.values import JSONObject, JSONValue

__all__ = ["main"]

TABLE, JSON, TEXT = "table", "json", "text"


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: what it runs, the output forms it has, and its default form."""

    run: Callable[[Client, argparse.Namespace, TextIO, str], None]
    forms: tuple[str, ...] = (JSON,)
    default: str = JSON


def _json_object(text: str) -> JSONObject:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, e.g. \'{"topic": "x"}\'')
    return value


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _duration(text: str) -> float:
    """A duration as the definition language writes one (``30s``, ``1h30m``, ``1.5s``),
    in seconds."""
    parts = list(_DURATION_PART.finditer(text))
    if not text or not parts or "".join(m.group(0) for m in parts) != text:
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r} (write it as 30s, 5m, 1h30m, 2d or 500ms)"
        )
    return sum(float(m.group(1)) * _UNIT_SECONDS[m.group(2)] for m in parts)


def _emit(out: TextIO, value: JSONValue, *, compact: bool) -> None:
    if compact:
        out.write(json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n")
    else:
        out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    out.flush()


def _print(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


def _step(out: TextIO, result: StepResult, args: argparse.Namespace, form: str) -> None:
    if form == TABLE:
        _print(out, _render.workflow_table(result.workflow))
        return
    _emit(out, result.to_dict(), compact=args.compact)


def _start(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    result = client.start(
        args.definition,
        args.input,
        workflow_id=args.id,
        version=args.version,
        request_id=args.request_id,
        if_exists=args.if_exists,
        start_delay=args.delay,
        recursion_limit=args.recursion_limit,
    )
    _step(out, result, args, form)


def _execute(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    workflow = client.execute(
        args.definition,
        args.input,
        until=args.until,
        timeout=args.wait,
        workflow_id=args.id,
        version=args.version,
        request_id=args.request_id,
        recursion_limit=args.recursion_limit,
    )
    if form == TABLE:
        _print(out, _render.workflow_table(workflow))
    else:
        _emit(out, workflow.to_dict(), compact=args.compact)


def _resume(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    result = client.resume(
        args.name,
        args.event,
        args.input,
        expected_revision=args.expected_revision,
        request_id=args.request_id,
    )
    _step(out, result, args, form)


def _signal(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    result = client.signal(args.name, args.event, args.payload, request_id=args.request_id)
    if form == TABLE:
        reason = result.reason.value if result.reason is not None else "no reason given"
        accepted = "accepted" if result.accepted else f"not accepted: {reason}"
        _print(out, f"signal {args.event}: {accepted}")
        _print(out, _render.workflow_table(result.workflow))
        return
    _emit(out, result.to_dict(), compact=args.compact)


def _signal_with_start(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    result = client.signal_with_start(
        args.definition,
        args.id,
        args.event,
        args.payload,
        input=args.input,
        version=args.version,
        request_id=args.request_id,
        if_finished=args.if_finished,
        start_now=args.start_now,
        recursion_limit=args.recursion_limit,
    )
    if form == TABLE:
        reason = result.reason.value if result.reason is not None else "no reason given"
        accepted = "accepted" if result.accepted else f"not accepted: {reason}"
        started = "started it" if result.started else "it existed"
        _print(out, f"signal {args.event}: {accepted} ({started})")
        _print(out, _render.workflow_table(result.workflow))
        return
    _emit(out, result.to_dict(), compact=args.compact)


def _get(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    workflow = client.get(args.name)
    if form == TABLE:
        _print(out, _render.workflow_table(workflow))
    else:
        _emit(out, workflow.to_dict(), compact=args.compact)


# The columns a ListWorkflows order key names besides search.<field> (name: the id).
ORDER_COLUMNS = ("create_time", "update_time", "definition", "state", "status", "name")
_ORDER_KEY = re.compile(r"^ *(search\.[a-z_][a-z0-9_]{0,62}|[a-z_]+) *( desc)? *\Z")


def _order(text: str) -> str:
    """An --order-by value: keys separated by commas, each a column of ORDER_COLUMNS or a
    search field, then optionally ' desc' (the server checks the search fields)."""
    for part in text.split(","):
        key = _ORDER_KEY.match(part)
        if key is None or not (key.group(1).startswith("search.") or key.group(1) in ORDER_COLUMNS):
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r} is not an order key: one of {', '.join(ORDER_COLUMNS)} or "
                "search.<field>, then optionally ' desc' ('update_time desc, search.amount')"
            )
    return text


_Listed = TypeVar("_Listed", Workflow, Task, BatchOperation)


def _list(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    found = client.list(
        definition=args.definition,
        status=args.status,
        page_size=args.page_size,
        order_by=args.order_by,
        id_prefix=args.id_prefix,
        filter=args.filter,
    )
    _listing(list(itertools.islice(found, args.limit)), _render.workflows_table, args, out, form)


def _tasks(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    found = client.list_tasks(
        queue=args.queue,
        workflow=args.workflow,
        status=args.status,
        page_size=args.page_size,
        filter=args.filter,
    )
    _listing(list(itertools.islice(found, args.limit)), _render.tasks_table, args, out, form)


def _listing(
    found: Sequence[_Listed],
    table: Callable[[list[_Listed]], str],
    args: argparse.Namespace,
    out: TextIO,
    form: str,
) -> None:
    """What a listing found (up to --limit: the pages after it are never fetched), as a
    table or JSON."""
    if form == TABLE:
        _print(out, table(list(found)))
    else:
        items: list[JSONValue] = [item.to_dict() for item in found]
        _emit(out, items, compact=args.compact)


def _count(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    counted = client.count(args.filter)
    if form == TABLE:
        by_status = [(str(s), n) for s, n in counted.by_status.items()]
        _print(out, _render.count_table(counted.total, by_status))
    else:
        _emit(out, counted.to_dict(), compact=args.compact)


def _cancel(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    workflow = client.cancel(
        args.name,
        args.reason,
        expected_revision=args.expected_revision,
        request_id=args.request_id,
    )
    if form == TABLE:
        _print(out, _render.workflow_table(workflow))
    else:
        _emit(out, workflow.to_dict(), compact=args.compact)


def _retry(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    repaired = client.retry(
        args.name,
        args.reason,
        expected_revision=args.expected_revision,
        request_id=args.request_id,
        dry_run=args.dry_run,
    )
    _emit_repair(out, repaired, form, args)


def _reset(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    repaired = client.reset(
        args.name,
        args.to_revision,
        args.reason,
        expected_revision=args.expected_revision,
        request_id=args.request_id,
        dry_run=args.dry_run,
    )
    _emit_repair(out, repaired, form, args)


def _pause(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    step = client.pause if args.command == "pause" else client.unpause
    done = step(
        args.name,
        args.reason,
        expected_revision=args.expected_revision,
        request_id=args.request_id,
        dry_run=args.dry_run,
    )
    _emit_repair(out, done, form, args)


def _emit_repair(
    out: TextIO, repaired: RepairResult | PauseResult, form: str, args: argparse.Namespace
) -> None:
    if form != TABLE:
        _emit(out, repaired.to_dict(), compact=args.compact)
        return
    if repaired.dry_run:
        _print(out, "dry run: nothing was saved; the instance would be")
    _print(out, _render.workflow_table(repaired.workflow))
    changes = repaired.context_changes if isinstance(repaired, RepairResult) else ()
    for change in changes:
        before = json.dumps(change.before) if change.had_before else "(none)"
        after = json.dumps(change.after) if change.has_after else "(none)"
        _print(out, f"context.{change.field}: {before} -> {after}")


def _pairs(option: str, items: list[str] | None) -> dict[str, str]:
    """``--map old=new`` and ``--set field=expr`` as a map (an expression may hold '=')."""
    pairs: dict[str, str] = {}
    for item in items or ():
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise SystemExit(f"statewright: {option} takes KEY=VALUE; got {item!r}")
        pairs[key] = value
    return pairs


def _migrate(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    migrated = client.migrate(
        args.name,
        args.to_version,
        args.reason,
        state_map=_pairs("--map", args.map),
        set=_pairs("--set", args.set),
        expected_revision=args.expected_revision,
        request_id=args.request_id,
        dry_run=args.dry_run,
    )
    _emit_migration(out, migrated, form, args)


def _emit_migration(
    out: TextIO, migrated: MigrationResult, form: str, args: argparse.Namespace
) -> None:
    if form != TABLE:
        _emit(out, migrated.to_dict(), compact=args.compact)
        return
    plan = migrated.plan
    if migrated.dry_run:
        _print(out, "dry run: nothing was saved; the migration would do this")
    _print(out, f"version: {plan.from_version} -> {plan.to_version}")
    _print(out, f"state: {plan.state_from} -> {plan.state_to}")
    for label, names in (
        ("defaulted", plan.defaulted_fields),
        ("set", plan.set_fields),
        ("removed", plan.removed_fields),
    ):
        if names:
            _print(out, f"{label}: {', '.join(names)}")
    if plan.timers_disarmed:
        _print(out, "timers: the old state's disarmed; the new state's armed from its `after`")
    if plan.task_fate != "none":
        _print(out, f"task on {plan.task_queue}: {plan.task_fate}")
    _emit_repair(
        out, RepairResult(migrated.workflow, migrated.context_changes, migrated.dry_run), form, args
    )


def _watch(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    # One line per revision: a consumer can act on each as it arrives.
    for event in client.watch(args.name, after_revision=args.after_revision):
        _emit_event(out, event, form)


def _emit_event(out: TextIO, event: WatchEvent, form: str) -> None:
    if form == TEXT:
        _print(out, _render.step_line(event))
    else:
        _emit(out, event.to_dict(), compact=True)


def _history(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    steps = _history_events(client, args.name)
    if form == TEXT:
        for event in steps:
            _emit_event(out, event, TEXT)
    elif form == TABLE:
        _print(out, _render.history_table(list(steps)))
    else:
        _emit(out, [_render.history_step(e) for e in steps], compact=args.compact)


def _history_events(client: Client, name: str) -> Iterator[WatchEvent]:
    """Every saved step, read through WatchWorkflow from revision 0.

    The watch replays history and then follows live steps: it ends by itself after a
    terminal revision, so a restarted instance (whose earlier runs each end in one) is
    watched again after it; for a live instance, history is whatever was saved up to the
    revision read just before the watch opened.
    """
    latest = client.get(name).revision
    after = 0
    while after < latest:
        start = after
        watch = client.watch(name, after_revision=after)
        try:
            for event in watch:
                yield event
                after = event.revision
                if after >= latest:
                    return
        finally:
            watch.close()
        if after == start:
            return  # nothing more to read (the instance was removed meanwhile)


def _diagnostics(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    message: Message = client.workflow_diagnostics(args.name) if args.name else client.diagnostics()
    _emit(out, _render.message_dict(message), compact=args.compact)


_LIMITS = ("max_leased", "rate", "burst", "key_max_leased", "key_rate", "key_burst")


def _queue(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    if args.action == "list":
        queues = client.list_queues(key_count=args.keys or 0)
        _emit(out, [q.to_dict() for q in queues], compact=args.compact)
        return
    if not args.queue:
        raise ValueError(f"queue {args.action} needs a queue name")
    if args.action == "get":
        _emit(out, client.get_queue_config(args.queue).to_dict(), compact=args.compact)
        return
    limits = {name: getattr(args, name) for name in _LIMITS if getattr(args, name) is not None}
    if not limits:
        raise ValueError(
            "queue set needs at least one limit (--max-leased, --rate, --burst, "
            "--key-max-leased, --key-rate, --key-burst); all 0 removes them"
        )
    current = client.get_queue_config(args.queue).config
    base = current.to_dict() if current is not None else {}
    values = {name: base.get(name) or 0 for name in _LIMITS} | limits
    stored = client.set_queue_config(QueueConfig(args.queue, **values))
    _emit(out, stored.to_dict() if stored is not None else None, compact=args.compact)


def _definitions(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    if args.name:
        _emit(out, client.definition(args.name, args.version).to_dict(), compact=args.compact)
        return
    items: list[JSONValue] = [d.to_dict(source=False) for d in client.definitions()]
    _emit(out, items, compact=args.compact)


_Parsed = TypeVar("_Parsed")


def _argument(parse: Callable[[str], _Parsed]) -> Callable[[str], _Parsed]:
    """``parse`` as an argparse type: its ValueError is a usage error with its message."""

    def parsed(text: str) -> _Parsed:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parsed


_status = _argument(WorkflowStatus.parse)
_batch_state = _argument(BatchState.parse)


def version() -> str:
    try:
        number = metadata.version("statewright")
    except metadata.PackageNotFoundError:
        number = "unknown"  # run from a source tree that was never installed
    return f"statewright {number} (Python client of the statewright.v1 API)"


CONNECTION = ("--address", "--tls", "--tls-ca", "--tls-cert", "--tls-key", "--token",
              "--insecure", "--timeout")  # fmt: skip
OUTPUT = ("-o", "--json", "--compact")


def _common_options(parser: argparse.ArgumentParser, *, shown: bool) -> None:
    """The connection and output options. The main parser shows them, grouped; each
    command takes them too (`statewright get ID --address X`) without repeating them in its
    help, and with SUPPRESS defaults, so that only what was given overrides the main
    parser's values."""

    def default(value: object) -> object:
        return value if shown else argparse.SUPPRESS

    def text(help: str) -> str:
        return help if shown else argparse.SUPPRESS

    connection = parser.add_argument_group(
        "connection options (before or after the command)" if shown else None
    )
    # Unset connection options stay None: the client reads the same variables as the
    # library does, so the command line and a program connect alike.
    connection.add_argument(
        "--address",
        "--target",
        dest="target",
        metavar="HOST:PORT",
        default=default(None),
        help=text(
            f"server host:port (default: ${_security.ADDRESS_ENV}, else "
            f"${_security.TARGET_ENV}, else {_security.DEFAULT_ADDRESS})"
        ),
    )
    connection.add_argument(
        "--tls",
        action=argparse.BooleanOptionalAction,
        default=default(None),
        help=text(
            "connect over TLS, verifying the server with the system's roots unless "
            "--tls-ca; --no-tls: plaintext whatever the environment says (default: TLS when "
            "a --tls-* option or STATEWRIGHT_TLS_* variable is set)"
        ),
    )
    connection.add_argument(
        "--tls-ca",
        metavar="FILE",
        default=default(None),
        help=text(
            f"PEM file of the CA that signed the server's certificate "
            f"(default: ${_security.TLS_CA_ENV}; turns TLS on)"
        ),
    )
    connection.add_argument(
        "--tls-cert",
        metavar="FILE",
        default=default(None),
        help=text(
            f"PEM client certificate for mTLS, with --tls-key (default: ${_security.TLS_CERT_ENV})"
        ),
    )
    connection.add_argument(
        "--tls-key",
        metavar="FILE",
        default=default(None),
        help=text(f"PEM private key of --tls-cert (default: ${_security.TLS_KEY_ENV})"),
    )
    connection.add_argument(
        "--token",
        metavar="TOKEN",
        default=default(None),
        help=text(
            f"bearer token (an API key or a JWT) sent with every call (default: "
            f"${_security.TOKEN_ENV}, the safer way: a command line is visible to others)"
        ),
    )
    connection.add_argument(
        "--insecure",
        action="store_true",
        default=default(False),
        help=text(
            "allow the token over plaintext to a host other than this one "
            "(refused otherwise); it does not turn off certificate checks"
        ),
    )
    connection.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=default(None),
        help=text(
            "deadline of each unary call in seconds (default: 10 for reads, 30 for "
            "start, resume, signal, signal-with-start and cancel; watch has none)"
        ),
    )
    output = parser.add_argument_group("output options" if shown else None)
    output.add_argument(
        "-o",
        "--output",
        choices=[TABLE, JSON, TEXT],
        default=default(None),
        help=text(
            "table: readable columns (the default of get, list and history); json: JSON "
            "(the default of the others); text: one line per step (history, watch)"
        ),
    )
    output.add_argument(
        "--json",
        dest="output",
        action="store_const",
        const=JSON,
        default=default(None),
        help=text("the same as -o json"),
    )
    output.add_argument(
        "--compact",
        action="store_true",
        default=default(False),
        help=text("print JSON, each document on one line (watch always does)"),
    )


def _start_arguments(p: argparse.ArgumentParser, request_help: str) -> None:
    """What start and execute both take: the definition, its input, the id and version."""
    p.add_argument("definition", help="definition name, e.g. mail-approval")
    p.add_argument(
        "--input", type=_json_object, metavar="JSON", help="initial context as a JSON object"
    )
    p.add_argument("--id", help="workflow id (default: generated by the server)")
    p.add_argument("--version", type=int, help="definition version (default: latest)")
    p.add_argument("--request-id", metavar="KEY", help=request_help)
    _recursion_limit_argument(p)


def _recursion_limit_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--recursion-limit",
        type=int,
        metavar="N",
        help="at most N transitions in any one step of this instance: lowers the "
        "definition's recursion_limit, never raises it (default: the definition's)",
    )


def _repair_options(p: argparse.ArgumentParser, revision_help: str, request_help: str) -> None:
    """What retry, reset and migrate each take besides their own arguments."""
    p.add_argument("--reason", help="why, recorded in history")
    p.add_argument("--dry-run", action="store_true", help="show what would happen, save nothing")
    p.add_argument("--expected-revision", type=int, metavar="N", help=revision_help)
    p.add_argument("--request-id", metavar="KEY", help=request_help)


def _subcommand(
    parent: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    spec: Command,
    help: str,
    *,
    common: argparse.ArgumentParser,
    epilog: str,
) -> argparse.ArgumentParser:
    """A command (or a group's action) that runs ``spec``, its help naming its output forms,
    with the connection and output options of ``common``."""
    forms = ", ".join(f"{f} (default)" if f == spec.default else f for f in spec.forms)
    sub = parent.add_parser(
        name,
        help=help,
        description=f"{help[0].upper()}{help[1:]}. Output: {forms}.",
        epilog=epilog,
        parents=[common],
    )
    sub.set_defaults(command_spec=spec)
    return sub


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="statewright",
        description="Command-line client for the Statewright service. "
        "'statewright COMMAND --help' shows a command's own options; the connection and "
        "output options below go before or after the command.",
    )
    parser.add_argument("--version", action="version", version=version())
    _common_options(parser, shown=True)
    common = argparse.ArgumentParser(add_help=False)
    _common_options(common, shown=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    epilog = (
        f"The connection options ({', '.join(CONNECTION)}) and the output options "
        f"({', '.join(OUTPUT)}) work here too: 'statewright --help' describes them."
    )

    def command(name: str, spec: Command, help: str) -> argparse.ArgumentParser:
        return _subcommand(commands, name, spec, help, common=common, epilog=epilog)

    revision_help = (
        "act only if the instance is at this revision; otherwise fail with "
        "REVISION_MISMATCH (default: any revision)"
    )
    request_help = (
        "idempotency key: a retry with the same key gets the first answer (default: generated)"
    )
    stepped = Command(_start, (JSON, TABLE), JSON)

    p = command("start", stepped, "start an instance of a definition")
    _start_arguments(p, request_help)
    p.add_argument(
        "--if-exists",
        choices=["fail", "return_existing", "restart"],
        help="when --id is taken: fail with ALREADY_EXISTS, return the existing instance "
        "with created false, or restart a finished one as a new run from the entry point "
        "(its stored context under the new input; a live one fails) (default: fail)",
    )
    p.add_argument(
        "--delay",
        type=_duration,
        metavar="DURATION",
        help="run the first step this long after the start (30s, 5m, 1h30m): the instance "
        "exists at once, WAITING with the reason START_DELAYED (default: at once)",
    )

    p = command(
        "execute",
        Command(_execute, (JSON, TABLE)),
        "start an instance and print it once it rests (WAITING, or finished)",
    )
    _start_arguments(p, request_help)
    p.add_argument(
        "--until",
        choices=["rest", "finish"],
        default="rest",
        help="rest: until WAITING, COMPLETED, FAILED or CANCELLED; finish: until one of the "
        "last three (default: rest)",
    )
    p.add_argument(
        "--wait",
        type=_duration,
        metavar="DURATION",
        help="give up waiting after this long (30s, 5m) with DEADLINE_EXCEEDED, exit 1; the "
        "instance goes on running (default: wait as long as it takes)",
    )

    p = command("resume", Command(_resume, (JSON, TABLE)), "fire an event on a WAITING instance")
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

    p = command("signal", Command(_signal, (JSON, TABLE)), "deliver an event to a RUNNING instance")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("event", help="event to deliver, e.g. score")
    p.add_argument(
        "--payload",
        type=_json_object,
        metavar="JSON",
        help="event payload as a JSON object (guards and actions read it as event.payload)",
    )
    p.add_argument("--request-id", metavar="KEY", help=request_help)

    p = command(
        "signal-with-start",
        Command(_signal_with_start, (JSON, TABLE)),
        "deliver an event to an instance, starting it first if it does not exist",
    )
    p.add_argument("definition", help="definition to start the instance from, e.g. tally")
    p.add_argument("id", help="workflow id: the instance signalled, or started")
    p.add_argument("event", help="event to deliver, e.g. tick")
    p.add_argument(
        "--payload", type=_json_object, metavar="JSON", help="event payload as a JSON object"
    )
    p.add_argument(
        "--input",
        type=_json_object,
        metavar="JSON",
        help="initial context of a started instance, as a JSON object (ignored if it exists)",
    )
    p.add_argument("--version", type=int, help="definition version to start (default: latest)")
    p.add_argument("--request-id", metavar="KEY", help=request_help)
    p.add_argument(
        "--if-finished",
        choices=["refuse", "start_new"],
        help="when the instance has finished: refuse with ALREADY_TERMINAL, or replace it "
        "with a new one (default: refuse)",
    )
    p.add_argument(
        "--start-now",
        action="store_true",
        help="start an instance whose delayed start has not run yet, with the event",
    )
    _recursion_limit_argument(p)

    p = command("get", Command(_get, (TABLE, JSON), TABLE), "read one instance")
    p.add_argument("name", help="workflows/ID or ID")

    filter_help = (
        "only instances this AIP-160 filter matches, e.g. "
        "'status = WAITING AND search.customer = \"c-42\"' (fields: definition, version, "
        "state, status, create_time, update_time, search.<field>)"
    )
    p = command("list", Command(_list, (TABLE, JSON), TABLE), "list instances (all pages)")
    p.add_argument("--definition", metavar="NAME", help="only instances of this definition")
    statuses = ", ".join(s.value for s in WorkflowStatus if s is not WorkflowStatus.UNSPECIFIED)
    p.add_argument(
        "--status",
        type=_status,
        help=f"only instances with this status: {statuses} (any case, also as "
        "WORKFLOW_STATUS_WAITING; default: any)",
    )
    p.add_argument(
        "--page-size", type=int, metavar="N", help="instances per request (default: server's, 50)"
    )
    p.add_argument(
        "--order-by",
        type=_order,
        metavar="ORDER",
        help="the order of the listing: keys separated by commas, each one of "
        f"{', '.join(ORDER_COLUMNS)} or search.<field>, then optionally ' desc' "
        "('update_time desc, search.amount'); default: create_time, oldest first",
    )
    p.add_argument("--id-prefix", metavar="TEXT", help="only instances whose id starts with it")
    p.add_argument("--filter", metavar="FILTER", help=filter_help)
    p.add_argument("--limit", type=int, metavar="N", help="stop after this many instances")

    p = command("count", Command(_count, (TABLE, JSON), TABLE), "count instances, by status")
    p.add_argument("--filter", metavar="FILTER", help=filter_help)

    p = command("tasks", Command(_tasks, (TABLE, JSON), TABLE), "list tasks (all pages)")
    p.add_argument("--queue", help="only tasks of this queue")
    p.add_argument("--workflow", metavar="NAME", help="only tasks of this instance (workflows/ID)")
    p.add_argument("--status", help="only tasks with this status (SCHEDULED, LEASED, ...)")
    p.add_argument(
        "--filter",
        metavar="FILTER",
        help="only tasks this AIP-160 filter matches, e.g. 'status = BACKOFF AND attempt >= 3' "
        "(fields: queue, workflow, definition, state, status, attempt, priority, revision, "
        "concurrency_key, schedule_time, deadline, lease_expire_time, update_time)",
    )
    p.add_argument("--page-size", type=int, metavar="N", help="tasks per request (default 50)")
    p.add_argument("--limit", type=int, metavar="N", help="stop after this many tasks")

    p = command("cancel", Command(_cancel, (JSON, TABLE)), "cancel an instance that has not ended")
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument("--reason", help="why, recorded with the cancellation")
    p.add_argument("--expected-revision", type=int, metavar="N", help=revision_help)
    p.add_argument("--request-id", metavar="KEY", help=request_help)

    repair = "(a saved step with your reason in history; --dry-run shows it and saves nothing)"
    p = command(
        "retry",
        Command(_retry, (JSON, TABLE)),
        f"put a FAILED instance back into the state it failed in {repair}",
    )
    p.add_argument("name", help="workflows/ID or ID")
    _repair_options(p, revision_help, request_help)

    p = command(
        "reset",
        Command(_reset, (JSON, TABLE)),
        f"put an instance back at a revision of its history {repair}",
    )
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument(
        "--to-revision", type=int, required=True, metavar="N", help="the revision to go back to"
    )
    _repair_options(p, revision_help, request_help)

    p = command(
        "migrate",
        Command(_migrate, (JSON, TABLE)),
        f"move a RUNNING or WAITING instance to another version of its definition {repair}",
    )
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument(
        "--to-version", type=int, required=True, metavar="N", help="the version to move it to"
    )
    p.add_argument(
        "--map",
        action="append",
        metavar="OLD=NEW",
        help="a state of its version and the state it becomes (repeatable)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="FIELD=EXPR",
        help="a context field and the CEL expression over the old context giving it (repeatable)",
    )
    _repair_options(p, revision_help, request_help)

    for verb, what in (
        ("pause", "pause a RUNNING or WAITING instance: nothing steps it until its unpause"),
        ("unpause", "unpause a paused instance: its due timers fire, its task is offered"),
    ):
        p = command(verb, Command(_pause, (JSON, TABLE)), f"{what} {repair}")
        p.add_argument("name", help="workflows/ID or ID")
        p.add_argument("--reason", help="why, recorded in history")
        p.add_argument(
            "--dry-run", action="store_true", help="show what would happen, save nothing"
        )
        p.add_argument("--expected-revision", type=int, metavar="N", help=revision_help)
        p.add_argument("--request-id", metavar="KEY", help=request_help)

    format_help = "the same as -o: json (one JSON object a line) or text (one readable line a step)"
    p = command(
        "watch",
        Command(_watch, (JSON, TEXT)),
        "follow an instance: every revision, live, until a terminal one",
    )
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument(
        "--after-revision",
        type=int,
        metavar="N",
        help="replay every revision after N first (default: start with the instance now)",
    )
    p.add_argument(
        "--format", dest="output", choices=[JSON, TEXT], default=argparse.SUPPRESS, help=format_help
    )

    p = command(
        "history",
        Command(_history, (TABLE, JSON, TEXT), TABLE),
        "every saved step of an instance, with transitions and event",
    )
    p.add_argument("name", help="workflows/ID or ID")
    p.add_argument(
        "--format", dest="output", choices=[JSON, TEXT], default=argparse.SUPPRESS, help=format_help
    )

    p = command("diagnostics", Command(_diagnostics), "runtime diagnostics, or one instance's")
    p.add_argument(
        "name",
        nargs="?",
        help="workflows/ID or ID for one instance's diagnostics (default: the server's)",
    )

    p = command(
        "queue",
        Command(_queue),
        "set, read or list task queues' flow control (limits, closed keys, backlog)",
    )
    p.add_argument("action", choices=["set", "get", "list"], help="what to do")
    p.add_argument("queue", nargs="?", help="the queue (for set and get)")
    p.add_argument("--max-leased", type=int, help="tasks of the queue leased at once")
    p.add_argument("--rate", type=float, help="tasks handed out per second")
    p.add_argument("--burst", type=int, help="the rate's bucket size (0: the rate rounded up)")
    p.add_argument("--key-max-leased", type=int, help="tasks of one key leased at once")
    p.add_argument("--key-rate", type=float, help="tasks of one key handed out per second")
    p.add_argument("--key-burst", type=int, help="one key's bucket size")
    p.add_argument("--keys", type=int, help="list: the busiest keys shown per queue (default 5)")

    p = command(
        "definitions", Command(_definitions), "list definitions, or show one with its source"
    )
    p.add_argument(
        "name",
        nargs="?",
        help="definition name or definitions/NAME/versions/N to show (default: list them all)",
    )
    p.add_argument(
        "--version", type=int, help="version of the definition NAME to show (default: latest)"
    )
    _schedule_commands(commands, common, epilog)
    _batch_commands(commands, common, epilog)
    return parser


def _proto_json(message: Message) -> JSONValue:
    value: JSONValue = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return value


def _instant(text: str) -> datetime:
    try:
        found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _schedule_create(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    schedule = client.create_schedule(
        args.schedule_id,
        args.definition,
        cron=args.cron or (),
        interval=args.interval,
        phase=args.phase or 0.0,
        time_zone=args.time_zone or "",
        jitter=args.jitter or 0.0,
        input=args.input,
        version=args.version,
        overlap=args.overlap,
        catchup_window=args.catchup_window,
        paused=args.paused,
        note=args.note or "",
    )
    _emit(out, _proto_json(schedule), compact=args.compact)


def _schedule_get(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    _emit(out, _proto_json(client.get_schedule(args.name)), compact=args.compact)


def _schedule_list(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    found = [_proto_json(s) for s in client.list_schedules(page_size=args.page_size)]
    _emit(out, {"schedules": found}, compact=args.compact)


def _schedule_pause(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    change = client.pause_schedule if args.schedule_action == "pause" else client.unpause_schedule
    _emit(out, _proto_json(change(args.name, args.note or "")), compact=args.compact)


def _schedule_trigger(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    action = client.trigger_schedule(args.name, force=args.force)
    _emit(out, _proto_json(action), compact=args.compact)


def _schedule_backfill(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    fires = client.backfill_schedule(args.name, args.start, args.end)
    _emit(out, {"fires": fires}, compact=args.compact)


def _schedule_delete(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    client.delete_schedule(args.name)
    _emit(out, {"deleted": args.name}, compact=args.compact)


def _schedule_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    epilog: str,
) -> None:
    group = commands.add_parser(
        "schedule",
        help="create, read, pause, trigger and backfill schedules",
        description="Schedules start instances of a definition on a calendar (cron "
        "expressions in a time zone, or an interval). Output: JSON.",
        epilog=epilog,
    )
    actions = group.add_subparsers(dest="schedule_action", required=True, metavar="ACTION")

    def action(name: str, run: Callable[..., None], help: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(
            name,
            help=help,
            description=f"{help[0].upper()}{help[1:]}.",
            epilog=epilog,
            parents=[common],
        )
        sub.set_defaults(command_spec=Command(run))
        return sub

    name_help = "schedules/ID or ID"
    p = action("create", _schedule_create, "create a schedule")
    p.add_argument("schedule_id", help="the schedule's id, e.g. nightly-sync")
    p.add_argument("definition", help="the definition each fire starts")
    p.add_argument(
        "--cron",
        action="append",
        metavar="EXPR",
        help="a cron expression (5 fields, 6 with seconds first, or @daily...); repeat for more",
    )
    p.add_argument("--interval", type=_duration, metavar="DURATION", help="fire every 30s, 5m...")
    p.add_argument("--phase", type=_duration, metavar="DURATION", help="the interval's offset")
    p.add_argument("--time-zone", metavar="ZONE", help="IANA zone of the cron expressions")
    p.add_argument(
        "--jitter", type=_duration, metavar="DURATION", help="delay each fire up to this"
    )
    p.add_argument("--input", type=_json_object, metavar="JSON", help="the start's input")
    p.add_argument("--version", type=int, help="pin a definition version (default: latest)")
    p.add_argument(
        "--overlap",
        default="SKIP",
        choices=["SKIP", "BUFFER_ONE", "ALLOW_ALL", "CANCEL_OTHER"],
        help="what a fire does while the previous instance is open (default SKIP)",
    )
    p.add_argument(
        "--catchup-window",
        type=_duration,
        metavar="DURATION",
        help="how old a missed fire may be and still run (default 1m)",
    )
    p.add_argument("--paused", action="store_true", help="create it paused")
    p.add_argument("--note", help="a note kept with its state")
    p = action("get", _schedule_get, "read a schedule: next fires, recent actions, counts")
    p.add_argument("name", help=name_help)
    p = action("list", _schedule_list, "list schedules (all pages)")
    p.add_argument("--page-size", type=int, metavar="N", help="schedules per request")
    for verb in ("pause", "unpause"):
        p = action(verb, _schedule_pause, f"{verb} a schedule")
        p.add_argument("name", help=name_help)
        p.add_argument("--note", help="who and why")
    p = action("trigger", _schedule_trigger, "fire a schedule once now")
    p.add_argument("name", help=name_help)
    p.add_argument("--force", action="store_true", help="start even if its last one is open")
    p = action("backfill", _schedule_backfill, "run every nominal time of a past range, paced")
    p.add_argument("name", help=name_help)
    p.add_argument("start", type=_instant, help="from this time (RFC 3339), included")
    p.add_argument("end", type=_instant, help="to this time (RFC 3339), included")
    p = action("delete", _schedule_delete, "delete a schedule (its instances stay)")
    p.add_argument("name", help=name_help)


# Each operation's own options of `batch start`, by the operation they belong to.
_BATCH_OPTIONS = (
    ("event", "--event", "signal"),
    ("payload", "--payload", "signal"),
    ("entered_state", "--entered-state", "reset"),
    ("to_version", "--to-version", "migrate"),
    ("state_map", "--state-map", "migrate"),
    ("set", "--set", "migrate"),
    ("force", "--force", "delete"),
)


def _batch_action(args: argparse.Namespace) -> BatchAction:
    """The operation `batch start` names with --op and that operation's own options; an
    option of another operation is a usage error, not silently dropped."""
    op: str = args.op
    for dest, option, owner in _BATCH_OPTIONS:
        if owner != op and getattr(args, dest) not in (None, False):
            raise ValueError(f"{option} is an option of --op {owner}, not of --op {op}")
    if op == "signal":
        if not args.event:
            raise ValueError("--op signal needs --event")
        return BatchSignal(args.event, args.payload or {})
    if op == "migrate":
        if args.to_version is None or not args.definition:
            raise ValueError("--op migrate needs --to-version and --definition (its version's)")
        return BatchMigrate(
            args.to_version, _pairs("--state-map", args.state_map), _pairs("--set", args.set)
        )
    if op == "reset":
        return BatchReset(args.entered_state or "")
    if op == "delete":
        return BatchDelete(args.force)
    return batch_action(op)


def _batch_start(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    started = client.start_batch_operation(
        _batch_action(args),
        args.reason,
        filter=args.filter,
        definition=args.definition,
        rate=args.rate,
        batch_id=args.batch_id,
        dry_run=args.dry_run,
        id_prefix=args.id_prefix,
    )
    if form != TABLE:
        _emit(out, started.to_dict(), compact=args.compact)
        return
    if started.dry_run:
        matched = started.batch.matched
        _print(out, f"dry run: nothing was saved; the batch would work on {matched} instances")
    _print(out, _render.batch_table(started.batch))
    if started.sample:
        _print(out, "first instances:")
        for name in started.sample:
            _print(out, f"  {name.removeprefix('workflows/')}")


def _batch_get(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    if args.wait:
        # One line per change of the batch's state or counts, until it ends: JSON Lines, or
        # a readable line each; a table shows the whole batch at the end.
        for batch in client.follow_batch_operation(args.name, interval=args.interval):
            if form == JSON:
                _emit(out, batch.to_dict(), compact=True)
            else:
                _print(out, _render.batch_line(batch))
        if form != TABLE:
            return
    report = client.get_batch_operation(
        args.name,
        failures_page_size=args.failures_page_size,
        failures_page_token=args.failures_page_token or "",
    )
    if form == TEXT:
        _print(out, _render.batch_line(report.batch))
    elif form == TABLE:
        table = _render.batch_table(report.batch, report.failures, report.next_failures_page_token)
        _print(out, table)
    else:
        _emit(out, report.to_dict(), compact=args.compact)


def _batch_list(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    found = client.list_batch_operations(state=args.state, page_size=args.page_size)
    _listing(list(itertools.islice(found, args.limit)), _render.batches_table, args, out, form)


def _batch_cancel(client: Client, args: argparse.Namespace, out: TextIO, form: str) -> None:
    batch = client.cancel_batch_operation(args.name, args.reason)
    if form == TABLE:
        _print(out, _render.batch_table(batch))
    else:
        _emit(out, batch.to_dict(), compact=args.compact)


def _batch_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    epilog: str,
) -> None:
    group = commands.add_parser(
        "batch",
        help="apply an operation to every instance a filter matches, as a durable batch",
        description="A batch applies cancel, signal, reset, retry, migrate, pause, unpause "
        "or delete to every instance a filter matched when it started, paced, surviving "
        "restarts; each instance's step is the single command's, with the batch's reason.",
        epilog=epilog,
    )
    actions = group.add_subparsers(dest="batch_action", required=True, metavar="ACTION")

    def action(name: str, spec: Command, help: str) -> argparse.ArgumentParser:
        return _subcommand(actions, name, spec, help, common=common, epilog=epilog)

    name_help = "batches/ID or ID"
    p = action("start", Command(_batch_start, (JSON, TABLE)), "start a batch")
    p.add_argument(
        "--op", required=True, choices=BATCH_OPERATIONS, help="what to do to each instance"
    )
    p.add_argument("--reason", required=True, help="why, recorded in each instance's history")
    p.add_argument(
        "--filter",
        metavar="FILTER",
        help="the instances: an AIP-160 filter as `list --filter` takes, e.g. "
        "'status = FAILED' (default: every instance)",
    )
    p.add_argument(
        "--definition", metavar="NAME", help="only instances of this definition (default: any)"
    )
    p.add_argument(
        "--id-prefix",
        metavar="PREFIX",
        help="only instances whose id starts with this, as `list --id-prefix` (default: any)",
    )
    p.add_argument(
        "--rate", type=float, metavar="N", help="instances per second, up to 1000 (default 50)"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="count the matching instances and show the first ones; save nothing",
    )
    p.add_argument(
        "--batch-id",
        metavar="ID",
        help="the batch's id (default: generated); starting the same batch again with it "
        "answers the batch that exists",
    )
    p.add_argument("--event", help="--op signal: the signal's event")
    p.add_argument(
        "--payload", type=_json_object, metavar="JSON", help="--op signal: its payload (object)"
    )
    p.add_argument(
        "--entered-state",
        metavar="STATE",
        help="--op reset: back to the latest revision that entered this state (default: the "
        "last revision before the instance failed)",
    )
    p.add_argument(
        "--to-version", type=int, metavar="N", help="--op migrate: the --definition's version"
    )
    p.add_argument(
        "--state-map",
        action="append",
        metavar="OLD=NEW",
        help="--op migrate: a state and the state it becomes (repeatable)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="FIELD=EXPR",
        help="--op migrate: a context field and its CEL expression over the old context "
        "(repeatable)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="--op delete: delete running and waiting instances too",
    )

    p = action(
        "get",
        Command(_batch_get, (JSON, TABLE, TEXT)),
        "read a batch: its progress and the instances it failed on",
    )
    p.add_argument("name", help=name_help)
    p.add_argument(
        "--wait",
        action="store_true",
        help="follow it until it ends, a line each time its progress changes (JSON Lines; "
        "-o text: readable lines; -o table: then the whole batch)",
    )
    p.add_argument(
        "--interval",
        type=_duration,
        default=1.0,
        metavar="DURATION",
        help="with --wait: how often to read it (default 1s)",
    )
    p.add_argument(
        "--failures-page-size",
        type=int,
        metavar="N",
        help="failures shown, up to 1000 (default 50)",
    )
    p.add_argument(
        "--failures-page-token", metavar="TOKEN", help="the failures after an earlier answer's"
    )

    p = action(
        "list", Command(_batch_list, (JSON, TABLE)), "list batches, newest first (all pages)"
    )
    p.add_argument(
        "--state",
        type=_batch_state,
        help="only batches in this state: RUNNING, COMPLETED or CANCELLED (default: any)",
    )
    p.add_argument("--page-size", type=int, metavar="N", help="batches per request (default 50)")
    p.add_argument("--limit", type=int, metavar="N", help="stop after this many batches")

    p = action(
        "cancel",
        Command(_batch_cancel, (JSON, TABLE)),
        "cancel a running batch (the steps it applied stay)",
    )
    p.add_argument("name", help=name_help)
    p.add_argument("--reason", required=True, help="why")


def _form(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    spec: Command = args.command_spec
    form = args.output or (JSON if args.compact else spec.default)
    if form not in spec.forms:
        parser.error(
            f"{args.command} prints {' or '.join(spec.forms)}, not {form} (-o {spec.forms[0]})"
        )
    if args.compact and form != JSON:
        parser.error(f"--compact prints JSON; -o {form} is not JSON")
    return str(form)


# How gRPC says why a connection failed, and how a person would.
_CONNECT_FAILURES = (
    (re.compile(r"connection refused", re.I), "connection refused"),
    (re.compile(r"dns resolution failed|name or service not known", re.I), "no such host"),
    (re.compile(r"ssl|tls|handshake|certificate", re.I), "the TLS handshake failed"),
    (re.compile(r"timed? ?out|deadline", re.I), "no answer in time"),
    (re.compile(r"network is unreachable|no route to host", re.I), "no route to the host"),
)


def _unreachable(exc: StatewrightError) -> str | None:
    """One readable line for a call that never reached the server, or None for an answer."""
    if exc.reason or exc.code.name not in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
        return None  # the server answered: its ErrorInfo says why
    raw = exc.message.lower()
    if exc.code.name == "UNAVAILABLE" and not any(
        word in raw for word in ("connect", "resolution", "ssl", "handshake", "socket")
    ):
        return None
    why = next((text for pattern, text in _CONNECT_FAILURES if pattern.search(raw)), None)
    return why or " ".join(exc.message.split())[:200]


def _report(
    err: TextIO, exc: StatewrightError, address: str, form: str, args: argparse.Namespace
) -> None:
    why = _unreachable(exc)
    if why is not None:
        err.write(
            f"statewright: cannot reach the server at {address}: {why}. Is it running? "
            f"('make dev' starts one; --address HOST:PORT or ${_security.ADDRESS_ENV} "
            "names another)\n"
        )
    elif form == JSON:
        _emit(err, {"error": exc.to_dict()}, compact=args.compact)
    else:
        reason = f" {exc.reason}" if exc.reason else ""
        err.write(f"statewright: {exc.code.name}{reason}: {exc.message}\n")


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    spec: Command = args.command_spec
    form = _form(parser, args)
    address = args.target or _security.DEFAULT_ADDRESS
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
            address = client.target
            spec.run(client, args, out, form)
    except StatewrightError as exc:
        _report(err, exc, address, form, args)
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
