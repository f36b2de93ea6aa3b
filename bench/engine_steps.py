"""Micro-benchmark: single-transition engine steps per second on the example definitions.

Not a test. Run: ``.venv/bin/python bench/engine_steps.py [seconds-per-case]``.
Each measured step fires exactly one transition (the review-loop signals alternate
between ``evaluating`` and ``improving``; mail-approval resumes wait -> send is two,
so it is reported separately as a multi-transition step).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from statewrightd.definitions import load_definition_file
from statewrightd.engine import Snapshot, StepResult, resume, signal, start

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "definitions"


def measure(name: str, step: Callable[[], StepResult], seconds: float) -> float:
    count = 0
    deadline = time.perf_counter() + seconds
    began = time.perf_counter()
    while time.perf_counter() < deadline:
        for _ in range(200):
            step()
        count += 200
    rate = count / (time.perf_counter() - began)
    print(f"{name:<55} {rate:>10,.0f} steps/s")
    return rate


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    review = load_definition_file(EXAMPLES / "review-loop.yaml")
    mail = load_definition_file(EXAMPLES / "mail-approval.yaml")
    order = load_definition_file(EXAMPLES / "order-pricing.yaml")

    evaluating = start(review, "bench", {}).snapshot
    improving = signal(review, evaluating, "score", {"score": 0.1}).snapshot
    assert improving.state == "improving"
    # Keep iterations below the cap so every score signal takes the same path.
    evaluating_again: Snapshot = signal(review, improving, "revised", {"document": "v2"}).snapshot

    single = [
        measure(
            "review-loop signal score (guarded, 2 guards, set x2)",
            lambda: signal(review, evaluating, "score", {"score": 0.1}),
            seconds,
        ),
        measure(
            "review-loop signal revised (1 transition, set)",
            lambda: signal(review, improving, "revised", {"document": "v3"}),
            seconds,
        ),
        measure(
            "review-loop signal score -> improving (entry action)",
            lambda: signal(review, evaluating_again, "score", {"score": 0.2}),
            seconds,
        ),
    ]
    waiting = start(mail, "bench", {"topic": "x"}).snapshot
    measure("mail-approval start (entry + 1 automatic)", lambda: start(mail, "b", {}), seconds)
    measure(
        "mail-approval resume approve (2 transitions)",
        lambda: resume(mail, waiting, "approve", {"approver": "ann"}),
        seconds,
    )
    measure(
        "order-pricing start (5 automatic transitions)",
        lambda: start(order, "b", {"items": ["a"], "price": 3.0, "quantity": 2}),
        seconds,
    )
    print(
        f"single-transition steps/s (mean of review-loop cases): {sum(single) / len(single):,.0f}"
    )


if __name__ == "__main__":
    main()
