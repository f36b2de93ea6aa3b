"""``statewrightd test``'s options, apart from the command so that the command line can
list them without loading the engine."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Run scenario files against the server's own engine, with a virtual clock and an in-memory
store: no server, no database, milliseconds per scenario. A scenario starts an instance,
drives it (resume, signal, a worker's answers to its tasks, the passing of time) and says
what it expects after any step. Scenario files are named NAME.test.yaml and live beside
the definitions they test (NAME.yaml is the definition they run unless they name one).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a scenario file, or a directory searched for *.test.yaml (default: .)",
    )
    parser.add_argument(
        "--definitions",
        action="append",
        default=[],
        metavar="DIR",
        help="where else to find the definitions scenarios name by name (repeatable); the "
        "scenario file's own directory is always searched",
    )
    parser.add_argument(
        "-k",
        dest="match",
        default=None,
        metavar="TEXT",
        help="run only the scenarios whose name contains TEXT",
    )
    parser.add_argument(
        "--junit", default=None, metavar="FILE", help="also write the results as JUnit XML"
    )
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="report which states and transitions of each definition the scenarios went "
        "through, and which never",
    )
    parser.add_argument(
        "--coverage-graph",
        default=None,
        metavar="FILE",
        help="write each definition's state diagram (Mermaid) with what the scenarios never "
        "reached marked: a Markdown page when FILE ends in .md, else Mermaid text; - for "
        "standard output",
    )
    parser.add_argument(
        "--min-coverage",
        type=float,
        default=None,
        metavar="PERCENT",
        help="fail (exit 1) unless the scenarios take at least PERCENT of the transitions "
        "of every definition they run",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print only failures and the summary"
    )
