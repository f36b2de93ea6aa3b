"""The ``statewrightd`` command line: serve, dev, migrate, validate, graph."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from statewrightd.config import ConfigError, ServerConfig, add_server_arguments, config_from

# `statewrightd dev` needs nothing installed: a SQLite file and the bundled examples.
DEV_DEFAULTS = ServerConfig(
    database_url="sqlite:///statewright-dev.db",
    definitions_dir=Path("examples/definitions"),
    processes=1,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="statewrightd", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gRPC server")
    add_server_arguments(serve)

    dev = sub.add_parser(
        "dev", help="run the server on a local SQLite file with the example definitions"
    )
    add_server_arguments(dev)

    validate = sub.add_parser("validate", help="check definition files and report every problem")
    validate.add_argument("paths", nargs="+", help="definition files (YAML or JSON) or directories")

    graph = sub.add_parser("graph", help="print a state diagram of a definition")
    graph.add_argument("file")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")

    migrate = sub.add_parser("migrate", help="apply database migrations and exit")
    migrate.add_argument("--database", default=None, help="postgresql://... or sqlite:///path")
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
            from statewrightd.supervisor import run as run_pod

            return run_pod(config, count, why)
        # One process needs no supervisor: it is the server itself, as it always was.
        from statewrightd.server import run

        return run(config)
    if args.command == "validate":
        from statewrightd.definitions.commands import validate_command

        return validate_command(args.paths)
    if args.command == "graph":
        from statewrightd.definitions.commands import graph_command

        return graph_command(args.file, args.format)
    if args.command == "migrate":
        from statewrightd.store.commands import migrate_command

        return migrate_command(args.database)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
