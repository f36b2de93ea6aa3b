"""Calls waiting on storage when it is found down: reads are refused, writes unknown."""

from __future__ import annotations

import asyncio
import threading

import pytest

from statewrightd import errors
from statewrightd.app.storage import Storage
from statewrightd.store.memory import MemoryRepository


def test_calls_waiting_when_storage_goes_down_are_answered_at_once() -> None:
    async def main() -> None:
        storage, release = Storage(MemoryRepository()), threading.Event()

        def blocked() -> str:
            release.wait(5)
            return "done"

        read = asyncio.ensure_future(storage.read(blocked))
        write = asyncio.ensure_future(storage.write(blocked))
        await asyncio.sleep(0.05)
        storage.verdict("the database has not answered for 2s")
        # A read wrote nothing; a write (a lease, a heartbeat) may still land.
        with pytest.raises(errors.StorageUnavailable):
            await read
        with pytest.raises(errors.OutcomeUnknown):
            await write
        # New calls are refused before anything starts: nothing can land.
        with pytest.raises(errors.StorageUnavailable) as refused:
            await storage.write(lambda: "never")
        assert not isinstance(refused.value, errors.OutcomeUnknown)
        release.set()
        storage.verdict(None)
        assert await storage.write(lambda: "served") == "served"
        storage.close()

    asyncio.run(main())
