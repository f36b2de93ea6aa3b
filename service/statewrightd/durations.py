"""Durations as people write them: ``500ms``, ``30s``, ``5m``, ``48h``, ``1h30m``, ``2d``."""

from __future__ import annotations

import re
from typing import Final

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

# The longest duration anything takes (a timer, a timeout, a retry interval, a setting):
# 100 years of 365 days. Far enough for any real wait, and a time that far ahead stays
# well inside what every clock, database and client can represent (the year 9999).
MAX_DURATION_SECONDS: Final = 36500 * 86400.0
MAX_DURATION_TEXT: Final = "100 years (36500d)"


def parse_duration(text: str) -> float | None:
    """The seconds a duration literal stands for, or None if it is not one."""
    text = text.strip()
    if not text:
        return None
    seconds, position = 0.0, 0
    for match in _PART.finditer(text):
        if match.start() != position:
            return None
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    return seconds if position == len(text) else None


def too_long(seconds: float) -> bool:
    """Whether ``seconds`` is past the longest duration (infinite and NaN included)."""
    return not seconds <= MAX_DURATION_SECONDS
