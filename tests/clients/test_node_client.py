"""The Node.js client (clients/node) plays a whole Gin match against a Python bot, over a real referee and Redis.

Also runs the library's own unit tests (``node --test`` in clients/node).

Seat 0: ``node clients/node/examples/random_bot.js`` (a uniformly random legal move, driven by WatchGame through
clients/node/bot.js), then in a second match ``examples/greedy_bot.js`` (which asks AnalyzeHand). Seat 1: a
greedy Python bot below, over the generated stubs (it knocks as soon as it can, so that the match ends in about a
hundred moves). The referee runs as ``python -m server.cli serve`` on a free
port over the suite's redis-server. ``npm ci`` runs in clients/node once per package-lock.json (a stamp in
node_modules/ remembers it); the test is skipped only when node or npm is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from clients.referee_proc import RefereeProcess
from engine import CARD_VALUE, min_deadwood, min_deadwood11, parse_card
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server.redis_launcher import RedisProcess

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "clients" / "node"
NODE = shutil.which("node") or ""
NPM = shutil.which("npm") or ""
STAMP = NODE_DIR / "node_modules" / ".rummy-referee-lock.sha256"

pytestmark = pytest.mark.skipif(
    not (NODE and NPM),
    reason="the Node.js client test needs `node` and `npm` on PATH (Node.js 18 or newer)",
)


# ------------------------------------------------------------------------------------------------ fixtures


def _lock_digest() -> str:
    digest = hashlib.sha256((NODE_DIR / "package-lock.json").read_bytes())
    digest.update(subprocess.run([NODE, "--version"], capture_output=True, text=True, check=True).stdout.encode())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """clients/node/node_modules as package-lock.json pins it: `npm ci`, unless it already ran for this lock."""
    digest = _lock_digest()
    if not (STAMP.is_file() and STAMP.read_text().strip() == digest):
        done = subprocess.run(
            [NPM, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=NODE_DIR, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"npm ci failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        STAMP.write_text(digest + "\n")
    return NODE_DIR / "node_modules"


@pytest.fixture(scope="module")
def referee_address(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m server.cli serve --port 0` over the suite's redis-server; yields "127.0.0.1:PORT"."""
    log_path = tmp_path_factory.mktemp("referee") / "server.log"
    proc = RefereeProcess(["--port", "0", "--no-http", "--redis-url", redis_server.url, "--grace", "1"], log=log_path)
    with proc.start(30):
        yield proc.address


# ------------------------------------------------------------------------------------------------ Python bot


def _mask(cards: list[str]) -> int:
    m = 0
    for c in cards:
        m |= 1 << parse_card(c)
    return m


def greedy_move(view: pb.GameView) -> pb.Move:
    """Knock (the lowest deadwood) or big gin whenever allowed; take the discard only when it lowers the
    deadwood; discard so as to keep the lowest deadwood, the highest card first; as the defender, declare best."""
    legal = list(view.legal_moves)
    kinds = {m.WhichOneof("move"): m for m in legal}
    hand = _mask(list(view.hand))
    if "big_gin" in kinds:
        return kinds["big_gin"]
    knocks = [m for m in legal if m.WhichOneof("move") == "knock"]
    if knocks:
        return min(knocks, key=lambda m: min_deadwood(hand & ~(1 << parse_card(m.knock.discard))))
    if "declare" in kinds:
        return pb.Move(declare=pb.Move.Declare(best=True))
    if "draw_discard" in kinds and view.discard_pile:
        top = 1 << parse_card(view.discard_pile[-1])
        if view.phase == pb.PHASE_LAST_CARD or min_deadwood11(hand | top) < min_deadwood(hand):
            return kinds["draw_discard"]
    for passive in ("draw_stock", "pass_turn"):
        if passive in kinds:
            return kinds[passive]
    discards = [m for m in legal if m.WhichOneof("move") == "discard"]
    if discards:

        def cost(m: pb.Move) -> tuple[int, int]:
            card = parse_card(m.discard.card)
            return min_deadwood(hand & ~(1 << card)), -CARD_VALUE[card]

        return min(discards, key=cost)
    return legal[0]


