"""Fan-out benchmark: many WatchGame streams over many games on one referee while bots play, through the real
referee and a real Redis; checks that every stream gets every event once and in order.

Set-up: a private redis-server (appendonly, `appendfsync everysec`, on a Unix socket, as the zero-setup `serve`
runs it) and one `rummy-referee serve` process over it. This process creates `--games` Gin games (spectators
allowed) and opens `--watchers` WatchGame streams on each (seat 0, seat 1, then spectators), over `--channels`
gRPC connections, and waits until every stream has its snapshot. Then one coroutine per game plays both seats
(SubmitMove with expected_version, the next move decided from the previous response, as bench/service.py does),
pacing the games so that all together make about `--rate` moves per second, for `--seconds`. Then it waits until
every stream has every event up to its game's last version, and compares each stream with the game's stored log
(GetReplay, organizer token): the events after the stream's snapshot, each once, in order.

Figures: `fanout_p99_ms` is commit to delivery: from the moment this process has the SubmitMove answer to each
watcher's receipt of each event of that move (0 when the event arrives first), the 99th percentile over every
delivery. `redis_connections` is the most connections the referee held to Redis (`CLIENT LIST` sampled every
0.2 s during the run, this process's own connection left out: the Redis is private to the bench).
`fanout_streams_failed` counts the streams that ended with an error, or whose events differ from the log.

    python bench/fanout.py [--games 200] [--watchers 5] [--seconds 10] [--rate 100] [--channels 10]
    python bench/fanout.py --cluster --processes 2 --streams 5000   # 1,000 games, two referees, six-node cluster

Across processes and shards: `--cluster` runs the referees on a private six-node Redis Cluster (three masters,
one replica each: server/redis_cluster.py, `appendfsync everysec`) instead of one redis-server; `--processes N`
starts N referees, game i created and played on referee i mod N and stream n opened on referee n mod N (so most
games are followed by every process, and a move committed by one is delivered by the others); `--streams S` sets
the number of games to S / `--watchers`. On a cluster the connections are counted per referee process: on every
node, `CLIENT LIST`'s addresses matched with the TCP connections of each referee's pid (psutil);
`redis_connections` is then the most any one process held, `redis_connections_by_process` each one's most (on
one redis-server, `redis_connections` counts every referee's together).

Debugging aids: FANOUT_DUMP=<file> writes every delivery (answer time, latency, game, version, watcher) as JSON;
FANOUT_PROFILE=<file> runs the referee under cProfile; FANOUT_LOG=<file> appends the referees' logs to it.

Human-readable lines first; the last line is one JSON object: fanout_streams_failed, fanout_p99_ms,
redis_connections, and more (streams, games, moves, deliveries, fanout_p50_ms, fanout_max_ms, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import _boot  # first of the project's imports: the repository root on sys.path

_boot.need_project()

import grpc  # noqa: E402

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

import psutil  # noqa: E402
import redis.asyncio as aioredis  # noqa: E402

from rummy_pb.rummy.v1 import game_pb2 as pb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2 as rpb  # noqa: E402
from rummy_pb.rummy.v1 import referee_pb2_grpc  # noqa: E402
from server.events import channel  # noqa: E402
from server.redis_cluster import LocalCluster, start_cluster  # noqa: E402
from server.redis_launcher import start_redis  # noqa: E402

ORGANIZER = "bench-organizer"
DRAW = pb.Move(draw_stock=pb.Move.DrawStock())
DECLARE = pb.Move(declare=pb.Move.Declare(best=True))
PASS = pb.Move(pass_turn=pb.Move.PassTurn())
KNOCKS = ("knock", "big_gin")
ORGANIZER_MD = (("authorization", f"Bearer {ORGANIZER}"),)

Position = tuple[int, int]
OPEN_BATCH = 250  # streams opened at once


@dataclass
class Game:
    """One game: its tokens, the driver's latest view, and when each version's answer arrived."""

    game_id: str
    tokens: dict[int, str]
    spectator: str
    view: pb.GameView = field(default_factory=pb.GameView)
    answered: dict[int, float] = field(default_factory=dict)
    moves: int = 0
    move_errors: int = 0

    def md(self, seat: int) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.tokens[seat]}"),)


@dataclass
class Stream:
    """One WatchGame stream: its snapshot's version, what it received and when, how it ended."""

    game: Game
    token: str
    snapshot_version: int = -1
    received: list[Position] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    error: str = ""
    ended: bool = False  # after match_ended

    @property
    def last_version(self) -> int:
        return self.received[-1][0] if self.received else self.snapshot_version


