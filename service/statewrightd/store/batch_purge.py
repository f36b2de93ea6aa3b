"""Which finished batch operations one purge call removes, on every backend."""

from __future__ import annotations

from collections.abc import Sequence


def doomed_batches(found: Sequence[tuple[str, int]], limit: int) -> list[str]:
    """Of ``found`` (batch id, items), oldest first: the oldest batch whatever its size
    (a batch is removed whole, and one larger than ``limit`` must go too), then the next
    ones while the rows (each batch's items and its own row) stay within ``limit``."""
    chosen: list[str] = []
    rows = 0
    for batch_id, items in found:
        rows += items + 1
        if chosen and rows > limit:
            break
        chosen.append(batch_id)
    return chosen
