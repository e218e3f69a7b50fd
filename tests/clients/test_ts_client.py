"""The TypeScript client (clients/ts, Connect-ES over connect-node) plays whole matches against a real referee
through its HTTP port: two `node clients/ts/dist/bot.mjs` processes, one per seat, each following the game with
WatchGame and playing its seat's legal moves; their final totals are GetReplay's. Also: the committed generated
code, Node bundle and web table are fresh (`node build.mjs --check`, what `make web-check` runs).

``npm ci`` runs in clients/ts once per package-lock.json (a stamp in node_modules/ remembers it); the tests are
skipped only when node or npm is missing."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread

ROOT = Path(__file__).resolve().parents[2]
TS_DIR = ROOT / "clients" / "ts"
NODE = shutil.which("node") or ""
NPM = shutil.which("npm") or ""
STAMP = TS_DIR / "node_modules" / ".rummy-referee-lock.sha256"

pytestmark = pytest.mark.skipif(not (NODE and NPM), reason="the TypeScript client test needs `node` and `npm` (20+)")


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """clients/ts/node_modules as package-lock.json pins it."""
    return install_node_modules()


def install_node_modules() -> Path:
    """clients/ts/node_modules as package-lock.json pins it (``npm ci`` unless done for this lock)."""
    digest = hashlib.sha256((TS_DIR / "package-lock.json").read_bytes()).hexdigest()
    if not (STAMP.is_file() and STAMP.read_text().strip() == digest):
        done = subprocess.run([NPM, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=TS_DIR,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, f"npm ci failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        STAMP.write_text(digest + "\n")
    return TS_DIR / "node_modules"


@pytest.fixture(scope="module")
def server(redis_server: RedisProcess) -> Iterator[ServerThread]:
    with ServerThread(redis_server.url, http=True) as srv:
        yield srv


def _play(server: ServerThread, game: Game, url: str | None = None) -> list[dict[str, object]]:
    bot = str(TS_DIR / "dist" / "bot.mjs")
    url = url or server.http_url
    commands = [[NODE, bot, "--url", url, "--game", game.game_id, "--token", game.tokens[seat], "--quiet"]
                for seat in sorted(game.tokens)]  # fmt: skip
    pipe = subprocess.PIPE
    bots = [subprocess.Popen(c, cwd=TS_DIR, stdout=pipe, stderr=pipe, text=True) for c in commands]
    results = []
    for bot in bots:
        try:
            out, err = bot.communicate(timeout=240)
        finally:
            if bot.poll() is None:
                bot.kill()
        assert bot.returncode == 0, f"the bot failed ({bot.returncode}):\n{err}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_two_node_bots_play_a_gin_match_over_connect(server: ServerThread, node_modules: Path) -> None:
    client = Client(server.address)
    game = client.create("gin", ("Node A", "Node B"), match=rpb.MatchSettings(target_score=40))
    results = _play(server, game)
    final = client.replay(game, ORGANIZER)[-1].current
    assert final.phase == pb.PHASE_MATCH_OVER
    for seat, result in enumerate(results):
        assert result["seat"] == seat
        assert result["totals"] == list(final.result.totals)
        assert result["winners"] == list(final.result.winners)
    assert max(final.result.totals) >= 40
    client.close()


def test_three_node_bots_play_a_rummy_hand_over_connect(server: ServerThread, node_modules: Path) -> None:
    client = Client(server.address)
    game = client.create("rummy", ("A", "B", "C"), match=rpb.MatchSettings(max_hands=1))
    results = _play(server, game)
    final = client.replay(game, ORGANIZER)[-1].current
    assert final.phase == pb.PHASE_MATCH_OVER
    assert all(r["totals"] == list(final.result.totals) for r in results)
    client.close()


def test_node_bots_play_on_while_one_of_their_two_referees_is_down(server: ServerThread, node_modules: Path) -> None:
    """`--url LIVE,DOWN`: every other call goes to a referee that refuses connections (UNAVAILABLE); the bot sends it
    again (a move with the same request_id), to the next referee, and plays the match to its end."""
    down = socket.socket()  # bound, never listening: connections to it are refused
    down.bind(("127.0.0.1", 0))
    try:
        client = Client(server.address)
        game = client.create("gin", ("Node A", "Node B"), match=rpb.MatchSettings(target_score=20))
        results = _play(server, game, f"{server.http_url},http://127.0.0.1:{down.getsockname()[1]}")
        final = client.replay(game, ORGANIZER)[-1].current
        assert final.phase == pb.PHASE_MATCH_OVER
        assert all(r["totals"] == list(final.result.totals) for r in results)
        client.close()
    finally:
        down.close()


def test_the_generated_code_the_node_bundle_and_the_web_table_are_fresh(node_modules: Path) -> None:
    done = subprocess.run([NODE, "build.mjs", "--check"], cwd=TS_DIR, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_node_client_balances_over_several_referees(
    server: ServerThread, redis_server: RedisProcess, node_modules: Path
) -> None:
    """`connectReferee("URL,URL")`: the calls go to each referee in turn (both create games), and a game created
    through one is played through the other (one Redis)."""
    other = ServerThread(redis_server.url, http=True)
    try:
        before = [server.referee.tallies.games_created, other.referee.tallies.games_created]
        script = """
