"""The house-bot host: plays the seats registered in ``referee:bots`` (server/bot_seats.py) through the public API.

The host is a client of the referee like any other: each seat it plays is ``clients.runner.play_seat_async``
with a bundled bot (``clients.bots.make_bot``) and the seat's token, over the gRPC address it is given (by
default its own process's port). It never reads or writes a game's keys, nor the engine's state: only the
registry and the leases. That makes it the one module of ``server`` that imports ``clients`` (the runner and the
bots): it is a client that happens to run inside ``serve`` (or alone: ``rummy-referee bots``).

Each seat is played by one host at a time: the host takes its lease (``SET NX PX``), renews every lease it holds
every third of the lease time, and stops playing a seat whose renewal fails (another host may have it by then);
a bot only answers while its host's lease is known to be valid for half the lease time more (measured from
before the last renewal was sent). The host plays at most ``max_seats`` seats at once. A seat whose play fails
(the bot raised, the referee refused its move, the referee stayed unreachable) is logged, its lease given up,
and tried again after ``retry_s``; a seat whose match is over, or whose game is gone, leaves the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

import engine
from clients.bots import Bot, make_bot
from clients.runner import TIMEOUT_FORFEIT, SeatResult, play_seat_async
from clients.sdk import AsyncRefereeClient, RefereeError
from clients.sdk.values import MoveResult
from clients.view import View
from server.bot_seats import BotSeat, BotSeats
from server.errors import describe
from server.settings import DEFAULTS
from server.storage_errors import StoreUnavailable

log = logging.getLogger("rummy_referee.bots")

#: Statuses after which a seat's game is taken to be gone for good (expired, or never created).
_GONE = frozenset({grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAUTHENTICATED})


@dataclass(frozen=True, slots=True)
class HostSettings:
    """How a bot host works: at most ``max_seats`` seats at once, leases of ``lease_s`` seconds, the registry
    looked at every ``poll_s`` seconds (and at once when this process creates a game with bot seats), a failed
    seat tried again after ``retry_s``."""

    max_seats: int = DEFAULTS.bots.max_seats
    lease_s: float = DEFAULTS.bots.lease_s
    poll_s: float = DEFAULTS.bots.poll_s
    retry_s: float = DEFAULTS.bots.retry_s
    move_timeout_s: float = DEFAULTS.bots.move_timeout_s

    def __post_init__(self) -> None:
        if self.max_seats < 1:
            raise ValueError("a bot host plays at least one seat")
        if not self.lease_s >= 0.5 or not self.poll_s > 0 or self.retry_s < 0:
            raise ValueError("a lease is at least 0.5 s, a poll interval more than 0, a retry delay 0 or more")


@dataclass
class _Lease:
    """A lease this host holds: known valid until ``until`` (monotonic clock); ``stop`` ends its play."""

    until: float
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lost: bool = False


class LeaseLost(Exception):
    """The host no longer knows it holds the seat's lease: the bot must not move."""


class _LeasedBot:
    """A bot that answers only while its host's lease is valid for a while yet."""

    def __init__(self, bot: Bot, lease: _Lease, margin_s: float) -> None:
        self.name = bot.name
        self._bot = bot
        self._lease = lease
        self._margin_s = margin_s

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        """The bot's move, if the lease still holds once it is chosen (the move is sent right after)."""
        move = self._bot.choose(view, legal)
        if self._lease.lost or time.monotonic() + self._margin_s > self._lease.until:
            raise LeaseLost("the seat's lease is not known to be held")
        return move

    def observe(self, event: Mapping[str, Any]) -> None:
        """Passed on."""
        self._bot.observe(event)


class _HouseClient(AsyncRefereeClient):
    """The SDK client, logging every move the referee refuses a house bot (none should be: the bots play legal
    moves, and one host plays each seat, so no NOT_YOUR_TURN nor a lost race)."""

    async def submit_move(self, game_id: str, move: engine.Move, **kwargs: Any) -> MoveResult:
        try:
            return await super().submit_move(game_id, move, **kwargs)
        except RefereeError as err:
            if not err.transient:
                log.warning("house bot move refused in game %s: %s %s", game_id, err.code.name, err.reason)
            raise