class PythonSeat:
    """Plays a seat with greedy_move, driven by WatchGame like the Node bot; run() in a thread."""

    def __init__(self, address: str, game_id: str, token: str) -> None:
        self.game_id = game_id
        self.channel = grpc.insecure_channel(address)
        self.stub = referee_pb2_grpc.RefereeServiceStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.moves = 0
        self.error: BaseException | None = None
        self.stream: Any = None  # the WatchGame call (grpc-stubs leaves its cancel() untyped)

    def _act(self, view: pb.GameView) -> pb.GameView:
        while view.phase != pb.PHASE_MATCH_OVER and view.HasField("to_act") and view.to_act == view.viewer_seat:
            request = rpb.SubmitMoveRequest(
                game_id=self.game_id, move=greedy_move(view), expected_version=view.version,
                request_id=str(uuid.uuid4()),
            )  # fmt: skip
            response = self.stub.SubmitMove(request, metadata=self.metadata, timeout=10)
            self.moves += 1
            view = response.view
        return view

    def run(self) -> None:
        try:
            handled = -1
            self.stream = stream = self.stub.WatchGame(
                rpb.WatchGameRequest(game_id=self.game_id), metadata=self.metadata, timeout=240
            )
            for update in stream:
                if update.HasField("snapshot"):
                    view = update.snapshot
                elif update.event.version > handled:
                    view = self.stub.GetGame(
                        rpb.GetGameRequest(game_id=self.game_id), metadata=self.metadata, timeout=10
                    ).view
                else:
                    continue
                handled = max(handled, view.version)
                handled = max(handled, self._act(view).version)
        except BaseException as exc:
            self.error = exc

    def close(self) -> None:
        if self.stream is not None:
            self.stream.cancel()
        self.channel.close()


# ------------------------------------------------------------------------------------------------ the tests


