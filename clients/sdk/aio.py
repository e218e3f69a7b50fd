"""``AsyncRefereeClient``: the asyncio client (grpc.aio), with the same calls, deadlines, retries and resuming
watch as ``RefereeClient``. Create it inside the event loop that uses it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, TypeVar

import grpc
import grpc.aio

from clients.sdk import ops
from clients.sdk.errors import from_rpc_error
from rummy_pb.rummy.v1 import referee_pb2_grpc

R = TypeVar("R")

WatchItem = ops.WatchItem
#: What ``read()`` answers at the end of a stream.
_EOF: object = grpc.aio.EOF  # type: ignore[attr-defined]  # grpc-stubs does not have it


class AsyncRefereeClient(ops.Asynchronous["AsyncWatch"]):
    """An asyncio client of the referee (or referees); see ``RefereeClient`` for the parameters. ``await
    client.close()`` (or ``async with``) when done."""

    def _open_channel(
        self, address: str, credentials: grpc.ChannelCredentials | None, options: list[tuple[str, Any]]
    ) -> grpc.aio.Channel:
        channel = grpc.aio.secure_channel(address, credentials, options) if credentials else (
            grpc.aio.insecure_channel(address, options))  # fmt: skip
        self._stub = referee_pb2_grpc.RefereeServiceStub(channel)
        return channel

    async def close(self) -> None:
        """Close the channel (calls in flight are cancelled)."""
        await self._channel.close(None)

    async def __aenter__(self) -> AsyncRefereeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, op: ops.Op[R]) -> R:
        answer: Any = None
        while True:
            done, effect = ops.step(op, answer)
            if done:
                return effect  # type: ignore[no-any-return]
            answer = await self._perform(effect)

    async def _perform(self, effect: ops.Effect) -> Any:
        if isinstance(effect, ops.Sleep):
            await asyncio.sleep(effect.seconds)
            return None
        if not isinstance(effect, ops.Send):
            raise TypeError(f"no effect of a call: {effect!r}")
        try:
            return await getattr(self._stub, effect.method)(effect.request, timeout=effect.timeout,
                                                            metadata=effect.metadata)  # fmt: skip
        except grpc.RpcError as exc:
            return from_rpc_error(exc)


class AsyncWatch(ops.WatchLoop, AsyncIterator[WatchItem]):
    """The resuming event stream of one game (see ``AsyncRefereeClient.watch``)."""

    def _start(self) -> None:
        assert isinstance(self._session, AsyncRefereeClient)
        self._client = self._session
        self._items = self._run()

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def __anext__(self) -> WatchItem:
        return await self._items.__anext__()

    def cancel(self) -> None:
        """Stop: the iteration ends."""
        self._cancelled = True
        self._drop()

    async def aclose(self) -> None:
        """Stop and release the stream."""
        self.cancel()
        await self._items.aclose()

    async def _run(self) -> AsyncGenerator[WatchItem, None]:
        try:
            while (effect := self._advance()) is not None:
                if not isinstance(effect, ops.Deliver):
                    self._answer = await self._perform(effect)
                    continue
                yield effect.item
        finally:
            self._drop()

    async def _perform(self, effect: ops.Effect) -> Any:
        if isinstance(effect, ops.Open):
            self._call = self._client._stub.WatchGame(effect.request, timeout=effect.timeout, metadata=effect.metadata)
            return self._call
        if isinstance(effect, ops.Close):
            effect.stream.cancel()
            return None
        if not isinstance(effect, ops.Read):
            return await self._client._perform(effect)
        try:
            update = await effect.stream.read()
        except grpc.RpcError as exc:
            return from_rpc_error(exc)
        except asyncio.CancelledError:
            if self._cancelled:  # cancel(): the iteration ends
                return ops.END
            raise
        return ops.END if update is _EOF else update


AsyncRefereeClient._watch_type = AsyncWatch
