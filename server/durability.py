"""What the referee's Redis keeps across a crash, read once at start-up (`rummy-referee serve --durability`).

Redis persists in two ways: the append-only file (``appendonly yes``; ``appendfsync always`` writes every
acknowledged command to disk before answering, ``everysec`` once a second, ``no`` when the OS likes) and RDB
snapshots (``save "<seconds> <changes> ..."``: everything since the last snapshot can be lost). The referee acknowledges
a move once Redis has, so what an OS crash (or power loss) can take back follows from these settings.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

import redis.exceptions as rexc

log = logging.getLogger("rummy_referee")

Mode = Literal["warn", "strict"]
MODES: tuple[Mode, ...] = ("warn", "strict")


class DurabilityError(RuntimeError):
    """`--durability strict` and the Redis does not (or cannot be seen to) make every acknowledged move durable."""


@dataclass(frozen=True, slots=True)
class Persistence:
    """Redis's persistence settings: ``appendonly``, ``appendfsync`` and ``save`` as CONFIG GET gives them."""

    appendonly: str
    appendfsync: str
    save: str

    @property
    def aof(self) -> bool:
        return self.appendonly == "yes"

    @property
    def rdb(self) -> bool:
        return bool(self.save.strip())

    @property
    def every_move_durable(self) -> bool:
        """Whether an acknowledged move survives an OS crash: the append-only file, synced on every write."""
        return self.aof and self.appendfsync == "always"

    def describe(self) -> str:
        """The settings, and what an OS crash can then lose."""
        settings = f"appendonly {self.appendonly}, appendfsync {self.appendfsync}, save {self.save!r}"
        if self.every_move_durable:
            loss = "an OS crash loses no acknowledged move"
        elif self.aof and self.appendfsync == "everysec":
            loss = "an OS crash can lose up to about 1 s of acknowledged moves"
        elif self.aof:
            loss = "an OS crash can lose the acknowledged moves the OS had not yet written (often ~30 s)"
        elif self.rdb:
            loss = "an OS crash or a Redis crash loses every move since the last RDB snapshot"
        else:
            loss = "NO PERSISTENCE: a Redis restart loses every game"
        return f"{settings}: {loss}"


async def read_persistence(client: Any) -> Persistence:
    """CONFIG GET of the three settings (one at a time: Redis before 7 takes one pattern per CONFIG GET).
    Raises ``redis.exceptions.ResponseError`` when CONFIG is disabled or renamed (as on many managed Redis)."""
    values: dict[str, str] = {}
    for name in ("appendonly", "appendfsync", "save"):
        reply = await client.config_get(name)
        value = reply.get(name, reply.get(name.encode())) if isinstance(reply, dict) else None
        if value is None:
            raise rexc.ResponseError(f"CONFIG GET {name} gave no value")
        values[name] = value.decode() if isinstance(value, bytes) else str(value)
    return Persistence(**values)


async def check_durability(client: Any, mode: Mode, timeout_s: float = 5.0) -> Persistence | None:
    """Log what the Redis keeps across a crash: a WARNING when nothing at all (or when it cannot be told), INFO
    otherwise. ``mode="strict"`` raises DurabilityError unless every acknowledged move is durable (append-only
    file with ``appendfsync always``), including when the settings cannot be read. Returns the settings, if read."""
    try:
        async with asyncio.timeout(timeout_s):
            persistence = await read_persistence(client)
    except (rexc.RedisError, OSError, TimeoutError) as exc:
        why = str(exc) or f"no answer within {timeout_s}s"
        reason = f"could not check Redis's persistence settings (CONFIG GET: {why})"
        if mode == "strict":
            need = "--durability strict needs to see appendonly yes, appendfsync always"
            raise DurabilityError(f"{reason}; {need}") from None
        log.warning("%s: durability unknown", reason)
        return None
    if mode == "strict" and not persistence.every_move_durable:
        raise DurabilityError(
            f"--durability strict needs Redis with appendonly yes and appendfsync always, this one has "
            f"{persistence.describe()}"
        )
    if persistence.aof or persistence.rdb:
        log.info("storage durability: %s", persistence.describe())
    else:
        log.warning("storage durability: %s", persistence.describe())
    return persistence
