"""The statewrightd command line: serve, dev, validate, graph, test, migrate, reproject."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from statewrightd import __version__
from statewrightd.config import (
    ConfigError,
    ServerConfig,
    add_security_arguments,
    add_server_arguments,
    config_from,
)
from statewrightd.scenarios import options as scenario_options

# `statewrightd dev` needs nothing installed: a SQLite file and the bundled examples.
DEV_DEFAULTS = ServerConfig(
    database_url="sqlite:///statewright-dev.db",
    definitions_dir=Path("examples/definitions"),
    dev_mode=True,
    reflection=True,
    processes=1,
    http_listen="127.0.0.1:8080",
)


DESCRIPTION = """\
Statewright server: runs durable finite-state-machine workflows behind a gRPC API.

Every server flag falls back to its STATEWRIGHT_* environment variable, then to the
command's default. 'statewrightd COMMAND --help' shows a command's flags and defaults.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="statewrightd",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"statewrightd {__version__} (API statewright.v1)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the gRPC server (PostgreSQL or SQLite)",
        description="Run the gRPC server until SIGTERM.",
    )
    add_server_arguments(serve)
    add_security_arguments(serve)

    dev = sub.add_parser(
        "dev",
        help="run the server on statewright-dev.db (SQLite) with examples/definitions",
        description="Run the server for local development: the SQLite file "
        f"{DEV_DEFAULTS.database_url.removeprefix('sqlite:///')} and the definitions in "
        f"{DEV_DEFAULTS.definitions_dir}, unless flags or STATEWRIGHT_* variables say otherwise. "
        "The definitions directory is watched: a new file is loaded, and a changed definition "
        "becomes the next version of its name (running instances stay on theirs); a file with "
        "an error is reported and what it loaded before stays in use.",
    )
    add_server_arguments(dev, DEV_DEFAULTS)
    add_security_arguments(dev, DEV_DEFAULTS)

    validate = sub.add_parser(
        "validate",
        help="check definition files and report every problem",
        description="Check definition files; exit 1 if any has a problem.",
    )
    validate.add_argument(
        "paths", nargs="+", metavar="PATH", help="definition file (YAML or JSON) or directory"
    )

    graph = sub.add_parser(
        "graph",
        help="print a state diagram of a definition",
        description="Print the state diagram of one definition file.",
    )
    graph.add_argument("file", metavar="FILE", help="definition file (YAML or JSON)")
    graph.add_argument(
        "--format",
        choices=("mermaid", "dot"),
        default="mermaid",
        help="mermaid (a stateDiagram-v2) or dot (Graphviz); default mermaid",
    )

    test = sub.add_parser(
        "test",
        help="run scenario files against the engine (virtual clock, no database)",
        description=scenario_options.DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scenario_options.add_arguments(test)

    migrate = sub.add_parser(
        "migrate",
        help="apply database migrations and exit",
        description="Apply the pending schema migrations to a database and exit.",
    )
    migrate.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="postgresql://USER@HOST/DB or sqlite:///PATH (env STATEWRIGHT_DATABASE_URL; "
        f"default {ServerConfig().database_url})",
    )
    reproject = sub.add_parser(
        "reproject",
        help="recompute the search values of existing instances",
        description="Recompute the search values (a definition's `search` fields) of the "
        "instances in a database from their stored contexts, a page at a time, as a save "
        "would. Safe beside running servers, and to run again.",
    )
    reproject.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="postgresql://USER@HOST/DB or sqlite:///PATH (env STATEWRIGHT_DATABASE_URL)",
    )
    reproject.add_argument("--definition", metavar="NAME", help="only this definition's")
    reproject.add_argument(
        "--page-size", type=int, default=500, metavar="N", help="instances per transaction"
    )
    auth = sub.add_parser(
        "auth",
        help="make API keys and check auth config files",
        description="Make an API key for the auth config, or check an auth config file.",
    )
    auth_sub = auth.add_subparsers(
        dest="auth_command", required=True, metavar="ACTION", help="new-key or check"
    )
    new_key = auth_sub.add_parser(
        "new-key",
        help="print a new random API key and the auth config entry that stores its hash",
        description="Print a new random API key (once) and its api_keys entry, which holds "
        "only the key's SHA-256.",
    )
    new_key.add_argument("name", help="the key's name: its principal is key:NAME")
    new_key.add_argument(
        "--role",
        choices=("reader", "client", "worker", "operator", "admin"),
        default="client",
        help="the role the key grants (default client)",
    )
    new_key.add_argument(
        "--definitions",
        nargs="+",
        default=[],
        metavar="PATTERN",
        help="only these definitions (glob patterns, e.g. 'mail-*'); default all",
    )
    new_key.add_argument(
        "--queues",
        nargs="+",
        default=[],
        metavar="PATTERN",
        help="only these task queues (glob patterns); default all",
    )
    check = auth_sub.add_parser(
        "check",
        help="check an auth config file and report every problem",
        description="Check an auth config file as the server does at start; exit 1 on problems.",
    )
    check.add_argument("file", metavar="FILE", help="the auth config file (YAML)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in ("serve", "dev"):
        from statewrightd.supervisor import process_count

        try:
            config = config_from(args, base=DEV_DEFAULTS if args.command == "dev" else None)
        except ConfigError as exc:
            parser.error(str(exc))
        count, why = process_count(config)
        if count > 1:
            from statewrightd.server import check_definitions
            from statewrightd.supervisor import run as run_pod

            refused = check_definitions(config)
            return refused if refused is not None else run_pod(config, count, why)
        # One process needs no supervisor: it is the server itself, as it always was.
        from statewrightd.server import run

        return run(config)
    if args.command == "validate":
        from statewrightd.definitions.commands import validate_command

        return validate_command(args.paths)
    if args.command == "graph":
        from statewrightd.definitions.commands import graph_command

        return graph_command(args.file, args.format)
    if args.command == "auth":
        from statewrightd.security.commands import check_command, new_key_command

        if args.auth_command == "new-key":
            return new_key_command(args.name, args.role, args.definitions, args.queues)
        return check_command(args.file)
    if args.command == "test":
        from statewrightd.scenarios.command import scenarios_command

        return scenarios_command(args)
    if args.command == "migrate":
        from statewrightd.store.commands import migrate_command

        return migrate_command(args.database)
    if args.command == "reproject":
        from statewrightd.app.reproject import reproject_command

        return reproject_command(args.database, args.definition, args.page_size)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