def next_move(view: pb.GameView, rng: random.Random) -> tuple[int, pb.Move]:
    """Both seats of a Gin game from the mover's responses alone (as bench/service.py's GameDriver)."""
    seat = view.to_act
    if view.phase == pb.PHASE_DRAW:
        return seat, DRAW
    if view.phase == pb.PHASE_LAYOFF:
        return seat, DECLARE
    if view.phase in (pb.PHASE_TAKE_OR_PASS, pb.PHASE_LAST_CARD):
        return seat, PASS
    moves = view.legal_moves
    assert view.viewer_seat == seat and moves, "the mover's own response lists its next moves"
    knock = next((m for m in moves if m.WhichOneof("move") in KNOCKS), None)
    return seat, knock or moves[rng.randrange(len(moves))]


async def watch(stub: referee_pb2_grpc.RefereeServiceStub, stream: Stream, opened: asyncio.Event) -> None:
    """Read one stream until the match ends, the call is cancelled or fails."""
    call = stub.WatchGame(rpb.WatchGameRequest(game_id=stream.game.game_id),
                          metadata=(("authorization", f"Bearer {stream.token}"),))  # fmt: skip
    try:
        async for message in call:
            if message.WhichOneof("update") == "snapshot":
                stream.snapshot_version = message.snapshot.version
                opened.set()
                continue
            stream.times.append(time.perf_counter())
            stream.received.append((message.event.version, message.event.index))
            if message.event.kind == "match_ended":
                stream.ended = True
    except asyncio.CancelledError:
        call.cancel()
        raise
    except grpc.aio.AioRpcError as exc:
        stream.error = f"{exc.code().name}: {exc.details()} (after {len(stream.received)} events)"
    finally:
        opened.set()


async def play(stub: referee_pb2_grpc.RefereeServiceStub, game: Game, interval: float, stop_at: float,
               rng: random.Random) -> None:  # fmt: skip
    """Moves of both seats, one every ``interval`` seconds on average, until ``stop_at`` or the match ends."""
    got = await stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=game.md(0))
    game.view = got.view
    await asyncio.sleep(rng.random() * interval)  # the games' moves spread over time
    while time.perf_counter() < stop_at and game.view.phase != pb.PHASE_MATCH_OVER:
        seat, move = next_move(game.view, rng)
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move, expected_version=game.view.version)
        try:
            response = await stub.SubmitMove(request, metadata=game.md(seat))
        except grpc.aio.AioRpcError:
            game.move_errors += 1
            got = await stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=game.md(0))
            game.view = (
                got.view
                if got.view.to_act == 0
                else (
                    await stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=game.md(got.view.to_act))
                ).view
            )
        else:
            game.answered[response.version] = time.perf_counter()
            game.view = response.view
            game.moves += 1
        await asyncio.sleep(interval * (0.5 + rng.random()))


async def stored_positions(stub: referee_pb2_grpc.RefereeServiceStub, game: Game) -> list[Position]:
    """Positions of every event of the game's moves, from its stored log."""
    positions: list[Position] = []
    request = rpb.GetReplayRequest(game_id=game.game_id)
    while True:
        page = await stub.GetReplay(request, metadata=ORGANIZER_MD)
        positions += [(e.version, e.index) for e in page.events if e.version]
        if not page.HasField("next_after_version"):
            return positions
        request = rpb.GetReplayRequest(game_id=game.game_id, after_version=page.next_after_version)


