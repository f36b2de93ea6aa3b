"""The handlers' answers over a real grpc.aio server, for calls that ended before them."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc
import grpc.aio
import pytest

from statewrightd import errors
from statewrightd.api.door import Door
from statewrightd.api.handlers import Context, unary


class _Slow:
    """A servicer whose one method outlives its caller's deadline, then fails."""

    def __init__(self) -> None:
        self.door = Door()
        self.answered = asyncio.Event()

    @unary
    async def Method(self, request: bytes, context: Context) -> bytes:
        try:
            await asyncio.shield(asyncio.sleep(0.4))
        except asyncio.CancelledError:
            await asyncio.sleep(0.4)  # a step that cannot be given up, as the runtime's
        self.answered.set()
        raise errors.DeadlineExceeded("the deadline passed before the step finished")


async def _call_past_its_deadline(servicer: _Slow) -> grpc.StatusCode:
    server = grpc.aio.server()
    method: Any = grpc.unary_unary_rpc_method_handler(servicer.Method)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"M": method}),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call: Any = channel.unary_unary("/t.T/M")
            try:
                await call(b"", timeout=0.1)
            except grpc.aio.AioRpcError as exc:
                code: grpc.StatusCode = exc.code()
            await asyncio.wait_for(servicer.answered.wait(), 10)
            await asyncio.sleep(0.2)  # grpc logs what the handler ended with after it ends
    finally:
        await server.stop(None)
    return code


def test_an_error_for_a_call_that_already_ended_is_not_logged_as_a_failed_send(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="grpc._cython.cygrpc")
    servicer = _Slow()
    assert asyncio.run(_call_past_its_deadline(servicer)) is grpc.StatusCode.DEADLINE_EXCEEDED
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("grpc")]
    assert not [m for level, m in logged if level >= logging.WARNING], logged
    assert any("RPC cancelled" in m for _, m in logged), logged
    assert servicer.door.inside == 0
