"""The asyncio Statewright client, over ``grpc.aio``; the same API as :class:`Client`."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

import grpc
import grpc.aio

from statewright import _common
from statewright._operations import Operations
from statewright._plan import Awaiting, Effect, OpenStream, Receive, Sleep, Unary

__all__ = ["AsyncClient"]


class AsyncClient(Operations, Awaiting):
    """An asyncio client for ``statewright.v1.WorkflowService``.

    Behaves like :class:`statewright.Client` (deadlines, UNAVAILABLE-only retries, typed
    errors, resuming watches) and takes the same arguments, with a ``grpc.aio`` channel;
    every call is a coroutine, and ``list``, ``list_pages``, ``watch`` and ``definitions``
    are async iterators. Create it inside a running event loop and ``await client.close()``
    (or use ``async with``).
    """

    async def close(self) -> None:
        if self._owns_channel:
            await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _open(
        self, credentials: grpc.ChannelCredentials | None, options: _common.ChannelOptions
    ) -> grpc.aio.Channel:
        if credentials is None:
            return grpc.aio.insecure_channel(self.target, options=options)
        return grpc.aio.secure_channel(self.target, credentials, options=options)

    async def _perform(self, effect: Effect) -> Any:
        match effect:
            case Unary():
                return await self._invoke(effect)
            case OpenStream():
                return self._invoke(effect)
            case Receive(call):
                message = await call.read()
                return None if message is grpc.aio.EOF else message
            case Sleep(seconds):
                await asyncio.sleep(seconds)
        return None