async def count_connections(redis_url: str, samples: list[int], stop: asyncio.Event) -> None:
    """Every 0.2 s until ``stop``: the connections to the (private) Redis other than this one."""
    admin = aioredis.Redis.from_url(redis_url)
    try:
        own = await admin.client_id()
        while True:
            clients = await admin.client_list()
            samples.append(sum(1 for c in clients if int(c["id"]) != own))
            try:
                await asyncio.wait_for(stop.wait(), 0.2)
                return
            except TimeoutError:
                pass
    finally:
        await admin.aclose()


def referee_connections(node_clients: dict[int, list[str]], pids: list[int]) -> dict[int, int]:
    """Connections of each referee process to the cluster: its TCP connections (by pid) to a node's port whose
    local address that node lists in CLIENT LIST (``node_clients``: node port -> the addresses it lists)."""
    counts: dict[int, int] = {}
    for pid in pids:
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.Error:
            counts[pid] = 0
            continue
        counts[pid] = sum(
            1
            for c in connections
            if c.raddr and c.raddr.port in node_clients and f"{c.laddr.ip}:{c.laddr.port}" in node_clients[c.raddr.port]
        )
    return counts


async def count_cluster_connections(ports: list[int], pids: list[int], samples: dict[int, list[int]],
                                    stop: asyncio.Event) -> None:  # fmt: skip
    """Every 0.5 s until ``stop``: each referee's connections to the cluster's nodes (CLIENT LIST on every node)."""
    admins = {port: aioredis.Redis(host="127.0.0.1", port=port) for port in ports}
    try:
        while True:
            listed: dict[int, list[str]] = {}
            for port, admin in admins.items():
                try:
                    listed[port] = [c["addr"] for c in await admin.client_list()]
                except (OSError, aioredis.RedisError):
                    listed[port] = []
            for pid, count in (await asyncio.to_thread(referee_connections, listed, pids)).items():
                samples.setdefault(pid, []).append(count)
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
                return
            except TimeoutError:
                pass
    finally:
        for admin in admins.values():
            await admin.aclose()


async def subscriptions(node_urls: list[str], channels: list[bytes]) -> int:
    """Subscriptions to ``channels`` over every node: NUMSUB (Pub/Sub) plus SHARDNUMSUB (sharded Pub/Sub)."""
    total = 0
    for url in node_urls:
        admin = aioredis.Redis.from_url(url)
        try:
            for i in range(0, len(channels), 500):
                chunk = channels[i : i + 500]
                for command in ("NUMSUB", "SHARDNUMSUB"):
                    try:
                        reply = await admin.execute_command("PUBSUB", command, *chunk)
                    except aioredis.RedisError:
                        continue  # a Redis without sharded Pub/Sub, or a node that refuses another shard's channel
                    if isinstance(reply, dict):
                        total += sum(int(n) for n in reply.values())
                    elif reply and isinstance(reply[0], list | tuple):
                        total += sum(int(pair[1]) for pair in reply)
                    else:
                        total += sum(int(n) for n in reply[1::2])
        finally:
            await admin.aclose()
    return total


async def wait_subscribed(node_urls: list[str], channels: list[bytes], expected: int, timeout_s: float = 120.0) -> int:
    """Until the referees hold ``expected`` subscriptions to ``channels`` (or ``timeout_s`` passed); how many."""
    deadline = time.perf_counter() + timeout_s
    while (found := await subscriptions(node_urls, channels)) < expected and time.perf_counter() < deadline:
        await asyncio.sleep(0.1)
    return found


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return 0.0
    return round(sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * q))], 2)


