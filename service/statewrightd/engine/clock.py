"""The engine's clock: wall time for step times and timer due times.

Every time the engine records or compares goes through one ``Clock``, so a test can run a
server ahead of the machine's clock (``--clock-offset``) and see a timer due in two days
fire now, without sleeping and without the machine's time changing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class Clock:
    def __init__(self, offset: timedelta = timedelta(0)) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset
