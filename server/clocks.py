"""Time controls: the clock of a game in Redis, the sharded index of due deadlines, and the firer of timeouts.

The authority is the game hash's field ``clock`` (one short text, written only by the scripts, with Redis TIME):
``K,A,B,P,N,started,deadline,seat,r0,a0,r1,a1,...``: the time control (K 1 per_move with A the limit, 2 clock
with A the initial time and B the increment, 3 bank with A the allowance and B the bank), the timeout policy (P 1
forfeit_match, 2 auto_move; N the automatic moves allowed in a row), the running decision (started and deadline in
ms since the epoch, Redis's clock; seat -1 and both 0 when no clock runs) and each seat's time left and automatic
moves in a row. commit_move.lua refuses a seat's move once its deadline has passed and updates the clock in the
commit; a timeout is committed by the same script, at the game's version, so a move and its timeout never both
apply.

The index (``referee:deadlines:{N}``, N = crc32(game id) mod 16: sixteen sorted sets with their own hash tags, so
they spread over a Cluster's nodes) is a hint that is never later than the truth: before any write that may start
a decision, the writer adds the game with ``ZADD LT`` at a lower bound of the new deadline (``lower_bound``) and
raises the game's mark in ``referee:deadlines:{N}:v`` to the version it is about to commit; only then the commit.
A crash between the two leaves an early entry, never a missing one. While a decision runs, its game has an entry
no later than its deadline; so a commit whose next deadline cannot be earlier than the running one (a limit per
move, passed from seat to seat: the usual case) writes nothing to the index. The firer of every ``serve``
process polls the shards; an entry due by then is checked against the game hash: due, it fires (the engine says
which move, engine.timeouts); not due, the entry is raised to the true deadline; no clock running, it is dropped.
Raising and dropping are compare-and-set (``_SETTLE``): refused when the entry's score changed or when the mark
says a commit newer than the version read may be on its way, so the index never ends up later than a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

import redis.asyncio as aioredis

from engine.timeouts import AUTO_MOVE, DEFAULT_MAX_AUTO_MOVES, FORFEIT_MATCH
from engine.views import ClockDict
from server.errors import describe
from server.settings import DEFAULTS

if TYPE_CHECKING:
    from server.service import Referee
    from server.store import GameStore

log = logging.getLogger("rummy_referee")
#: the poll's jitter (its own generator: the process's global one is its code's, e.g. a test framework's)
_JITTER = random.Random()

SHARDS = 16
MAX_MS = 86_400_000  # the longest duration of a time control: a day
MAX_AUTO = 1000
KINDS = {"per_move": 1, "clock": 2, "bank": 3}
KIND_NAMES = {v: k for k, v in KINDS.items()}
POLICY_CODES = {FORFEIT_MATCH: 1, AUTO_MOVE: 2}
POLICY_NAMES = {v: k for k, v in POLICY_CODES.items()}
FAR_VERSION = 2**53  # "any version": a game that is gone can no longer be committed to
GONE_AFTER_MS = 60_000  # an entry of a game not found is dropped once this far past (before: being created)

# The index write before a commit (one slot: the shard's two keys). ZADD LT also adds a missing member.
INDEX_SCRIPT = """
redis.call("ZADD", KEYS[1], "LT", ARGV[1], ARGV[2])
local m = tonumber(redis.call("HGET", KEYS[2], ARGV[2]) or "-1")
if tonumber(ARGV[3]) > m then
  redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
end
return 1
"""

# The firer's compare-and-set: raise the entry to ARGV[4] (or drop it: ARGV[4] "") only when its score is still
# ARGV[2] and no commit beyond version ARGV[3] (the version the firer read) has announced itself.
_SETTLE = """
local score = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then
  return 0
end
local m = tonumber(redis.call("HGET", KEYS[2], ARGV[1]) or "-1")
if m > tonumber(ARGV[3]) then
  return 0
end
if ARGV[4] == "" then
  redis.call("ZREM", KEYS[1], ARGV[1])
  redis.call("HDEL", KEYS[2], ARGV[1])
else
  redis.call("ZADD", KEYS[1], "XX", ARGV[4], ARGV[1])
end
return 1
"""


class NotDue(Exception):
    """A timeout's commit found the deadline not passed yet in Redis's clock (nothing written)."""

    def __init__(self, deadline: int) -> None:
        super().__init__(f"due at {deadline} ms")
        self.deadline = deadline


def shard_of(game_id: str) -> int:
    """The index shard of a game."""
    return zlib.crc32(game_id.encode()) % SHARDS


def shard_keys(shard: int) -> list[str]:
    """The shard's sorted set (game id -> deadline hint, ms) and its hash of marks (game id -> version)."""
    return [f"referee:deadlines:{{{shard}}}", f"referee:deadlines:{{{shard}}}:v"]


