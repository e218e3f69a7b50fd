"""What an operator watches, on a real `rummy-referee serve` subprocess (``--metrics-port 0 --log-format json``)
over the suite's Redis: the Prometheus counters move exactly as a game does, and the JSON log of a played game
carries the game's id and no card."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import random
import re
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from clients.referee_proc import RefereeProcess
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.logs import JsonFormatter, call_context, configure
from server.metrics import Metrics, ObserveInterceptor
from server.redis_launcher import RedisProcess, start_redis
from tests.server.refkit import Client, Game, ServerThread, bot_move, expect_error, md, move_from_text
from tests.server.refkit import wait_for as wait_until

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = "rummy.v1.RefereeService/SubmitMove"
WATCH = "rummy.v1.RefereeService/WatchGame"
# a card as the referee writes it ("TD", "AS"; "10D" as input), standing alone in a text
CARD = re.compile(r"(?<![A-Za-z0-9])(?:10|[A2-9TJQK])[SHDC](?![A-Za-z0-9])")


@dataclass
class Served:
    process: RefereeProcess
    address: str
    metrics_url: str
    log: Path


def start_serve(redis_url: str, directory: Path, extra: Sequence[str] = ()) -> Served:
    """`rummy-referee serve --metrics-port 0 --log-format json` (and ``extra`` arguments) on a free port: once it
    has said where it listens. Its log (stderr, JSON lines alone) in ``directory``/stderr.jsonl."""
    log = directory / "stderr.jsonl"
    process = RefereeProcess(
        ["--port", "0", "--no-http", "--redis-url", redis_url, "--metrics-port", "0", "--log-format", "json",
         "--grace", "1", "--games-per-minute", "1000000", "--requests-per-second", "1000000", "--request-burst",
         "1000000", *extra],
        log=log, copy_stdout=False,
    ).start(60)  # fmt: skip
    return Served(process, process.address, f"http://{process.metrics_address}/metrics", log)


def stop_serve(process: RefereeProcess) -> None:
    process.stop(20)


@pytest.fixture(scope="module")
def observed_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server of this module's own: `serve` runs a bot host and a timeout firer, which over the session's
    Redis played the house-bot seats and fired the timeouts that earlier tests left there (a CI run counted 18
    commits for a game's 12 moves)."""
    process = start_redis(tmp_path_factory.mktemp("observed-redis"), appendfsync="always")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def served(observed_redis: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = start_serve(observed_redis.url, tmp_path_factory.mktemp("observed"))
    try:
        yield served
    finally:
        stop_serve(served.process)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the endpoint: (name, sorted labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def wait_for(url: str, name: str, wanted: float, timeout: float = 30.0, **labels: str) -> float:
    """Scrape until ``name{labels}`` is ``wanted`` (a gauge that follows something asynchronous)."""
    deadline = time.monotonic() + timeout
    while True:
        got = value(scrape(url), name, **labels)
        if got == wanted or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def play(client: Client, game: Game, moves: int, rng: random.Random, request_ids: str = "") -> int:
    """Up to ``moves`` bot moves, fewer if the match ends first: the number made. ``request_ids``: the prefix of
    the moves' request ids (none when empty)."""
    made = 0
    view = client.view(game, game.tokens[0])
    while made < moves and view.HasField("to_act"):
        view = client.view(game, game.tokens[view.to_act])
        extra = {"request_id": f"{request_ids}{view.version}"} if request_ids else {}
        view = client.move(game, game.tokens[view.to_act], bot_move(view, rng), **extra).view
        made += 1
    return made


def finish(client: Client, game: Game, rng: random.Random, request_ids: str = "") -> None:
    """Play the match to its end."""
    while play(client, game, 500, rng, request_ids):
        pass


def test_counters_follow_a_game(served: Served) -> None:
    rng = random.Random(13)
    before = scrape(served.metrics_url)
    client = Client(served.address)
    try:
        game = client.create("gin", match=rpb.MatchSettings(target_score=1))
        assert play(client, game, 12, rng) == 12
        after = scrape(served.metrics_url)

        def moved(name: str, **labels: str) -> float:
            return value(after, name, **labels) - value(before, name, **labels)

        assert moved("rummy_moves_total", outcome="accepted", reason="") == 12
        assert moved("rummy_rpc_handled_total", method=SUBMIT, code="OK") == 12
        assert moved("rummy_rpc_duration_seconds_count", method=SUBMIT) == 12
        assert moved("rummy_games_created_total") == 1
        assert moved("rummy_rpc_handled_total", method="rummy.v1.RefereeService/CreateGame", code="OK") == 1
        assert moved("rummy_storage_duration_seconds_count", op="commit") == 12
        assert moved("rummy_storage_duration_seconds_count", op="create") == 1
        assert moved("rummy_storage_errors_total", op="commit") == 0

        # a refused move: its reason's counter, and its status code's, each +1; the accepted count stays
        view = client.view(game, game.tokens[0])
        idle = 1 - view.to_act
        with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"):
            client.move(game, game.tokens[idle], move_from_text("draw stock"))
        refused = scrape(served.metrics_url)
        assert value(refused, "rummy_moves_total", outcome="refused", reason="NOT_YOUR_TURN") - value(
            after, "rummy_moves_total", outcome="refused", reason="NOT_YOUR_TURN"
        ) == 1
        # (an error's status is counted just after gRPC sends it: abort() sends first, then raises)
        failed = value(after, "rummy_rpc_handled_total", method=SUBMIT, code="FAILED_PRECONDITION") + 1
        assert wait_for(served.metrics_url, "rummy_rpc_handled_total", failed, method=SUBMIT,
                        code="FAILED_PRECONDITION") == failed  # fmt: skip
        assert value(refused, "rummy_moves_total", outcome="accepted", reason="") == value(
            after, "rummy_moves_total", outcome="accepted", reason=""
        )

        # a live watch: the gauge goes up while it is open, down when it ends
        assert wait_for(served.metrics_url, "rummy_rpc_streams_active", 0, method=WATCH) == 0
        stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.tokens[0]))
        assert next(stream).HasField("snapshot")
        assert wait_for(served.metrics_url, "rummy_rpc_streams_active", 1, method=WATCH) == 1
        stream.cancel()
        assert wait_for(served.metrics_url, "rummy_rpc_streams_active", 0, method=WATCH) == 0
        ended = scrape(served.metrics_url)
        assert value(ended, "rummy_rpc_handled_total", method=WATCH, code="CANCELLED") >= 1

        # the registry of unfinished games in Redis holds this one (refreshed in the background)
        deadline = time.monotonic() + 30
        while value(scrape(served.metrics_url), "rummy_open_games") < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert value(scrape(served.metrics_url), "rummy_open_games") >= 1

        # the match to its end: games finished +1
        finish(client, game, rng)
        assert value(scrape(served.metrics_url), "rummy_games_finished_total") - value(
            before, "rummy_games_finished_total"
        ) == 1
    finally:
        client.close()


