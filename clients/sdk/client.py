"""``RefereeClient``: the blocking client of the referee's gRPC API.

Every call has a deadline (``timeout``, per send), carries the bearer token (the client's, or one given to the
call), and is sent again with backoff when it fails with UNAVAILABLE or DEADLINE_EXCEEDED, except CreateGame and
JoinGame, which are not idempotent (a resent JoinGame could take a second seat). A move is sent with a
``request_id`` (a fresh uuid4 unless given) and every resend carries the same one: the referee applies it once and
answers a resend with the original response. A move answered UNAVAILABLE with the reason ``COMMIT_OUTCOME_UNKNOWN``
(the referee could not tell whether its storage committed it) is always resolved by resending it with the same
``request_id``, even when the retry policy's attempts are spent (up to ``_core.OUTCOME_RESENDS`` more sends); if it
still cannot be resolved, the call fails with that reason, never with another one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, TypeVar

import grpc

from clients.sdk import ops
from clients.sdk.errors import RefereeError, from_rpc_error
from rummy_pb.rummy.v1 import referee_pb2_grpc

R = TypeVar("R")

WatchItem = ops.WatchItem


class RefereeClient(ops.Blocking["Watch"]):
    """A blocking client of the referee at ``target`` ("host:port"), or of several referees sharing one Redis
    ("host:port,host:port" or a sequence of addresses: each call goes to the next one connected, gRPC's
    ``round_robin``; a move retried after UNAVAILABLE may go to another one, with the same request_id).
    ``token``: the default bearer token of the calls (each call may name another). ``timeout``: the default
    deadline of each send, in seconds.
    ``retry``: how transient failures are retried. TLS: ``tls=True`` checks the referee's certificate against
    the system's roots, ``ca_file`` against that CA (PEM; implies TLS); ``client_cert_file`` and
    ``client_key_file`` (PEM) answer a referee that asks for a client certificate (``--tls-client-ca``); or pass
    ready ``credentials``; plaintext by default. Close it (or use it as a context manager) when done.
    ``watch_timeout``: the deadline of a watch stream, renewed (resumed) when it passes."""

    def _open_channel(
        self, address: str, credentials: grpc.ChannelCredentials | None, options: list[tuple[str, Any]]
    ) -> grpc.Channel:
        channel = grpc.secure_channel(address, credentials, options) if credentials else grpc.insecure_channel(
            address, options)  # fmt: skip
        self._stub = referee_pb2_grpc.RefereeServiceStub(channel)
        return channel

    def close(self) -> None:
        """Close the channel (calls in flight are cancelled)."""
        self._channel.close()

    def __enter__(self) -> RefereeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, op: ops.Op[R]) -> R:
        """Drive ``op`` to its value."""
        answer: Any = None
        while True:
            done, effect = ops.step(op, answer)
            if done:
                return effect  # type: ignore[no-any-return]
            answer = self._perform(effect)

    def _perform(self, effect: ops.Effect) -> Any:
        if isinstance(effect, ops.Send):
            try:
                return getattr(self._stub, effect.method)(effect.request, timeout=effect.timeout,
                                                          metadata=effect.metadata)  # fmt: skip
            except grpc.RpcError as exc:
                return from_rpc_error(exc)
        if isinstance(effect, ops.Sleep):
            time.sleep(effect.seconds)
            return None
        raise TypeError(f"no effect of a call: {effect!r}")


class Watch(ops.WatchLoop, Iterator[WatchItem]):
    """The resuming event stream of one game (see ``RefereeClient.watch``)."""

    def _start(self) -> None:
        assert isinstance(self._session, RefereeClient)
        self._client = self._session
        self._lock = threading.Lock()
        self._items = self._run()

    def __iter__(self) -> Watch:
        return self

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()

    def __next__(self) -> WatchItem:
        return next(self._items)

    def cancel(self) -> None:
        """Stop: the iteration ends (from any thread)."""
        with self._lock:
            self._cancelled = True
            self._drop()

    def _run(self) -> Iterator[WatchItem]:
        try:
            while (effect := self._advance()) is not None:
                if isinstance(effect, ops.Deliver):
                    yield effect.item
                else:
                    self._answer = self._perform(effect)
        finally:
            self._drop()

    def _perform(self, effect: ops.Effect) -> Any:
        if isinstance(effect, ops.Open):
            with self._lock:
                if self._cancelled:
                    return None
                self._call = self._client._stub.WatchGame(effect.request, timeout=effect.timeout,
                                                          metadata=effect.metadata)  # fmt: skip
                return self._call
        if isinstance(effect, ops.Read):
            try:
                return next(effect.stream)
            except StopIteration:
                return ops.END
            except grpc.RpcError as exc:
                return from_rpc_error(exc)
        if isinstance(effect, ops.Close):
            effect.stream.cancel()
            return None
        return self._client._perform(effect)


RefereeClient._watch_type = Watch

__all__ = ["RefereeClient", "RefereeError", "Watch"]
