"""Summarize py-spy raw profiles of the server by thread: where the time goes.

Not a test. Reads the ``*.txt`` files ``bench/run.sh --profile DIR`` writes (py-spy
``--format raw --threads``: one line per distinct stack, ``thread (TID): NAME;frame;...
COUNT``) and prints, for each thread role, its share of the samples, the functions that
were running (self time, by leaf frame) and the functions under which time was spent
(inclusive time), plus, for the time spent in libraries, which of the service's own
functions called into them.

    .venv/bin/python bench/profile_report.py DIR [--top 15]

A ``cpu`` profile samples every thread that is not idle, so shares approximate CPU time
per thread; a ``gil`` profile samples only the thread holding the GIL, so its shares say
which thread the interpreter lock is serving, the resource every Python thread competes
for.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.runtime_bench import thread_group

_LINE = re.compile(r"^thread \((\w+)\): ([^;]*);?(.*) (\d+)$")
_FRAME = re.compile(r"^(.*) \((.*?)(?::\d+)?\)$")
# The service's own code; everything else (grpc, asyncio, psycopg, protobuf...) is library.
OWN = ("statewrightd/", "echo_server.py")


def _function(frame: str) -> tuple[str, str]:
    """``'name (path:line)'`` -> (``'name (path)'``, path); line numbers dropped."""
    match = _FRAME.match(frame)
    if match is None:
        return frame, ""
    return f"{match.group(1)} ({match.group(2)})", match.group(2)


def _is_own(path: str) -> bool:
    return any(marker in path for marker in OWN)


class ThreadProfile:
    def __init__(self) -> None:
        self.samples = 0
        self.self_time: Counter[str] = Counter()
        self.inclusive: Counter[str] = Counter()
        self.callers: Counter[str] = Counter()  # own function nearest to library time


def read(path: Path) -> dict[str, ThreadProfile]:
    groups: dict[str, ThreadProfile] = defaultdict(ThreadProfile)
    for line in path.read_text().splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        _, name, stack, count_text = match.groups()
        count = int(count_text)
        profile = groups[thread_group(name)]
        profile.samples += count
        frames = [_function(f) for f in stack.split(";") if f]
        if not frames:
            continue
        leaf, leaf_path = frames[-1]
        profile.self_time[leaf] += count
        for function in {f for f, _ in frames}:
            profile.inclusive[function] += count
        if not _is_own(leaf_path):
            own = next((f for f, p in reversed(frames) if _is_own(p)), "(no service frame)")
            profile.callers[own] += count
    return dict(groups)


def report(path: Path, top: int) -> str:
    groups = read(path)
    total = sum(g.samples for g in groups.values()) or 1
    out = [f"## {path.name}: {total:,} samples", ""]
    for name, group in sorted(groups.items(), key=lambda kv: -kv[1].samples):
        share = group.samples / total
        if share < 0.01:
            continue
        out.append(f"### {name}: {share:.0%} of samples ({group.samples:,})")
        out.append("")
        out.append("self (running in):")
        for function, count in group.self_time.most_common(top):
            out.append(f"  {count / group.samples:6.1%}  {function}")
        out.append("inclusive (service functions only):")
        own = [(f, c) for f, c in group.inclusive.most_common() if _is_own(f)]
        for function, count in own[:top]:
            out.append(f"  {count / group.samples:6.1%}  {function}")
        if group.callers:
            out.append("library time, by the service function that called into it:")
            for function, count in group.callers.most_common(top // 2 + 1):
                out.append(f"  {count / group.samples:6.1%}  {function}")
        out.append("")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    files = sorted(args.directory.glob("*.txt"))
    if not files:
        raise SystemExit(f"no py-spy raw profiles (*.txt) in {args.directory}")
    print("\n\n".join(report(path, args.top) for path in files))


if __name__ == "__main__":
    main()