def test_conflicts_and_retries_are_counted(served: Served, observed_redis: RedisProcess) -> None:
    """The subprocess holds the game's state after a move; another referee commits the next one; the subprocess's
    next move applies to its stale state, its commit finds another version (a conflict), it loads again (a
    retry) and refuses the move (NOT_YOUR_TURN)."""
    other = ServerThread(observed_redis.url)
    client, elsewhere = Client(served.address), Client(other.address)
    try:
        game = client.create("gin")
        rng = random.Random(7)
        while True:  # until a seat has drawn (through the subprocess) and must discard
            view = client.view(game, game.tokens[client.view(game, game.tokens[0]).to_act])
            answer = client.move(game, game.tokens[view.to_act], bot_move(view, rng))
            discards = [m for m in answer.view.legal_moves if m.WhichOneof("move") == "discard"]
            if answer.view.to_act == view.to_act and len(discards) >= 2:
                break
        seat = answer.view.to_act
        before = scrape(served.metrics_url)
        elsewhere.move(game, game.tokens[seat], discards[0])  # the other referee: the subprocess's state is stale
        with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"):
            client.move(game, game.tokens[seat], discards[1])
        after = scrape(served.metrics_url)
        assert value(after, "rummy_commit_conflicts_total") - value(before, "rummy_commit_conflicts_total") == 1
        assert value(after, "rummy_move_retries_total") - value(before, "rummy_move_retries_total") == 1
    finally:
        client.close()
        elsewhere.close()
        other.stop()


