"""``statewrightd test``: run scenario files against the engine, report like a test runner.

Exit status: 0 when every scenario passed (and coverage reached ``--min-coverage``), 1
when one failed (or coverage fell short), 2 when a scenario file is itself invalid, or no
scenario file was found: then nothing runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from statewrightd.scenarios.coverage import coverage_mermaid, coverage_of, coverage_text
from statewrightd.scenarios.language import Catalog, read_scenario_file, scenario_files
from statewrightd.scenarios.report import (
    failure_text,
    junit_xml,
    result_line,
    summary_line,
    write_junit,
)
from statewrightd.scenarios.runner import ScenarioResult, run_scenarios

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_INVALID = 2


def scenarios_command(
    args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    began = time.perf_counter()
    paths: Sequence[str] = args.paths or ["."]
    files, missing = scenario_files(paths)
    for raw in missing:
        print(f"{raw}: error: no such file or directory", file=err)
    if not files:
        if not missing:
            print(f"error: no scenario files (*.test.yaml) in {', '.join(paths)}", file=err)
        return EXIT_INVALID
    catalog = Catalog([Path(d) for d in args.definitions])
    read = [read_scenario_file(path, catalog) for path in files]
    invalid = [f for f in read if f.errors]
    for scenario_file in read:
        for line in scenario_file.lines():
            print(line, file=err)
    if invalid or missing:
        count = sum(len(f.errors) for f in invalid) + len(missing)
        print(
            f"{count} problem(s) in {len(invalid) + len(missing)} of {len(files) + len(missing)}"
            " scenario file(s): nothing was run",
            file=err,
        )
        if args.junit:
            write_junit(Path(args.junit), junit_xml([], invalid))
        return EXIT_INVALID
    scenarios = [s for f in read for s in f.scenarios]
    if args.match:
        scenarios = [s for s in scenarios if args.match in s.name]
        if not scenarios:
            print(f"error: no scenario's name contains {args.match!r}", file=err)
            return EXIT_INVALID

    def report(result: ScenarioResult) -> None:
        if not result.passed or not args.quiet:
            print(result_line(result), file=out)
        if not result.passed:
            print(failure_text(result), file=out)
        out.flush()

    results = run_scenarios(scenarios, report)
    print(summary_line(results, len(files), time.perf_counter() - began), file=out)
    if args.junit:
        write_junit(Path(args.junit), junit_xml(results))
    verdict = EXIT_PASSED if all(r.passed for r in results) else EXIT_FAILED
    coverages = coverage_of(results)
    if args.coverage or args.min_coverage is not None:
        print(coverage_text(coverages), file=out)
    if args.coverage_graph == "-":
        print(coverage_mermaid(coverages), file=out, end="")
    elif args.coverage_graph:
        graph = Path(args.coverage_graph)
        markdown = graph.suffix == ".md"
        graph.parent.mkdir(parents=True, exist_ok=True)
        graph.write_text(coverage_mermaid(coverages, markdown=markdown), encoding="utf-8")
    if args.min_coverage is not None:
        short = [c for c in coverages if c.percent + 1e-9 < args.min_coverage]
        for c in short:
            d = c.definition
            print(
                f"error: the scenarios take {c.percent:.1f}% of the transitions of "
                f"{d.name} v{d.version}, under --min-coverage {args.min_coverage:g}%",
                file=err,
            )
        if short:
            verdict = EXIT_FAILED
    return verdict
