"""The registry of house-bot seats in Redis, and the leases by which bot hosts claim them.

A seat given to a house bot at CreateGame (``SeatSpec.bot``) is registered here with its token: the bot host
plays it through the public API like any client, and needs the token for that. So Redis holds the bot seats'
tokens in the clear (as it holds every hand); nothing else of the registry is secret.

- ``referee:bots`` (a hash, in its own Cluster slot: no game script touches it): field ``<game id>:<seat>``,
  value JSON ``{"game_id", "seat", "bot", "token"}``. Written by CreateGame before the game itself; an entry
  leaves when the match is over or the game is gone (the host that finds out removes it).
- ``referee:bot-lease:<game id>:<seat>`` (a string, its own slot): the id of the host playing that seat. Taken
  with ``SET NX PX``, renewed by its holder only (``server/lua/bot_lease.lua``, one key: any Cluster node runs
  it), given up by its holder when it stops. A host that dies loses its claims when the lease runs out, and
  another host takes them over.

Nothing here touches a game's keys: the registry and the leases could live in another Redis.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from server.store import RedisClient, _redis_errors

REGISTRY_KEY = "referee:bots"
LEASE_PREFIX = "referee:bot-lease:"
#: The bots a seat can be given (clients.bots.make_bot's names; a test checks that they agree).
HOUSE_BOTS = ("random", "gin", "rummy", "strong")


@dataclass(frozen=True, slots=True)
class BotSeat:
    """One registered bot seat: the game, the seat, the bot's name, and the seat's token."""

    game_id: str
    seat: int
    bot: str
    token: str

    @property
    def field(self) -> str:
        """Its field in the registry (and the tail of its lease key)."""
        return f"{self.game_id}:{self.seat}"

    def __repr__(self) -> str:  # never the token, in a log or a traceback
        return f"BotSeat({self.field}, {self.bot})"


class BotSeats:
    """The registry and the leases, in one Redis (or Redis Cluster)."""

    def __init__(
        self,
        client: RedisClient,
        *,
        op_timeout_s: float = 5.0,
        key: str = REGISTRY_KEY,
        lease_prefix: str = LEASE_PREFIX,
    ) -> None:
        self.client = client
        self.op_timeout_s = op_timeout_s
        self.key = key
        self.lease_prefix = lease_prefix
        source = resources.files("server").joinpath("lua", "bot_lease.lua").read_text(encoding="utf-8")
        self._lease = client.register_script(source)

    def lease_key(self, field: str) -> str:
        """The lease key of a registry field."""
        return self.lease_prefix + field

    async def register(self, seats: list[BotSeat]) -> None:
        """Add bot seats to the registry."""
        if not seats:
            return
        mapping = {
            s.field: json.dumps({"game_id": s.game_id, "seat": s.seat, "bot": s.bot, "token": s.token}) for s in seats
        }
        async with _redis_errors(self.op_timeout_s):
            await self.client.hset(self.key, mapping=mapping)  # type: ignore[arg-type]

    async def unregister(self, game_id: str, seats: list[int]) -> None:
        """Take seats of a game out of the registry (the match is over, the game is gone, or its creation failed),
        and drop their leases."""
        if not seats:
            return
        fields = [f"{game_id}:{seat}" for seat in seats]
        async with _redis_errors(self.op_timeout_s):
            await self.client.hdel(self.key, *fields)
            for field in fields:  # one key per command: each lease key may be in a slot of its own
                await self.client.delete(self.lease_key(field))

    async def scan(self, cursor: int = 0, count: int = 200) -> tuple[int, list[BotSeat]]:
        """One page of the registry (HSCAN): the next cursor (0: done) and the seats."""
        async with _redis_errors(self.op_timeout_s):
            reply: Any = await self.client.hscan(self.key, cursor, count=count)
        next_cursor, entries = reply
        seats = []
        for raw in entries.values():
            try:
                d = json.loads(raw)
                seats.append(BotSeat(str(d["game_id"]), int(d["seat"]), str(d["bot"]), str(d["token"])))
            except (ValueError, KeyError, TypeError):
                continue  # not one of ours: left alone
        return int(next_cursor), seats

    async def all(self) -> list[BotSeat]:
        """Every registered seat (for tests and tools; a host pages with ``scan``)."""
        cursor, seats = await self.scan(0)
        while cursor:
            cursor, more = await self.scan(cursor)
            seats += more
        return seats

    async def claim(self, field: str, holder: str, lease_ms: int) -> bool:
        """Take the lease of a seat for ``lease_ms`` (SET NX PX): whether ``holder`` now has it."""
        async with _redis_errors(self.op_timeout_s):
            return bool(await self.client.set(self.lease_key(field), holder, nx=True, px=lease_ms))

    async def renew(self, field: str, holder: str, lease_ms: int) -> bool:
        """Extend ``holder``'s lease of a seat to ``lease_ms`` from now: False when it is not (any more) theirs."""
        async with _redis_errors(self.op_timeout_s):
            return bool(await self._lease(keys=[self.lease_key(field)], args=[holder, "renew", lease_ms]))

    async def release(self, field: str, holder: str) -> bool:
        """Give up ``holder``'s lease of a seat (another host may take it at once)."""
        async with _redis_errors(self.op_timeout_s):
            return bool(await self._lease(keys=[self.lease_key(field)], args=[holder, "release", 0]))

    async def holder(self, field: str) -> str | None:
        """Who holds a seat's lease now (None: nobody)."""
        async with _redis_errors(self.op_timeout_s):
            value = await self.client.get(self.lease_key(field))
        return value.decode() if isinstance(value, bytes) else value