class TimeControlDict(TypedDict):
    """``TimeControl.to_dict``: a game's settings' time control."""

    kind: str
    a: int
    b: int
    policy: str
    max_auto_moves: int


class ClockFields(TypedDict, total=False):
    """The clock fields of a view (``view_fields``): every seat's clock (always), and the deadline while a
    decision is timed (not required, like the view's keys they update)."""

    clocks: list[ClockDict]
    deadline_ms: int | None


@dataclass(frozen=True, slots=True)
class TimeControl:
    """A game's time control and timeout policy, as CreateGame gave them (validated by ``checked``)."""

    kind: str  # per_move, clock or bank
    a: int  # per_move: the limit; clock: the initial time; bank: the allowance (ms)
    b: int = 0  # clock: the increment; bank: the bank (ms)
    policy: str = FORFEIT_MATCH
    max_auto_moves: int = DEFAULT_MAX_AUTO_MOVES

    def checked(self) -> TimeControl:
        """This time control, or BadRequest INVALID_TIME_CONTROL."""
        from server.errors import BadRequest

        if self.kind not in KINDS:
            raise BadRequest("INVALID_TIME_CONTROL", f"no time control kind {self.kind!r}")
        if not 1 <= self.a <= MAX_MS:
            raise BadRequest("INVALID_TIME_CONTROL", f"a time control's durations are 1..{MAX_MS} ms")
        low = 0 if self.kind == "clock" else 1
        if self.kind != "per_move" and not low <= self.b <= MAX_MS:
            raise BadRequest("INVALID_TIME_CONTROL", f"a time control's durations are {low}..{MAX_MS} ms")
        if self.policy not in POLICY_CODES:
            raise BadRequest("INVALID_TIME_CONTROL", f"no timeout policy {self.policy!r}")
        if not 1 <= self.max_auto_moves <= MAX_AUTO:
            raise BadRequest("INVALID_TIME_CONTROL", f"max_auto_moves is 1..{MAX_AUTO} (0: the default)")
        return self

    def initial(self) -> int:
        """Each seat's time left at the start (per_move: the limit)."""
        return self.b if self.kind == "bank" else self.a

    def stored(self, players: int) -> str:
        """The ``clock`` field of a new game, its clock not yet running (create_game.lua starts it)."""
        b = self.b if self.kind != "per_move" else 0
        head = f"{KINDS[self.kind]},{self.a},{b},{POLICY_CODES[self.policy]},{self.max_auto_moves},0,0,-1"
        return head + f",{self.initial()},0" * players

    def to_dict(self) -> TimeControlDict:
        """Settings form: the time control and the pinned policy."""
        return {"kind": self.kind, "a": self.a, "b": self.b, "policy": self.policy,
                "max_auto_moves": self.max_auto_moves}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Clock:
    """A parsed ``clock`` field."""

    control: TimeControl
    started: int
    deadline: int
    seat: int  # the seat whose decision is timed, -1: none
    remaining: tuple[int, ...]
    autos: tuple[int, ...]

    def budget(self, seat: int) -> int:
        """The time ``seat``'s next decision gets (its clock's remaining time as now stored)."""
        k = self.control
        if k.kind == "per_move":
            return k.a
        if k.kind == "clock":
            return self.remaining[seat]
        return k.a + self.remaining[seat]

    def lower_bound(self, next_seat: int, now_ms: int) -> int:
        """A time no later than the deadline of ``next_seat``'s decision if it starts with a commit made at
        ``now_ms`` or later (Redis's clock) on top of this clock."""
        k = self.control
        if next_seat != self.seat or self.seat < 0:
            return max(now_ms, self.started) + self.budget(next_seat)
        # the same seat decides again: its own time is spent by this commit
        if k.kind == "per_move":
            return max(now_ms, self.started) + k.a
        if k.kind == "clock":
            return self.deadline + k.b  # now + (remaining - (now - started) + increment)
        now = max(now_ms, self.started)
        spent = now - self.started
        return now + k.a + self.remaining[self.seat] - max(0, spent - k.a)


_PARSED: dict[bytes, Clock] = {}
_CONTROLS: dict[bytes, TimeControl] = {}
_VIEWS: dict[bytes, ClockFields] = {}
_MEMO_MAX = DEFAULTS.caches.clock_memo_entries  # entries of each: set by configure (server.app, the settings')