def _loggable(result: SeatResult) -> str:
    """Why a seat's play ended early, without what may name the bot's cards (RULES.md section 4): a refused
    move's message (its reason code instead), the text of an exception the bot raised (its type instead)."""
    why = result.forfeit_reason or "the play ended early"
    if result.rejections and why.startswith("move refused"):
        return f"move refused: {result.rejections[-1]}"
    head, raised, rest = why.partition(" raised ")
    return f"{head} raised {rest.partition('(')[0]}" if raised else why


def host_id() -> str:
    """A host's id in the leases: its machine, pid and a random part (a restarted host is another one)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class BotHost:
    """Plays registered bot seats against the referee at ``referee_address``; ``await run()`` until ``close()``."""

    def __init__(self, seats: BotSeats, referee_address: str, settings: HostSettings | None = None) -> None:
        self.seats = seats
        self.referee_address = referee_address
        self.settings = settings or HostSettings()
        self.holder = host_id()
        self.finished = 0  # seats played to the end of their match
        self.failures = 0  # seats whose play failed (tried again later)
        self.timeouts = 0  # of which: the bot took longer than move_timeout_s
        self._leases: dict[str, _Lease] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._retry_at: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._closed = asyncio.Event()
        self._client: AsyncRefereeClient | None = None

    @property
    def playing(self) -> list[str]:
        """The registry fields of the seats being played now."""
        return list(self._tasks)

    def wake(self) -> None:
        """Look at the registry now (a game with bot seats was just created here)."""
        self._wake.set()

    async def run(self) -> None:
        """Claim and play seats until ``close``."""
        renewer = asyncio.create_task(self._renew_forever())
        log.info("bot host %s: playing up to %d seats on %s", self.holder, self.settings.max_seats,
                 self.referee_address)  # fmt: skip
        try:
            while not self._closed.is_set():
                claiming = asyncio.ensure_future(self._claim_some())
                await _first_of(claiming, self._closed)  # a close does not wait for a Redis that does not answer
                if not claiming.done():
                    claiming.cancel()
                    await asyncio.gather(claiming, return_exceptions=True)
                    break
                error = claiming.exception()
                if isinstance(error, StoreUnavailable):
                    log.warning("bot host: the registry is unreachable (%s)", error)
                elif error is not None:
                    log.error("bot host: looking at the registry failed", exc_info=error)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.poll_s):
                        await _first(self._wake, self._closed)
        finally:
            renewer.cancel()
            await self._stop_all()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            if self._client is not None:
                await self._client.close()

    async def close(self) -> None:
        """Stop: the seats being played are stopped and their leases given up (another host takes them at once)."""
        self._closed.set()

    # ------------------------------------------------------------------------------------------ claiming

    async def _claim_some(self) -> None:
        """Claim the free seats of the registry, while below ``max_seats``: the bot seats of one game together or
        none of them (a game of bots only, half played by a host that is full, would wait for ever)."""
        cursor = 0
        now = time.monotonic()
        self._retry_at = {f: t for f, t in self._retry_at.items() if t > now}
        while len(self._tasks) < self.settings.max_seats:
            cursor, page = await self.seats.scan(cursor)
            games: dict[str, list[BotSeat]] = {}
            for seat in page:
                if seat.field not in self._tasks and seat.field not in self._retry_at:
                    games.setdefault(seat.game_id, []).append(seat)
            for group in games.values():
                if self._closed.is_set():
                    return
                if self._tasks and len(self._tasks) + len(group) > self.settings.max_seats:
                    continue  # perhaps a smaller one fits (an idle host takes what it can of a larger one)
                for seat in group[: self.settings.max_seats - len(self._tasks)]:
                    sent = time.monotonic()
                    if await self.seats.claim(seat.field, self.holder, self._lease_ms):
                        self._start(seat, sent)
            if cursor == 0:
                return

    @property
    def _lease_ms(self) -> int:
        return int(self.settings.lease_s * 1000)

    def _start(self, seat: BotSeat, sent: float) -> None:
        if self._client is None:  # made with the first seat: a referee without bot games has no client channel
            self._client = _HouseClient(self.referee_address)
        lease = self._leases[seat.field] = _Lease(until=sent + self.settings.lease_s)
        self._tasks[seat.field] = asyncio.create_task(self._play(seat, lease), name=f"bot-{seat.field}")
        log.info("bot host %s: playing %s (%s)", self.holder, seat.field, seat.bot)

    async def _play(self, seat: BotSeat, lease: _Lease) -> None:
        assert self._client is not None
        done = False  # the seat leaves the registry
        try:
            bot = _LeasedBot(make_bot(seat.bot), lease, margin_s=self.settings.lease_s / 2)
            result = await play_seat_async(
                self._client, seat.game_id, seat.token, bot, stop=lease.stop,
                move_timeout=self.settings.move_timeout_s,
            )  # fmt: skip
            done = self._ended(seat, lease, result)
        except RefereeError as err:
            if err.code in _GONE:
                log.info("bot host: game of %s is gone (%s); it leaves the registry", seat.field, err.reason)
                done = True
            else:
                # a refused move's message may name the bot's cards (RULES.md section 4): its reason code only
                self._failed(seat, f"{err.code.name} {err.reason}" + ("" if err.rejected_move else f": {err.message}"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a bot or in the runner: never the host's end
            log.exception("bot host: playing %s failed", seat.field)
            self._failed(seat, type(exc).__name__)  # not its text: it may name the bot's cards
        finally:
            self._tasks.pop(seat.field, None)
            self._leases.pop(seat.field, None)
            await self._let_go(seat, done, lease)

    def _ended(self, seat: BotSeat, lease: _Lease, result: SeatResult) -> bool:
        """What the end of a seat's play means: True when the seat leaves the registry."""
        if result.finished:
            self.finished += 1
            log.info("bot host: %s finished (%d moves)", seat.field, result.moves)
            return True
        if lease.lost or result.stopped or LeaseLost.__name__ in (result.forfeit_reason or ""):
            log.info("bot host %s: stopped playing %s (%s)", self.holder, seat.field,
                     "lease lost" if lease.lost else "host stopping")  # fmt: skip
            return False
        why = _loggable(result)
        self._failed(seat, why, timeout=why.startswith(TIMEOUT_FORFEIT))
        return False

    def _failed(self, seat: BotSeat, why: str, *, timeout: bool = False) -> None:
        self.failures += 1
        self.timeouts += timeout
        self._retry_at[seat.field] = time.monotonic() + self.settings.retry_s
        log.warning("bot host: %s failed (%s); tried again in %gs", seat.field, why, self.settings.retry_s)

    async def _let_go(self, seat: BotSeat, done: bool, lease: _Lease) -> None:
        try:
            if done:
                await self.seats.unregister(seat.game_id, [seat.seat])
            elif not lease.lost:
                await self.seats.release(seat.field, self.holder)
        except Exception as exc:  # the lease runs out by itself; a finished seat is found finished again
            log.warning("bot host: letting go of %s failed (%s)", seat.field, describe(exc))

    # ------------------------------------------------------------------------------------------ leases

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_s / 3)
            for name, lease in list(self._leases.items()):
                sent = time.monotonic()
                try:
                    held = await self.seats.renew(name, self.holder, self._lease_ms)
                except Exception as exc:  # Redis away: the lease runs down; the bot stops answering in time
                    log.warning("bot host: renewing the lease of %s failed (%s)", name, describe(exc))
                    if time.monotonic() > lease.until:
                        self._lose(name, lease)
                    continue
                if held:
                    lease.until = sent + self.settings.lease_s
                else:
                    self._lose(name, lease)

    def _lose(self, name: str, lease: _Lease) -> None:
        if not lease.lost:
            log.warning("bot host %s: lost the lease of %s; stops playing it", self.holder, name)
        lease.lost = True
        lease.stop.set()

    async def _stop_all(self) -> None:
        for lease in self._leases.values():
            lease.stop.set()
        tasks = list(self._tasks.values())
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=5.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _first_of(task: asyncio.Future[None], event: asyncio.Event) -> None:
    """Wait until ``task`` is done or ``event`` is set."""
    waiter: asyncio.Future[Any] = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


async def _first(*events: asyncio.Event) -> None:
    """Wait until one of ``events`` is set."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