import { connectReferee, auth } from "./dist/node.mjs";
const referee = connectReferee(process.argv[1]);
const games = [];
for (let i = 0; i < 4; i++) {
  games.push(await referee.createGame({ profile: "gin", seats: [{ displayName: "a" }, { displayName: "b" }] }));
}
const ids = [];
for (const created of games.reverse()) {  // each read through the referee it was not created on
  const got = await referee.getGame({ gameId: created.gameId }, auth(created.seatTokens[0].token));
  ids.push(got.view.gameId === created.gameId);
}
console.log(JSON.stringify(ids));
"""
        urls = f"{server.http_url},{other.http_url}"
        done = subprocess.run([NODE, "--input-type=module", "-e", script, urls], cwd=TS_DIR, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [True] * 4
        after = [server.referee.tallies.games_created, other.referee.tallies.games_created]
        assert [a - b for a, b in zip(after, before, strict=True)] == [2, 2]
    finally:
        other.stop()


def _calls(metrics_url: str) -> dict[tuple[str, str], float]:
    """rummy_rpc_handled_total by (method, code), from the referee's Prometheus metrics."""
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    found = re.findall(r'rummy_rpc_handled_total\{code="(\w+)",method="rummy\.v1\.RefereeService/(\w+)"\} (\S+)', text)
    return {(method, code): float(n) for code, method, n in found}


