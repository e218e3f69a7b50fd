"""The web table (server/web, served at / on the referee's HTTP port) played in a real browser: headless Chromium
from Debian's package, driven by Playwright for Python. One seat is played in the page with the mouse, the other
seats by refkit's bot through native gRPC. Checked: the page offers exactly the legal moves; the final scores it
shows are GetReplay's; a spectator page follows the game live; every byte either page receives (HTTP responses and
the WatchGame stream) holds no card its viewer may not see at that version (the scan of
tests/server/test_hidden_info.py, on Connect JSON); a refused move is shown in words; the page reconnects after a
dropped connection and goes on. A screenshot of the table at the end of the hand goes to the test's tmp dir.

Skipped (with the reason) when Playwright or /usr/bin/chromium is missing: `.ci/run` installs chromium."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec
from server.redis_launcher import RedisProcess
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, md
from tests.web.tablekit import (
    CHROMIUM,
    LAUNCH_ARGS,
    TIMEOUT_MS,
    BotSeats,
    Capture,
    CuttableProxy,
    TablePage,
    play_with_mouse,
    visible,
    why_no_browser,
)

NO_BROWSER = why_no_browser()
pytestmark = pytest.mark.skipif(NO_BROWSER is not None, reason=f"browser tests: {NO_BROWSER}")
SEED = bytes(range(40, 72))
ALL = frozenset(engine.card_text(c) for c in range(52))
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "web-table.png"


@pytest.fixture(scope="module")
def server(redis_server: RedisProcess) -> Iterator[ServerThread]:
    srv = ServerThread(redis_server.url, http=True)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def client(server: ServerThread) -> Iterator[Client]:
    c = Client(server.address)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            b.close()


def _page(browser: Any, url: str) -> tuple[Any, Capture, list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 860})
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    capture = Capture()
    capture.attach(page)
    page.goto(url)
    return page, capture, errors


class Recorder(Client):
    """refkit's Client that also records every move applied, by the version it made (for the engine replica)."""

    moves: dict[int, tuple[int, pb.Move]]

    def move(self, game: Game, token: str, move: pb.Move, **fields: Any) -> rpb.SubmitMoveResponse:
        response = super().move(game, token, move, **fields)
        self.moves[response.version] = (response.view.viewer_seat, move)
        return response


def _replica(game: Game, moves: dict[int, tuple[int, pb.Move]]) -> tuple[
        list[engine.GameState], dict[int, tuple[frozenset[str], int]]]:  # fmt: skip
    """The state at every version (from the seed and the moves), and for each hand-ending version the old hand's
    stock and the index of the next hand's first event (refkit's rule: the events before it reveal the old hand)."""
    options = {k: getattr(v, str(v.WhichOneof("value"))) for k, v in game.created.settings.options.items()}
    state = engine.new_game(engine.Rules.from_dict(options), SEED)
    states = [state]
    ended: dict[int, tuple[frozenset[str], int]] = {}
    for version in range(1, max(moves) + 1):
        seat, move = moves[version]
        before = state
        state, events = engine.apply(state, seat, codec.move_from_proto(move))
        states.append(state)
        kinds = [e.kind for e in events]
        if "hand_ended" in kinds:
            nxt = kinds.index("hand_started") + 1 if "hand_started" in kinds else len(kinds) + 1
            ended[version] = (frozenset(engine.card_text(c) for c in before.stock), nxt)
    return states, ended


def _cards_in(obj: Any) -> set[str]:
    text = json.dumps(obj)
    return {c for c in ALL if f'"{c}"' in text}