def _strings(value: object, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)


def test_json_log_of_a_played_game_has_its_id_and_no_card(served: Served) -> None:
    client = Client(served.address)
    try:
        game = client.create("gin", match=rpb.MatchSettings(target_score=1))
        rng = random.Random(5)
        finish(client, game, rng, request_ids="move-")
    finally:
        client.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the "match over" line is written as the last move is answered
        lines = [json.loads(line) for line in served.log.read_text().splitlines() if line.strip()]
        ours = [line for line in lines if line.get("game_id") == game.game_id]
        if any("match over" in line["message"] for line in ours):
            break
        time.sleep(0.1)
    for line in lines:  # every line a JSON object with these fields
        assert {"time", "level", "logger", "message"} <= line.keys(), line
    assert any(line.get("method") == "CreateGame" for line in ours), ours
    over = [line for line in ours if "match over" in line["message"]]
    assert len(over) == 1 and over[0]["method"] == "SubmitMove" and over[0]["request_id"].startswith("move-"), ours
    for line in lines:
        for key, text in _strings(line):
            if key in ("game_id", "request_id"):  # random ids of ours, checked for what they are
                assert re.fullmatch(r"[A-Za-z0-9_-]*", text), line
                continue
            assert not CARD.search(text), f"a card in the log: {line}"


def test_json_lines_cut_a_call_context_the_caller_made_huge() -> None:
    """The context is set before the ids are checked (a refused call may log: the limiter's line), so a request's
    10,000-character request_id or game_id must not go onto the line whole."""
    formatter = JsonFormatter()
    token = call_context.set(("SubmitMove", "g" * 10_000, "r" * 10_000))
    try:
        line = json.loads(formatter.format(logging.LogRecord("rummy_referee", logging.WARNING, __file__, 1,
                                                             "refused", (), None)))  # fmt: skip
    finally:
        call_context.reset(token)
    assert len(line["game_id"]) <= 128 and len(line["request_id"]) <= 128
    assert line["game_id"].startswith("ggg") and line["request_id"].endswith("...")


def test_json_lines_take_the_call_context_and_never_an_exception_text() -> None:
    formatter = JsonFormatter()
    token = call_context.set(("SubmitMove", "g_abc", "move-1"))
    try:
        try:
            raise RuntimeError("the hand was AS KD 7C")
        except RuntimeError:
            info = sys.exc_info()
            record = logging.LogRecord("rummy_referee", logging.ERROR, __file__, 1, "internal error", (), info)
        line = json.loads(formatter.format(record))
    finally:
        call_context.reset(token)
    assert line["message"] == "internal error" and line["level"] == "ERROR" and line["logger"] == "rummy_referee"
    assert (line["method"], line["game_id"], line["request_id"]) == ("SubmitMove", "g_abc", "move-1")
    assert line["exc_type"] == "RuntimeError" and "test_observability.py" in line["stack"]
    assert "AS KD" not in json.dumps(line)
    outside = json.loads(formatter.format(logging.LogRecord("x", logging.INFO, __file__, 1, "hello %s", ("you",),
                                                            None)))  # fmt: skip
    assert outside["message"] == "hello you" and "game_id" not in outside and outside["time"].endswith("Z")