def test_a_node_bot_out_of_time_waits_for_the_referee_s_timeout_without_resending(
    private_redis: RedisProcess, node_modules: Path, tmp_path: Path
) -> None:
    """A move refused OUT_OF_TIME (it came after its deadline, before the referee applied its timeout policy)
    is not sent again and again: the bot looks at the game (GetGame) until the policy was applied, then goes on.
    The referee here fires no timeout for an hour; one that does starts once the bot has looked five times."""
    from clients.sdk import PerMove, RefereeClient
    from tests import kit
    from tests.clients import clientkit
    from tests.clients.clientkit import ServerProcess, wait_until

    metrics_port = kit.free_port()
    args = ("--no-bots", "--timeout-poll", "3600", "--metrics-port", str(metrics_port))
    quiet = ServerProcess(private_redis.url, log_dir=tmp_path, http=True, args=args)
    quiet.start()
    metrics = f"http://127.0.0.1:{metrics_port}/metrics"
    firing: kit.ServerThread | None = None
    try:
        with RefereeClient(quiet.address) as client:
            game = client.create_game("gin", ["A", "B"], time_control=PerMove(0.001))  # every move comes late
            seat = client.get_game(game.game_id, token=game.tokens[0]).snapshot.to_act
            assert seat is not None
        bot = subprocess.Popen([NODE, str(TS_DIR / "dist" / "bot.mjs"), "--quiet", "--url", f"http://127.0.0.1:"
                                f"{quiet.http_port}", "--game", game.game_id, "--token", game.tokens[seat]],
                               cwd=TS_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            assert wait_until(lambda: _calls(metrics).get(("SubmitMove", "FAILED_PRECONDITION"), 0) >= 1, 60)
            looked = _calls(metrics).get(("GetGame", "OK"), 0)
            assert wait_until(lambda: _calls(metrics).get(("GetGame", "OK"), 0) >= looked + 5, 60)
            assert _calls(metrics).get(("SubmitMove", "FAILED_PRECONDITION"), 0) <= 2  # (one in flight meanwhile)
            firing = clientkit.ServerThread(private_redis.url)  # one that fires timeouts, over the same Redis
            out, err = bot.communicate(timeout=60)
        finally:
            if bot.poll() is None:
                bot.kill()
        assert bot.returncode == 0, f"the bot failed ({bot.returncode}):\n{out}\n{err}"
        assert json.loads(out.strip().splitlines()[-1])["winners"] == [1 - seat]  # it lost on time
    finally:
        if firing is not None:
            firing.stop()
        quiet.stop()


def _node(script: str, *args: str, timeout: float = 120) -> object:
    """Run an ES module script in clients/ts (dist/node.mjs importable); its last line of output, as JSON."""
    done = subprocess.run([NODE, "--input-type=module", "-e", script, *args], cwd=TS_DIR, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_call_to_a_referee_that_stopped_answering_fails_deadline_exceeded_and_persist_sends_it_on(
    private_redis: RedisProcess, node_modules: Path, tmp_path: Path
) -> None:
    """A referee that accepts connections and never answers (SIGSTOP) does not hang a call: each unary call has a
    deadline, 10 s unless set (the Python SDK's), after which it fails DEADLINE_EXCEEDED; `persist` then sends it
    to the next referee. `timeoutMs` sets it per client (0: none) and per call."""
    import os
    import signal
    import time

    from tests.clients.clientkit import ServerProcess

    stalled = ServerProcess(private_redis.url, log_dir=tmp_path, http=True).start()
    live = ServerProcess(private_redis.url, log_dir=tmp_path, http=True).start()
    try:
        client = Client(live.address)
        game = client.create("gin", ("A", "B"))
        client.close()
        stalled_url, live_url = (f"http://127.0.0.1:{p.http_port}" for p in (stalled, live))
        assert stalled.pid is not None
        os.kill(stalled.pid, signal.SIGSTOP)
        script = """
import { connectReferee, auth, persist, refusal, DEFAULT_TIMEOUT_MS } from "./dist/node.mjs";
const [stalled, live, gameId, token] = process.argv.slice(1);
const timed = async (call) => {
  const start = Date.now();
  try {
    const answer = await call();
    return { ok: answer.view.gameId === gameId, ms: Date.now() - start };
  } catch (err) {
    return { code: refusal(err).code, ms: Date.now() - start };
  }
};
const out = { defaultMs: DEFAULT_TIMEOUT_MS };
out.byDefault = await timed(() => connectReferee(stalled).getGame({ gameId }, auth(token)));
out.perClient = await timed(() => connectReferee(stalled, { timeoutMs: 300 }).getGame({ gameId }, auth(token)));
out.perCall = await timed(() => connectReferee(stalled).getGame({ gameId }, auth(token, { timeoutMs: 200 })));
const both = connectReferee([stalled, live], { timeoutMs: 300 });
out.persisted = await timed(() => persist(() => both.getGame({ gameId }, auth(token))));
console.log(JSON.stringify(out));
"""
        started = time.monotonic()
        out = _node(script, stalled_url, live_url, game.game_id, game.tokens[0], timeout=60)
        assert time.monotonic() - started < 40
        assert isinstance(out, dict)
        assert out["defaultMs"] == 10_000
        assert out["byDefault"]["code"] == "DeadlineExceeded" and 10_000 <= out["byDefault"]["ms"] < 20_000
        assert out["perClient"]["code"] == "DeadlineExceeded" and 300 <= out["perClient"]["ms"] < 5_000
        assert out["perCall"]["code"] == "DeadlineExceeded" and 200 <= out["perCall"]["ms"] < 5_000
        assert out["persisted"]["ok"] is True
    finally:
        if stalled.pid is not None:
            os.kill(stalled.pid, signal.SIGCONT)
        stalled.stop()
        live.stop()


def test_round_robin_skips_a_referee_that_refused_a_connection_and_tries_it_again_later(
    server: ServerThread, node_modules: Path
) -> None:
    """`roundRobin`: a referee that refused a connection is left out of the rotation for a while (`skipMs`), so the
    calls after it all go to the live one instead of every other one failing UNAVAILABLE; once the while is over
    it is tried again. With every referee down each call still goes to one of them (and fails UNAVAILABLE)."""
    refusing = [socket.socket(), socket.socket()]  # bound, never listening: connections to them are refused
    for s in refusing:
        s.bind(("127.0.0.1", 0))
    try:
        client = Client(server.address)
        game = client.create("gin", ("A", "B"))
        client.close()
        down = [f"http://127.0.0.1:{s.getsockname()[1]}" for s in refusing]
        script = """
import { createConnectTransport } from "@connectrpc/connect-node";
import { auth, refereeClient, refusal, roundRobin } from "./dist/node.mjs";
const [live, down1, down2, gameId, token] = process.argv.slice(1);
const transport = (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" });
const calls = async (referee, n) => {
  const got = [];
  for (let i = 0; i < n; i++) {
    try {
      await referee.getGame({ gameId }, auth(token));
      got.push("ok");
    } catch (err) {
      got.push(refusal(err).code);
    }
  }
  return got;
};
const out = {};
out.skipping = await calls(refereeClient(roundRobin([transport(down1), transport(live)], { skipMs: 60_000 })), 10);
const brief = refereeClient(roundRobin([transport(down1), transport(live)], { skipMs: 200 }));
out.before = await calls(brief, 3);
await new Promise((resolve) => setTimeout(resolve, 400));
out.after = await calls(brief, 1);
out.allDown = await calls(refereeClient(roundRobin([transport(down1), transport(down2)], { skipMs: 60_000 })), 4);
console.log(JSON.stringify(out));
"""
        out = _node(script, server.http_url, *down, game.game_id, game.tokens[0])
        assert out == {
            "skipping": ["Unavailable"] + ["ok"] * 9,
            "before": ["Unavailable", "ok", "ok"],
            "after": ["Unavailable"],  # the while over, the next call tries the refusing referee again
            "allDown": ["Unavailable"] * 4,
        }
    finally:
        for s in refusing:
            s.close()