def scan(capture: Capture, viewer: int, states: list[engine.GameState],
         ended: dict[int, tuple[frozenset[str], int]]) -> int:  # fmt: skip
    """Assert no message the page received holds a card ``viewer`` may not see at its version; returns how many
    pieces were checked."""
    checked = 0

    def check(what: str, version: int, obj: Any, index: int | None = None) -> None:
        nonlocal checked
        if index is not None and version in ended and index < ended[version][1]:
            hidden = ended[version][0]  # the events that end a hand reveal it, except its stock
        else:
            hidden = ALL - visible(states[version], viewer)
        leaks = _cards_in(obj) & hidden
        assert not leaks, f"the page of viewer {viewer} got hidden {sorted(leaks)} in {what} at version {version}"
        checked += 1

    def check_view(what: str, view: dict[str, Any]) -> None:
        view = dict(view)
        view.pop("lastHand", None)  # the previous hand, revealed at its end (checked as its events)
        check(what, int(view.get("version", 0)), view)

    for url, message in capture.messages():
        if "view" in message:
            check_view(url, message["view"])
        if "snapshot" in message:
            check_view(url, message["snapshot"])
        events = message.get("events", []) + ([message["event"]] if "event" in message else [])
        for event in events:
            check(f"{url} event {event.get('kind')}", int(event.get("version", 0)), event, int(event.get("index", 0)))
        rest = {k: v for k, v in message.items() if k not in ("view", "snapshot", "events", "event")}
        if rest:
            check(f"{url} (rest)", len(states) - 1, rest)  # errors and the like: nothing hidden even at the end
    return checked


def _final_totals(client: Client, game: Game) -> list[int]:
    pages = client.replay(game, ORGANIZER)
    return list(pages[-1].current.result.totals)


def _shown_totals(page: Any) -> list[int]:
    page.wait_for_selector("#match-over")
    cells = page.eval_on_selector_all("#hand-end .total", "els => els.map(e => Number(e.textContent))")
    return [int(x) for x in cells]


def test_gin_hand_in_the_page_with_a_spectator_and_nothing_hidden_received(
    server: ServerThread, browser: Any, tmp_path: Path
) -> None:
    recorder = Recorder(server.address)
    recorder.moves = {}
    request = rpb.CreateGameRequest(
        profile="gin", seed=SEED, allow_spectators=True, match=rpb.MatchSettings(target_score=1),
        seats=[pb.SeatSpec(display_name="Ann", kind=pb.SEAT_KIND_HUMAN),
               pb.SeatSpec(display_name="Gin bot", kind=pb.SEAT_KIND_BOT)],
    )  # fmt: skip
    created = recorder.stub.CreateGame(request, metadata=md(ORGANIZER))
    game = Game(created.game_id, {t.seat: t.token for t in created.seat_tokens}, created.spectator_token, created)
    page, capture, errors = _page(browser, f"{server.http_url}/#game={game.game_id}&token={game.tokens[0]}")
    spectator, spec_capture, spec_errors = _page(
        browser, f"{server.http_url}/#game={game.game_id}&token={game.spectator}"
    )
    table = TablePage(page)
    page.wait_for_selector("#hand .card")
    assert page.locator("#hand .card").count() == 10
    spectator.wait_for_selector("body[data-role='SPECTATOR']")
    assert spectator.locator("#hand .card").count() == 0
    assert spectator.locator("#mine").is_hidden()

    # a refused move, in words: double-clicking a card discards it, which is not allowed now (not the page's turn,
    # or its turn to draw)
    page.dblclick("#hand .card >> nth=0")
    page.wait_for_selector("#refusal:not([hidden])")
    reason = page.get_attribute("#refusal", "data-reason")
    assert reason in ("NOT_YOUR_TURN", "WRONG_PHASE")
    assert ("not your turn" in page.inner_text("#refusal")) or ("part of the turn" in page.inner_text("#refusal"))

    bots = BotSeats(recorder, game, [1])

    played = play_with_mouse(table, recorder, game, 0, random.Random(3), recorder.moves)
    bots.join()
    assert played >= 2
    totals = _shown_totals(page)
    assert totals == _final_totals(recorder, game)
    assert page.locator("#hand-end .row").count() == 2  # every hand shown
    page.screenshot(path=str(tmp_path / "web-table-gin.png"))
    spectator.wait_for_function("document.body.dataset.phase === 'MATCH_OVER'")
    assert _shown_totals(spectator) == totals
    assert int(spectator.get_attribute("body", "data-version") or 0) == max(recorder.moves)

    states, ended = _replica(game, recorder.moves)
    assert scan(capture, 0, states, ended) > played
    assert scan(spec_capture, engine.SPECTATOR, states, ended) > 3
    assert not errors and not spec_errors, errors + spec_errors
    recorder.close()


