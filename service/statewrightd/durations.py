"""Durations as people write them: ``500ms``, ``30s``, ``5m``, ``48h``, ``1h30m``, ``2d``."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


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