def test_text_lines_never_have_an_exception_text_either() -> None:
    """The default format (text) too: an exception is its type and where it was raised, never its message (nor
    its cause's, nor the source lines): "internal error" of a bug whose exception named a card printed the card,
    as Python's default formatting prints the whole traceback."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    try:
        configure("text", stream=stream)
        log = logging.getLogger("rummy_referee")
        try:
            try:
                raise KeyError("st_secret-token-of-seat-1")
            except KeyError as cause:
                raise RuntimeError("the hand was AS KD 7C") from cause
        except RuntimeError:
            log.error("internal error", exc_info=True)
            log.exception("bot host: playing %s failed", "g_x:1")
        log.info("hand %s", "dealt", stack_info=True)
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved:
            root.addHandler(handler)
        root.setLevel(level)
    text = stream.getvalue()
    assert "internal error" in text and "bot host: playing g_x:1 failed" in text and "hand dealt" in text
    assert "RuntimeError" in text and "test_observability.py" in text, text
    for secret in ("AS KD", "st_secret", "raise RuntimeError", "log.info("):
        assert secret not in text, text
    assert len(text.splitlines()) == 3, text  # one line per record


def test_exposition_serves_either_text_format() -> None:
    """The body any HTTP server can send for /metrics, in the format the scraper asks for."""
    metrics = Metrics()
    metrics.move_refused("NOT_YOUR_TURN")
    body, content_type = metrics.exposition(None)
    assert content_type.startswith("text/plain")
    assert b'rummy_moves_total{outcome="refused",reason="NOT_YOUR_TURN"} 1.0' in body
    body, content_type = metrics.exposition("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text") and body.rstrip().endswith(b"# EOF")


def test_storage_failures_are_counted(private_redis: RedisProcess, tmp_path: Path) -> None:
    """Redis gone: the move is refused STORAGE_UNAVAILABLE, and the storage operation that failed is counted."""
    served = start_serve(private_redis.url, tmp_path)
    client = Client(served.address)
    try:
        game = client.create("gin")
        before = scrape(served.metrics_url)
        private_redis.stop()
        with expect_error(grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE"):
            client.move(game, game.tokens[1], move_from_text("draw stock"))
        after = scrape(served.metrics_url)
        assert value(after, "rummy_moves_total", outcome="refused", reason="STORAGE_UNAVAILABLE") == 1
        # (an error's status is counted just after gRPC sends it: abort() sends first, then raises)
        assert wait_for(served.metrics_url, "rummy_rpc_handled_total", 1, method=SUBMIT, code="UNAVAILABLE") == 1

        def errors(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
            return sum(v for (name, _), v in samples.items() if name == "rummy_storage_errors_total")

        assert errors(after) - errors(before) >= 1
        assert value(after, "rummy_storage_errors_total", op="create") == 0
    finally:
        client.close()
        stop_serve(served.process)


def test_house_bot_seats_are_counted(private_redis: RedisProcess, tmp_path: Path) -> None:
    """A house-bot seat being played shows in ``rummy_bot_seats_playing``; once the match is over (the human
    resigns) the seat is counted finished, and no bot failure was counted."""
    from clients.sdk import RefereeClient, SeatSpec

    served = start_serve(private_redis.url, tmp_path, ["--bot-poll", "0.2"])
    client = RefereeClient(served.address)
    try:
        assert value(scrape(served.metrics_url), "rummy_bot_seats_playing") == 0
        game = client.create_game("gin", ["Ann", SeatSpec(bot="gin")])
        assert wait_for(served.metrics_url, "rummy_bot_seats_playing", 1) == 1
        client.resign(game.game_id, token=game.tokens[0])
        assert wait_for(served.metrics_url, "rummy_bot_seats_finished_total", 1) == 1
        after = scrape(served.metrics_url)
        assert value(after, "rummy_bot_seats_playing") == 0
        assert value(after, "rummy_bot_failures_total", kind="timeout") == 0
        assert value(after, "rummy_bot_failures_total", kind="error") == 0
    finally:
        client.close()
        stop_serve(served.process)


def test_a_stream_left_by_its_client_while_an_answer_is_sent_counts_as_cancelled() -> None:
    """A client that goes away while the server is sending it a stream's message (a house bot or the SDK leaving
    its watch at the match's end) is CANCELLED, not UNKNOWN: grpc.aio then closes the handler's generator at its
    ``yield`` (GeneratorExit), which is no exception escaping a handler. The handler below never waits for
    anything but the sending of its messages, so it is always at its ``yield`` when the client leaves."""
    metrics = Metrics()
    method = "/t.Streams/Forever"

    async def forever(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> Any:
        while True:
            yield b"x" * 1024

    def ident(data: bytes) -> bytes:
        return data

    handler = grpc.unary_stream_rpc_method_handler(forever, request_deserializer=ident, response_serializer=ident)

    async def run() -> None:
        server = grpc.aio.server(interceptors=[ObserveInterceptor(metrics)])
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.Streams", {"Forever": handler}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_stream(method, request_serializer=ident, response_deserializer=ident)(b"")
                assert await call.read() == b"x" * 1024
                call.cancel()

            def counted() -> dict[str, float]:
                body, _ = metrics.exposition(None)
                return {s.labels["code"]: s.value for f in text_string_to_metric_families(body.decode())
                        for s in f.samples if s.name == "rummy_rpc_handled_total"}  # fmt: skip

            await asyncio.to_thread(wait_until, lambda: bool(counted()), "counted the stream")
            assert counted() == {"CANCELLED": 1.0}
        finally:
            await server.stop(None)

    asyncio.run(run())


def test_calls_on_the_http_port_are_counted_as_on_the_grpc_port(redis_server: RedisProcess, tmp_path: Path) -> None:
    """Connect (JSON) calls on the HTTP port count in the same series as gRPC's, by method and gRPC status name:
    an accepted CreateGame, a GetGame without a token (UNAUTHENTICATED), a refused move (FAILED_PRECONDITION),
    and a WatchGame stream while it is open and once it ends."""
    process = RefereeProcess(
        ["--port", "0", "--http-port", "0", "--redis-url", redis_server.url, "--metrics-port", "0", "--grace", "1",
         "--no-bots"],
        log=tmp_path / "stderr.log", copy_stdout=False,
    ).start(60)  # fmt: skip
    try:
        url, metrics_url = f"http://{process.http_address}/rummy.v1.RefereeService/", f"http://{process.metrics_address}/metrics"

        def post(method: str, body: dict[str, object], token: str | None = None) -> tuple[int, dict[str, Any]]:
            headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
            request = urllib.request.Request(url + method, json.dumps(body).encode(), headers)
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:
                    return reply.status, json.loads(reply.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        def handled(method: str, code: str) -> float:
            return value(scrape(metrics_url), "rummy_rpc_handled_total", method=f"rummy.v1.RefereeService/{method}",
                         code=code)  # fmt: skip

        status, game = post("CreateGame", {"profile": "gin", "seats": [{"displayName": "A"}, {"displayName": "B"}]})
        assert status == 200
        assert handled("CreateGame", "OK") == 1
        assert value(scrape(metrics_url), "rummy_rpc_duration_seconds_count",
                     method="rummy.v1.RefereeService/CreateGame") == 1  # fmt: skip
        assert post("GetGame", {"gameId": game["gameId"]})[0] == 401
        assert handled("GetGame", "UNAUTHENTICATED") == 1
        idle = game["seatTokens"][0]["token"]  # the dealer's: seat 1 acts first
        assert post("SubmitMove", {"gameId": game["gameId"], "move": {"drawStock": {}}}, idle)[0] == 400
        assert handled("SubmitMove", "FAILED_PRECONDITION") == 1

        body = json.dumps({"gameId": game["gameId"]}).encode()
        headers = {"content-type": "application/connect+json", "authorization": f"Bearer {idle}"}
        envelope = b"\0" + len(body).to_bytes(4, "big") + body  # a stream's request: one enveloped message
        watch = urllib.request.Request(url + "WatchGame", envelope, headers)
        with urllib.request.urlopen(watch, timeout=10) as stream:
            assert stream.read(5)  # the snapshot's envelope has begun
            assert wait_for(metrics_url, "rummy_rpc_streams_active", 1, method=WATCH) == 1
        assert wait_for(metrics_url, "rummy_rpc_streams_active", 0, method=WATCH) == 0
        assert wait_for(metrics_url, "rummy_rpc_handled_total", 1, method=WATCH, code="CANCELLED") == 1
    finally:
        process.stop(20)
