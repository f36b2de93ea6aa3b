"""Statements a second in a window of a PostgreSQL log written with log_statement = all,
by kind (the first words of each, parameters as they were sent). Used by
bench/idle_statements.sh; not a test."""

from __future__ import annotations

import re
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

LINE = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) \w+ \[\d+\] LOG:  (?:statement|execute [^:]*): (.*)"
)
WIDTH = 100


def statements(log: Path) -> list[tuple[float, str]]:
    found: list[tuple[float, str]] = []
    for line in log.read_text(errors="replace").splitlines():
        match = LINE.match(line)
        if match:
            logged = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S.%f")
            found.append((logged.replace(tzinfo=UTC).timestamp(), match.group(2)))
        elif found and line.startswith(("\t", " ")):
            when, text = found[-1]
            found[-1] = (when, f"{text} {line.strip()}")
    return found


def main() -> None:
    log, start, seconds = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    window = [text for at, text in statements(log) if start <= at < start + seconds]
    kinds = Counter(re.sub(r"\s+", " ", text).strip()[:WIDTH] for text in window)
    print(f"statements: {len(window) / seconds:.1f} a second over {seconds:.0f} s")
    print(f"transactions: {kinds.get('BEGIN', 0) / seconds:.1f} a second")
    for text, count in kinds.most_common():
        print(f"  {count / seconds:6.2f}  {text}")


if __name__ == "__main__":
    main()