@dataclass
class Target:
    """Where the bench runs: the referees' addresses and pids, and the Redis (one server or a cluster's nodes)."""

    addresses: list[str]
    referee_pids: list[int]
    redis_url: str  # the standalone Redis, or the cluster's seed
    node_ports: list[int] = field(default_factory=list)  # a cluster's nodes (empty: standalone)

    @property
    def node_urls(self) -> list[str]:
        return [f"redis://127.0.0.1:{p}" for p in self.node_ports] if self.node_ports else [self.redis_url]


async def run(target: Target, args: argparse.Namespace, pids: dict[str, list[int]]) -> dict[str, object]:
    options = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", 4 << 20)]
    # --channels connections to each referee; stubs[r] are referee r's
    channels = [[grpc.aio.insecure_channel(address, options=options) for _ in range(max(1, args.channels))]
                for address in target.addresses]  # fmt: skip
    stubs = [[referee_pb2_grpc.RefereeServiceStub(c) for c in per_referee] for per_referee in channels]
    processes = len(stubs)

    def stub(
        n: int,
    ) -> referee_pb2_grpc.RefereeServiceStub:  # the n-th call's: referee n mod N, spread over its channels
        per_referee = stubs[n % processes]
        return per_referee[(n // processes) % len(per_referee)]

    samples: list[int] = []
    by_process: dict[int, list[int]] = {}
    stop_counting = asyncio.Event()
    counter = asyncio.ensure_future(
        count_cluster_connections(target.node_ports, target.referee_pids, by_process, stop_counting)
        if target.node_ports
        else count_connections(target.redis_url, samples, stop_counting)
    )
    try:
        seats = [pb.SeatSpec(display_name="P0", kind=pb.SEAT_KIND_BOT),
                 pb.SeatSpec(display_name="P1", kind=pb.SEAT_KIND_BOT)]  # fmt: skip
        games: list[Game] = []
        for i in range(args.games):
            created = await stub(i).CreateGame(
                rpb.CreateGameRequest(profile="gin", seats=seats, allow_spectators=True),
                metadata=ORGANIZER_MD,  # exempt from the per-address creation rate (60 a minute by default)
            )
            tokens = {t.seat: t.token for t in created.seat_tokens}
            games.append(Game(created.game_id, tokens, created.spectator_token))
        streams = [
            Stream(game, [game.tokens[0], game.tokens[1]][w] if w < 2 else game.spectator)
            for game in games
            for w in range(args.watchers)
        ]
        t0 = time.perf_counter()
        opened = [asyncio.Event() for _ in streams]
        readers: list[asyncio.Future[None]] = []
        for first in range(0, len(streams), OPEN_BATCH):  # in batches, as clients arrive (not 5,000 in one burst)
            readers += [
                asyncio.ensure_future(watch(stub(n), streams[n], opened[n]))
                for n in range(first, min(first + OPEN_BATCH, len(streams)))
            ]
            await asyncio.wait_for(asyncio.gather(*(event.wait() for event in opened[first : first + OPEN_BATCH])), 600)
        print(f"{len(streams)} streams over {len(games)} games open in {time.perf_counter() - t0:.1f}s "
              f"({sum(1 for s in streams if s.error)} failed)", flush=True)  # fmt: skip

        # the streams are open; wait until every referee follows every game it has watchers of (subscribed to its
        # channel), and a little
        followers = {(s.game.game_id, n % processes) for n, s in enumerate(streams)}
        game_channels = [channel(g.game_id) for g in games]
        subscribed = await wait_subscribed(target.node_urls, game_channels, len(followers))
        print(f"subscriptions {subscribed} of {len(followers)} (games x referees following them)", flush=True)
        await asyncio.sleep(0.5)

        interval = len(games) / args.rate
        stop_at = time.perf_counter() + args.seconds
        rng = random.Random(1)
        cpu_before = {name: sum(map(cpu_s, group)) for name, group in pids.items()}
        await asyncio.gather(*(
            play(stub(i), game, interval, stop_at, random.Random(rng.random()))
            for i, game in enumerate(games)
        ))  # fmt: skip
        moves = sum(g.moves for g in games)
        cpu = {name: sum(map(cpu_s, group)) - cpu_before[name] for name, group in pids.items()}
        print(f"{moves} moves in {args.seconds:.0f}s ({moves / args.seconds:.0f}/s), "
              f"{sum(g.move_errors for g in games)} refused; CPU share while playing: "
              + ", ".join(f"{name} {used / args.seconds:.0%}" for name, used in cpu.items()), flush=True)  # fmt: skip

        final = {g.game_id: g.view.version for g in games}
        deadline = time.perf_counter() + 120
        while time.perf_counter() < deadline and any(
            not s.error and not s.ended and s.last_version < final[s.game.game_id] for s in streams
        ):
            await asyncio.sleep(0.1)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)

        checking = asyncio.Semaphore(32)  # the logs read a few at a time (a burst of 1,000 replays is not the test)

        async def stored(i: int, game: Game) -> list[Position]:
            async with checking:
                return await stored_positions(stub(i), game)

        logs = await asyncio.gather(*(stored(i, g) for i, g in enumerate(games)))
        stored = {g.game_id: log for g, log in zip(games, logs, strict=True)}
        failed = wrong = 0
        latencies: list[float] = []
        dump: list[tuple[float, float, str, int, str]] = []
        for s in streams:
            expected = [p for p in stored[s.game.game_id] if p[0] > s.snapshot_version]
            if s.error:
                failed += 1
                if failed <= 5:
                    print(f"stream of {s.game.game_id} failed: {s.error}", flush=True)
                continue
            if s.received != expected:
                wrong += 1
                if wrong <= 5:
                    print(f"stream of {s.game.game_id}: {len(s.received)} events, {len(expected)} expected",
                          flush=True)  # fmt: skip
                continue
            for (version, _), received_at in zip(s.received, s.times, strict=True):
                answered = s.game.answered.get(version)
                if answered is not None:
                    latencies.append(max(0.0, received_at - answered) * 1000)
                    if os.environ.get("FANOUT_DUMP"):
                        dump.append((answered - t0, received_at - answered, s.game.game_id, version, s.token[:2]))
        latencies.sort()
        if dump:
            Path(os.environ["FANOUT_DUMP"]).write_text(json.dumps(sorted(dump)))
        stop_counting.set()
        await counter
        per_process = {str(pid): max(counts, default=0) for pid, counts in by_process.items()}
        results: dict[str, object] = {
            "fanout_streams_failed": failed + wrong,
            "fanout_p99_ms": _percentile(latencies, 0.99),
            "redis_connections": max(per_process.values(), default=0) if per_process else max(samples, default=0),
            **({"redis_connections_by_process": per_process} if per_process else {}),
            "processes": processes,
            "cluster": bool(target.node_ports),
            "fanout_p50_ms": _percentile(latencies, 0.50),
            "fanout_max_ms": _percentile(latencies, 1.0),
            "streams": len(streams),
            "streams_errored": failed,
            "streams_wrong": wrong,
            "games": len(games),
            "moves": moves,
            "moves_per_s": round(moves / args.seconds, 1),
            "deliveries": len(latencies),
            **{f"cpu_{name}_us_per_move": round(used / max(1, moves) * 1e6) for name, used in cpu.items()},
        }
        print(f"deliveries {len(latencies)}: p50 {results['fanout_p50_ms']} ms, p99 {results['fanout_p99_ms']} ms, "
              f"max {results['fanout_max_ms']} ms; streams failed {failed}, wrong {wrong}; Redis connections "
              + (f"of a referee process at most {results['redis_connections']} {per_process}" if per_process
                 else f"of the referees together at most {results['redis_connections']}"), flush=True)  # fmt: skip
        return results
    finally:
        stop_counting.set()
        counter.cancel()
        for per_referee in channels:
            for each in per_referee:
                await each.close(None)


def _start_server(redis_url: str) -> tuple[subprocess.Popen[str], str]:
    profile = os.environ.get("FANOUT_PROFILE")
    referee = _boot.start_referee(
        ["--port", "0", "--no-http", "--redis-url", redis_url,
         # limits far above the bench's rates (it creates games without a token)
         "--games-per-minute", "1000000", "--requests-per-second", "1000000", "--request-burst", "1000000",
         "--watches-per-address", "0",  # every stream comes from this one address
         "--grace", "1"],
        env={**os.environ, "RUMMY_ORGANIZER_TOKEN": ORGANIZER},
        python_args=["-m", "cProfile", "-o", profile] if profile else [],
        log=Path(os.environ["FANOUT_LOG"]) if os.environ.get("FANOUT_LOG") else None,
    )  # fmt: skip
    assert referee.process is not None
    return referee.process, referee.address


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=200, help="games played at once")
    parser.add_argument("--watchers", type=int, default=5, help="WatchGame streams per game")
    parser.add_argument(
        "--streams", type=int, default=None, help="streams in all (sets --games to STREAMS / --watchers)"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the bots play")
    parser.add_argument("--rate", type=float, default=100.0, help="moves per second, all games together")
    parser.add_argument("--channels", type=int, default=10, help="gRPC connections of this process to each referee")
    parser.add_argument(
        "--processes", type=int, default=1, help="referee processes (games and streams split over them)"
    )
    parser.add_argument("--cluster", action="store_true", help="a six-node Redis Cluster instead of one redis-server")
    parser.add_argument(
        "--cluster-url", default=None, help="an existing cluster (redis-cluster://host:port): its nodes"
    )
    args = parser.parse_args()
    if args.streams is not None:
        args.games = max(1, -(-args.streams // max(1, args.watchers)))
    with tempfile.TemporaryDirectory(prefix="rummy-fanout-") as data:
        redis = cluster = None
        servers: list[subprocess.Popen[str]] = []
        try:
            if args.cluster_url:
                url, ports = args.cluster_url, _cluster_ports(args.cluster_url)
            elif args.cluster:
                cluster = start_cluster(Path(data) / "cluster", appendfsync="everysec")
                url, ports = cluster.url, [node.port for node in cluster.nodes]
            else:
                redis = start_redis(data, appendfsync="everysec", unix_socket=True)
                url, ports = redis.url, []
            addresses = []
            for _ in range(max(1, args.processes)):
                process, address = _start_server(url)
                servers.append(process)
                addresses.append(address)
            listed = ", ".join(f"{a} (pid {p.pid})" for a, p in zip(addresses, servers, strict=True))
            print(f"referees {listed}; redis {url}{f' ({len(ports)} nodes)' if ports else ''}; "
                  f"{os.cpu_count()} cores", flush=True)  # fmt: skip
            pids = {"referee": [p.pid for p in servers], "bench": [os.getpid()], "redis": _redis_pids(redis, cluster)}
            target = Target(addresses, [p.pid for p in servers], url, ports)
            results = asyncio.run(run(target, args, pids))
        finally:
            for process in servers:
                process.send_signal(signal.SIGTERM)
            for process in servers:
                process.wait(30)
            if cluster is not None:
                cluster.stop()
            if redis is not None:
                redis.stop()
    print(json.dumps(results))


def _redis_pids(redis: object, cluster: LocalCluster | None) -> list[int]:
    if cluster is not None:
        return cluster.pids
    pid = getattr(redis, "pid", None)
    return [pid] if pid else []


def _cluster_ports(url: str) -> list[int]:
    """The ports of every node of a running cluster, from its seed."""
    import redis as sync_redis

    with sync_redis.Redis.from_url("redis://" + url.split("://", 1)[1]) as seed:
        lines = seed.execute_command("CLUSTER", "NODES").decode().splitlines()
    return [int(line.split()[1].split("@")[0].rsplit(":", 1)[1]) for line in lines]


if __name__ == "__main__":
    main()