def configure(entries: int = DEFAULTS.caches.clock_memo_entries) -> None:
    """Bound each of the parse memos to ``entries`` (the settings' ``caches.clock_memo_entries``; the factory,
    server.app ``build_referee``, calls it); the memos are emptied."""
    global _MEMO_MAX
    if entries < 1:
        raise ValueError(f"the clock memos hold 1 entry or more, not {entries}")
    _MEMO_MAX = entries
    _PARSED.clear()
    _CONTROLS.clear()
    _VIEWS.clear()


def memo_sizes() -> tuple[int, int, int]:
    """The entries held now by the parse memos (parsed clocks, time controls, view fields): for tests."""
    return len(_PARSED), len(_CONTROLS), len(_VIEWS)


def parse_clock(text: bytes | str) -> Clock:
    """The ``clock`` field parsed (remembered: a move's commit and its answer's view parse the same text)."""
    raw = text.encode() if isinstance(text, str) else text
    clock = _PARSED.get(raw)
    if clock is None:
        parts = raw.split(b",")
        key = b",".join(parts[:5])
        control = _CONTROLS.get(key)
        if control is None:
            if len(_CONTROLS) >= _MEMO_MAX:
                _CONTROLS.clear()
            c = [int(x) for x in parts[:5]]
            control = _CONTROLS[key] = TimeControl(KIND_NAMES[c[0]], c[1], c[2], POLICY_NAMES[c[3]], c[4])
        n = [int(x) for x in parts[5:]]
        clock = Clock(control, n[0], n[1], n[2], tuple(n[3::2]), tuple(n[4::2]))
        if len(_PARSED) >= _MEMO_MAX:
            _PARSED.clear()
        _PARSED[raw] = clock
    return clock


def _tail(tail: bytes) -> tuple[int, int, int, int, int, int, list[int]]:
    """A clock tail's stopped seat, time spent, commit time, next decision's start, deadline and seat, and the
    seats' (remaining, autos) pairs, flat."""
    f = [int(x) for x in tail[1:].split(b",")]
    stopped, spent, now, ahead, seat = f[:5]
    if seat < 0:
        return stopped, spent, now, 0, 0, seat, f[5:]
    return stopped, spent, now, now, now + ahead, seat, f[5:]


def clock_after(before: bytes, tail: bytes) -> bytes:
    """The ``clock`` field after a commit whose log tail is ``tail`` (commit_move.lua), from the one before."""
    head = before.split(b",", 5)[:5]
    _, _, _, started, deadline, seat, rest = _tail(tail)
    return b",".join([*head, b"%d,%d,%d" % (started, deadline, seat), *(b"%d" % x for x in rest)])


def clocks_list(remaining: tuple[int, ...], autos: tuple[int, ...], seat: int, started: int,
                deadline: int) -> list[ClockDict]:  # fmt: skip
    """Every seat's clock as views and events give it (GameView.clocks)."""
    out: list[ClockDict] = []
    for i, (r, a) in enumerate(zip(remaining, autos, strict=True)):
        d: ClockDict = {"seat": i, "remaining_ms": r, "running": i == seat, "auto_moves": a}
        if i == seat:
            d["started_ms"] = started
            d["deadline_ms"] = deadline
        out.append(d)
    return out


def view_fields(clock_text: bytes) -> ClockFields:
    """The clock fields of a view (``clocks``, ``deadline_ms`` while a decision is timed); remembered, shared:
    never change the result."""
    fields = _VIEWS.get(clock_text)
    if fields is None:
        c = parse_clock(clock_text)
        made: ClockFields = {"clocks": clocks_list(c.remaining, c.autos, c.seat, c.started, c.deadline)}
        if c.seat >= 0:
            made["deadline_ms"] = c.deadline
        if len(_VIEWS) >= _MEMO_MAX:
            _VIEWS.clear()
        _VIEWS[clock_text] = fields = made
    return fields


def after_commit(before: bytes, tail: bytes) -> tuple[bytes, list[dict[str, Any]]]:
    """The ``clock`` field after a commit (from the one before and the commit's tail) and the commit's clock
    events, from one parse; the new field's view fields are remembered (``view_fields``) on the way."""
    stopped, spent, now, started, deadline, seat, rest = _tail(tail)
    head = before.split(b",", 5)[:5]
    text = b",".join([*head, b"%d,%d,%d" % (started, deadline, seat), *(b"%d" % x for x in rest)])
    remaining, autos = tuple(rest[0::2]), tuple(rest[1::2])
    clocks = clocks_list(remaining, autos, seat, started, deadline)
    fields: ClockFields = {"clocks": clocks}
    if seat >= 0:
        fields["deadline_ms"] = deadline
    if len(_VIEWS) >= _MEMO_MAX:
        _VIEWS.clear()
    _VIEWS[text] = fields
    control = parse_clock(before).control
    if len(_PARSED) >= _MEMO_MAX:
        _PARSED.clear()
    _PARSED[text] = Clock(control, started, deadline, seat, remaining, autos)  # the next commit's "before"
    return text, _clock_events(stopped, spent, now, started, deadline, seat, remaining, clocks)


