"""The ``statewrightd`` command line: serve, dev, migrate, validate, graph."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="statewrightd", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    validate = sub.add_parser("validate", help="check definition files and report every problem")
    validate.add_argument("paths", nargs="+", help="definition files (YAML or JSON) or directories")

    graph = sub.add_parser("graph", help="print a state diagram of a definition")
    graph.add_argument("file")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")

    migrate = sub.add_parser("migrate", help="apply database migrations and exit")
    migrate.add_argument("--database", default=None, help="postgresql://... or sqlite:///path")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