def test_node_library_unit_tests(node_modules: Path) -> None:
    """clients/node/test/*.test.js (`node --test`): retries, deadlines, errors and watch resumption of
    referee.js against a scripted in-process server."""
    done = subprocess.run([NODE, "--test"], cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"node --test failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("example", ["random_bot.js", "greedy_bot.js"])
def test_node_bot_plays_a_gin_match(node_modules: Path, referee_address: str, example: str) -> None:
    started = time.monotonic()
    with grpc.insecure_channel(referee_address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        created = stub.CreateGame(
            rpb.CreateGameRequest(
                profile="gin",
                seats=[
                    pb.SeatSpec(display_name=f"node-{example.removesuffix('.js')}", kind=pb.SEAT_KIND_BOT),
                    pb.SeatSpec(display_name="python-greedy", kind=pb.SEAT_KIND_BOT),
                ],
            ),
            timeout=10,
        )
        tokens = {t.seat: t.token for t in created.seat_tokens}

        python_seat = PythonSeat(referee_address, created.game_id, tokens[1])
        thread = threading.Thread(target=python_seat.run, daemon=True)
        thread.start()
        env = {**os.environ, "RUMMY_TOKEN": tokens[0]}  # the token outside the command line (ps shows that)
        try:
            node = subprocess.run(
                # --game=ID: a game id may begin with "-" (it is token_urlsafe), which "--game ID" would misread
                [NODE, f"examples/{example}", f"--address={referee_address}", f"--game={created.game_id}"],
                cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=240,
            )  # fmt: skip
            if node.returncode == 0:
                thread.join(30)
        finally:
            python_seat.close()
        assert node.returncode == 0, f"the Node bot failed ({node.returncode}):\n{node.stdout}\n{node.stderr}"
        assert not thread.is_alive(), "the Python seat did not see the match end"
        assert python_seat.error is None, f"the Python seat failed: {python_seat.error!r}"

        summaries = [line for line in node.stdout.splitlines() if line.startswith("SUMMARY ")]
        assert len(summaries) == 1, node.stdout
        summary = json.loads(summaries[0].removeprefix("SUMMARY "))

        final = stub.GetGame(
            rpb.GetGameRequest(game_id=created.game_id), metadata=(("authorization", f"Bearer {tokens[1]}"),),
            timeout=10,
        ).view  # fmt: skip

    assert final.phase == pb.PHASE_MATCH_OVER
    assert list(final.result.winners), "a finished match has a winner"
    assert max(final.result.totals) >= 100
    assert summary["game_id"] == created.game_id
    assert summary["seat"] == 0
    assert summary["phase"] == "PHASE_MATCH_OVER"
    assert summary["winners"] == list(final.result.winners)
    assert summary["totals"] == list(final.result.totals)
    assert summary["hands_played"] == final.hands_played
    # One version per applied move: every move of either seat was accepted once, none lost or doubled.
    assert summary["moves"] > 0
    assert summary["moves"] + python_seat.moves == final.version == summary["version"]
    print(
        f"{example}: {summary['moves']} moves, python seat: {python_seat.moves} moves, "
        f"{final.hands_played} hands, totals {list(final.result.totals)}, {time.monotonic() - started:.1f}s"
    )


def test_node_client_balances_over_several_referees(redis_server: RedisProcess, node_modules: Path) -> None:
    """`connect("ip:port,ip:port")`: one grpc-js channel with round_robin; both referees create games."""
    from tests.server.refkit import ServerThread

    servers = [ServerThread(redis_server.url), ServerThread(redis_server.url)]
    try:
        script = """
import { connect } from "./referee.js";
const referee = connect(process.argv[1], { deadlineMs: 10000 });
await referee.ping();  // connected to both (round_robin connects every address)
const seats = [{ display_name: "a" }, { display_name: "b" }];
for (let i = 0; i < 20; i++) await referee.createGame({ profile: "gin", seats });
referee.close();
"""
        address = f"localhost:{servers[0].port},127.0.0.1:{servers[1].port}"
        done = subprocess.run([NODE, "--input-type=module", "-e", script, address], cwd=NODE_DIR,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        created = [s.referee.tallies.games_created for s in servers]
        assert sum(created) == 20 and min(created) >= 1, created
    finally:
        for server in servers:
            server.stop()


_LATE_BOT = """
import { setTimeout as sleep } from "node:timers/promises";
import { playSeat } from "./bot.js";
import { connect } from "./referee.js";
const [address, gameId, token] = process.argv.slice(1);
const client = connect(address, { token });
const submit = client.submitMove.bind(client);
client.submitMove = async (...args) => {
  try { return await submit(...args); } catch (e) { console.error(`refused ${e.reason}`); throw e; }
};
let late = true;
const summary = await playSeat({ client, gameId, chooseMove: async (view, legal) => {
  if (late) { late = false; await sleep(800); }  // past the 300 ms its first decision has
  return legal[0];
} });
console.log(`SUMMARY ${JSON.stringify({ phase: summary.phase, winners: summary.winners })}`);
"""


def test_a_node_bot_that_answers_after_its_deadline_waits_for_the_referee_s_timeout(
    private_redis: RedisProcess, node_modules: Path
) -> None:
    """A move that arrives after its deadline, before the referee applied its timeout policy, is refused
    OUT_OF_TIME (README, time controls): playSeat waits for the policy and goes on from the game as it is then
    (here the match lost on time), as the Python runner does; it does not fail. The referee that refuses the move
    fires no timeouts; one that does starts only once the refusal came, so the order is certain."""
    from clients.sdk import PerMove, RefereeClient
    from tests import kit
    from tests.clients import clientkit

    quiet = kit.ServerThread(kit.referee_settings(private_redis.url, organizer_token=kit.ORGANIZER))
    firing: kit.ServerThread | None = None
    try:
        with RefereeClient(quiet.address) as client:
            game = client.create_game("gin", ["Python", "Node"], time_control=PerMove(0.3))
            assert client.get_game(game.game_id, token=game.tokens[1]).snapshot.my_turn  # seat 1 acts first
        bot = subprocess.Popen([NODE, "--input-type=module", "-e", _LATE_BOT, quiet.address, game.game_id,
                                game.tokens[1]], cwd=NODE_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
        try:
            assert bot.stderr is not None
            line = bot.stderr.readline()
            assert line.strip() == "refused OUT_OF_TIME", line
            firing = clientkit.ServerThread(private_redis.url)  # one that fires timeouts, over the same Redis
            out, err = bot.communicate(timeout=60)
        finally:
            if bot.poll() is None:
                bot.kill()
        assert bot.returncode == 0, f"the Node bot failed ({bot.returncode}):\n{out}\n{line}{err}"
        summary = json.loads(out.strip().splitlines()[-1].removeprefix("SUMMARY "))
        assert summary == {"phase": "PHASE_MATCH_OVER", "winners": [0]}
    finally:
        for server in (firing, quiet):
            if server is not None:
                server.stop()