def tail_events(tail: bytes) -> list[dict[str, Any]]:
    """The clock events of a log entry's clock tail (``engine.Event.to_dict`` form, all public): clock_stopped
    for the seat whose decision ended (with the time it spent, its time left and the commit's time), then
    clock_started for the seat to act next (its decision's start, deadline and time left)."""
    stopped, spent, now, started, deadline, seat, rest = _tail(tail)
    remaining, autos = tuple(rest[0::2]), tuple(rest[1::2])
    clocks = clocks_list(remaining, autos, seat, started, deadline)
    return _clock_events(stopped, spent, now, started, deadline, seat, remaining, clocks)


def _clock_events(stopped: int, spent: int, now: int, started: int, deadline: int, seat: int,
                  remaining: tuple[int, ...], clocks: list[ClockDict]) -> list[dict[str, Any]]:  # fmt: skip
    events: list[dict[str, Any]] = []
    if stopped >= 0:  # every seat's clocks come with the clock_started that follows, or here when none does
        public: dict[str, Any] = {"spent_ms": spent, "remaining_ms": remaining[stopped], "at_ms": now}
        if seat < 0:
            public["clocks"] = clocks
        events.append({"kind": "clock_stopped", "seat": stopped, "public": public, "secret": None,
                       "secret_for": None})  # fmt: skip
    if seat >= 0:
        public = {"started_ms": started, "deadline_ms": deadline, "remaining_ms": remaining[seat], "clocks": clocks}
        events.append({"kind": "clock_started", "seat": seat, "public": public, "secret": None,
                       "secret_for": None})  # fmt: skip
    return events


def merged(events: list[Any], clock_events: list[Any]) -> list[Any]:
    """A version's events with its clock events: last, but before a final match_ended (a watch ends with it)."""
    if events and _kind(events[-1]) == "match_ended":
        return [*events[:-1], *clock_events, events[-1]]
    return [*events, *clock_events]


def _kind(event: Any) -> str:
    return str(event["kind"] if isinstance(event, dict) else event.kind)


def step(op: str, next_seat: int, chain: bool = False) -> str:
    """commit_move.lua's ARGV[10]."""
    return f"{op},{next_seat},{1 if chain else 0}"


# ----------------------------------------------------------------------------------------------- the firer


@dataclass(slots=True)
class FirerStats:
    """What the firer did (tests and the metrics read them)."""

    fired: dict[str, int]
    checked: int = 0
    raised: int = 0
    dropped: int = 0