def test_rummy_three_players_joined_by_id_reconnects_and_scores_as_replayed(
    server: ServerThread, browser: Any, tmp_path: Path
) -> None:
    recorder = Recorder(server.address)
    recorder.moves = {}
    request = rpb.CreateGameRequest(
        profile="rummy", allow_spectators=True, match=rpb.MatchSettings(max_hands=1), seed=SEED,
        seats=[pb.SeatSpec(open=True), pb.SeatSpec(display_name="Bot A", kind=pb.SEAT_KIND_BOT),
               pb.SeatSpec(display_name="Bot B", kind=pb.SEAT_KIND_BOT)],
    )  # fmt: skip
    created = recorder.stub.CreateGame(request, metadata=md(ORGANIZER))
    game = Game(created.game_id, {t.seat: t.token for t in created.seat_tokens}, created.spectator_token, created)
    proxy = CuttableProxy(("127.0.0.1", server.http_port))
    page, capture, errors = _page(browser, f"http://127.0.0.1:{proxy.port}/")
    page.fill("#join-game input[name=game]", game.game_id)
    page.fill("#join-game input[name=name]", "Ann")
    page.click("#join")
    page.wait_for_selector("#hand .card")
    token = parse_qs(urlparse(page.url).fragment)["token"][0]
    game.tokens[0] = token
    assert page.locator(".seat[data-seat='0'] .name").inner_text() == "Ann"
    assert page.locator("#hand .card").count() == 7

    bots = BotSeats(recorder, game, [1, 2])
    table = TablePage(page)
    rng = random.Random(5)
    # a few moves, then the connection drops: the page says so, comes back, and resumes the stream
    played = 0
    for _ in range(2):
        if not table.wait_turn_or_end():
            break
        view = recorder.view(game, token)
        move = bot_move(view, rng)
        table.play(move)
        recorder.moves[view.version + 1] = (0, move)
        played += 1
    page.wait_for_selector("#status[data-status='live']")
    proxy.cut()
    page.wait_for_selector("#status[data-status='reconnecting']")
    page.wait_for_selector("#status[data-status='live']")
    played += play_with_mouse(table, recorder, game, 0, rng, recorder.moves)
    bots.join()
    totals = _shown_totals(page)
    assert totals == _final_totals(recorder, game)
    assert page.locator("#hand-end .row").count() == 3
    page.screenshot(path=str(tmp_path / "web-table-rummy.png"))
    assert proxy.cuts == 1
    # what the page got (the stream cut mid-hand has no complete body: what it received is not in the capture)
    states, ended = _replica(game, recorder.moves)
    assert scan(capture, 0, states, ended) > played
    assert not errors, errors
    proxy.close()
    recorder.close()


def test_lobby_starts_a_game_and_shows_a_refused_join_in_words(server: ServerThread, browser: Any) -> None:
    page, _capture, errors = _page(browser, f"{server.http_url}/")
    page.fill("#join-game input[name=game]", "no-such-game")
    page.fill("#join-game input[name=token]", "not-a-token")
    page.click("#join")
    page.wait_for_selector("#lobby-error")
    assert page.get_attribute("#lobby-error", "data-reason") in ("GAME_NOT_FOUND", "BAD_TOKEN")
    assert "Refused:" in page.inner_text("#lobby-error")
    page.select_option("#new-game select[name=profile]", "rummy")
    page.fill("#new-game input[name=players]", "3")
    page.fill("#new-game input[name=name]", "Cy")
    page.click("#create")
    page.wait_for_selector("#hand .card")
    assert page.locator("#hand .card").count() == 7
    assert page.locator(".seat").count() == 3
    for seat in (1, 2):  # open seats (join by the game id), or house bots where the referee has them
        text = page.locator(f".seat[data-seat='{seat}']").inner_text()
        assert "open seat" in text or "bot" in text
    page.click("#sort-rank")
    ranks = page.eval_on_selector_all("#hand .card", "els => els.map(e => 'A23456789TJQK'.indexOf(e.dataset.card[0]))")
    assert ranks == sorted(ranks)
    assert not errors, errors