class TimeoutFirer:
    """The background task of each ``serve`` process that fires expired deadlines (module docstring).

    Every ``poll_s`` (plus up to 25% jitter, so that several referees do not poll in step) it reads the entries
    of all shards due before the next poll (one pipelined round trip on a standalone Redis), and handles each game
    in a task that first sleeps until the entry's time
    of its own (at most ``concurrency`` at once; the firer's own reads and writes of the index go through a
    client of its own, its loads and commits through the store's pipelined hot path, so that it never holds the
    pool's connections that requests wait for; a game already in hand is not taken twice by this process; two
    processes may both try: the version-checked commit lets one of them win, the other finds a conflict)."""

    def __init__(
        self,
        referee: Referee,
        *,
        poll_s: float = 0.1,
        batch: int = 200,
        concurrency: int = 64,
        on_fired: Callable[[str, float], None] | None = None,
    ) -> None:
        self.referee = referee
        # the deadline index lives in the same Redis: the firer is a part of the Redis adapter
        self.store = cast("GameStore", referee.store)
        self.poll_s = poll_s
        self.batch = batch
        self._slots = asyncio.Semaphore(concurrency)
        self._busy: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._client = self.store.own_client()
        self.on_fired = on_fired  # (policy, lateness in seconds) of each timeout fired by this process
        self.stats = FirerStats(fired={FORFEIT_MATCH: 0, AUTO_MOVE: 0})
        self._stop = asyncio.Event()
        self._offset_ms: int | None = None

    async def run(self) -> None:
        """Poll until ``close``; Redis errors are logged and the polling goes on."""
        while not self._stop.is_set():
            try:
                await self.poll_once()
            except Exception as exc:
                log.warning("timeout firer: %s", describe(exc))
            delay = self.poll_s * (1 + 0.25 * _JITTER.random())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)

    async def close(self) -> None:
        """Stop polling and wait for the games in hand."""
        self._stop.set()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._client is not self.store.client:
            await self._client.aclose()

    async def poll_once(self) -> int:
        """Read every shard's due entries once and start handling them; the number of entries found."""
        horizon = self._now() + int(self.poll_s * 1000)  # due before the next poll: taken now, each awaited
        standalone = isinstance(self._client, aioredis.Redis)
        pipe = self._client.pipeline(transaction=False)
        if standalone:
            pipe.time()  # Redis's clock, read with the shards: what "due" means here
        for shard in range(SHARDS):
            pipe.zrangebyscore(shard_keys(shard)[0], "-inf", horizon, start=0, num=self.batch, withscores=True)
        async with asyncio.timeout(self.store.op_timeout_s * 2):
            if not standalone:
                self._set_offset(await self._client.time())
            replies = await pipe.execute()
        if standalone:
            self._set_offset(replies.pop(0))
        found = 0
        for shard, entries in enumerate(replies):
            for member, score in entries:
                game_id = member.decode() if isinstance(member, bytes) else str(member)
                found += 1
                if game_id in self._busy:
                    continue
                self._busy.add(game_id)
                task = asyncio.create_task(self._handle(shard, game_id, int(score)))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        return found

    def _set_offset(self, reply: Any) -> None:
        # Redis's clock minus ours, as of the reply: a little early (the reply's way back), never much off
        seconds, micros = reply
        self._offset_ms = int(seconds) * 1000 + int(micros) // 1000 - local_ms()

    def _now(self) -> int:
        """Redis's clock now, as the last poll measured it (ms)."""
        if self._offset_ms is None:
            return self.store.redis_now_ms()
        return local_ms() + self._offset_ms

    async def _handle(self, shard: int, game_id: str, score: int) -> None:
        try:
            wait_s = min((score - self._now()) / 1000, self.poll_s * 2)
            if wait_s > 0:
                await asyncio.sleep(wait_s)
            async with self._slots:
                for _ in range(8):  # a conflict (the seat moved meanwhile): look again
                    if not await self._check(shard, game_id, score):
                        return
                    # the score may have moved: read it again
                    raw = await self._client.zscore(shard_keys(shard)[0], game_id)
                    if raw is None:
                        return
                    score = int(raw)
        except Exception as exc:
            log.warning("timeout of game %s not handled: %s", game_id, describe(exc))
        finally:
            self._busy.discard(game_id)

    async def _settle_entry(self, shard: int, game_id: str, score: int, version: int, new: int | None) -> None:
        done = await self.store.eval(_SETTLE, shard_keys(shard), [game_id, score, version, "" if new is None else new])
        if done:
            if new is None:
                self.stats.dropped += 1
            else:
                self.stats.raised += 1

    async def _check(self, shard: int, game_id: str, score: int) -> bool:
        """Handle one due entry: True when it should be looked at again (a commit raced this one)."""
        self.stats.checked += 1
        game = await self.store.load(game_id)
        if game is None:
            # a game being created writes its entry first: only an entry a minute past is a game gone for good
            if score < self._now() - GONE_AFTER_MS:
                await self._settle_entry(shard, game_id, score, FAR_VERSION, None)
            return False
        if not game.clock:
            await self._settle_entry(shard, game_id, score, game.version, None)
            return False
        clock = parse_clock(game.clock)
        if clock.seat < 0:
            await self._settle_entry(shard, game_id, score, game.version, None)
            return False
        if clock.deadline > self._now() + 5:
            await self._settle_entry(shard, game_id, score, game.version, clock.deadline)
            return False
        outcome = await self.referee.fire_timeout(game, clock)
        if outcome is None:  # fired
            return False
        if outcome is False:  # not due yet in Redis's clock (ours runs a little ahead): look again in a moment
            await asyncio.sleep(0.005)
        return True  # (or a conflict: the game moved on, look again)


def fired_lateness(events: Iterable[Mapping[str, Any]], deadline: int) -> float | None:
    """Seconds between a timeout's deadline and its commit, from the commit's clock_stopped event (as a viewer
    sees it)."""
    for e in events:
        if e["kind"] == "clock_stopped":
            return max(0.0, (int(e["at_ms"]) - deadline) / 1000)
    return None


def local_ms() -> int:
    """This process's clock, ms since the epoch."""
    return int(time.time() * 1000)
