"""The web table (server/web, served at / on the referee's HTTP port) played in a real browser: headless Chromium
from Debian's package, driven by Playwright for Python. One seat is played in the page with the mouse, the other
seats by the referee's house bots (SeatSpec.bot, played by the bot host of a real `rummy-referee serve`
subprocess through the public API). Checked: the page offers exactly the legal moves; the final scores it shows
are GetReplay's; a spectator page follows the game live; every byte either page receives (HTTP responses and the
WatchGame stream) holds no card its viewer may not see at that version (the scan of
tests/server/test_hidden_info.py, on Connect JSON; the states rebuilt from the seed GetReplay reveals at the
match's end and the moves its events name); a refused move is shown in words; the page reconnects after a
dropped connection and goes on; a move tried while the referee is out of reach is shown as that, in words, until
the page is back; the cards the page names in words (action buttons, known cards, the log) are faces, "10♥", not engine
text; the end of a hand fits a phone's width. A screenshot of the table at the end of the hand goes to the test's
tmp dir.

Skipped (with the reason) when Playwright or /usr/bin/chromium is missing: `.ci/run` installs chromium."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

import engine
from clients.sdk.convert import event_from_proto
from clients.sdk.records import moves_from_events
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec
from server.redis_launcher import RedisProcess
from tests.clients.clientkit import ServerProcess
from tests.server.refkit import ORGANIZER, Client, Game, bot_move, deal, md, move_from_text
from tests.web.tablekit import (
    CHROMIUM,
    LAUNCH_ARGS,
    RAW_CARD,
    TIMEOUT_MS,
    Capture,
    CuttableProxy,
    TablePage,
    face,
    play_with_mouse,
    visible,
    why_no_browser,
)

NO_BROWSER = why_no_browser()
pytestmark = pytest.mark.skipif(NO_BROWSER is not None, reason=f"browser tests: {NO_BROWSER}")
ALL = frozenset(engine.card_text(c) for c in range(52))
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "web-table.png"


@dataclass
class Referee:
    """A real `rummy-referee serve` (its bot host plays the house-bot seats), its gRPC and HTTP ports."""

    process: ServerProcess

    @property
    def address(self) -> str:
        return self.process.address

    @property
    def http_port(self) -> int:
        assert self.process.http_port is not None
        return self.process.http_port

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"


@pytest.fixture(scope="module")
def server(redis_server: RedisProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Referee]:
    process = ServerProcess(redis_server.url, log_dir=tmp_path_factory.mktemp("referee"), http=True,
                            args=["--bot-poll", "0.2"])  # fmt: skip
    process.start()
    try:
        yield Referee(process)
    finally:
        process.stop()


@pytest.fixture(scope="module")
def client(server: Referee) -> Iterator[Client]:
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


@dataclass
class Replayed:
    """What GetReplay says of a finished match: its final totals, every move (engine moves by the version each
    made, with the seat), and the state at every version rebuilt from the revealed seed and those moves; for each
    hand-ending version the old hand's stock and the index of the next hand's first event (refkit's rule: the
    events before it reveal the old hand)."""

    totals: list[int]
    moves: dict[int, tuple[int, engine.Move]]
    states: list[engine.GameState]
    ended: dict[int, tuple[frozenset[str], int]]

    @property
    def last_version(self) -> int:
        return max(self.moves)

    def seats_moves(self, seat: int) -> dict[int, str]:
        """The moves ``seat`` made, as the engine's text, by version."""
        return {v: engine.move_text(m) for v, (s, m) in self.moves.items() if s == seat}


def _replayed(client: Client, game: Game) -> Replayed:
    pages = client.replay(game, ORGANIZER)
    settings = pages[0].settings
    assert settings.seed, "GetReplay reveals the seed once the match is over"
    options = {k: getattr(v, str(v.WhichOneof("value"))) for k, v in settings.options.items()}
    events = [event_from_proto(e) for page in pages for e in page.events]
    moves = {int(m["version"]): (int(m["seat"]), engine.parse_move(m["move"])) for m in moves_from_events(events)}
    state = engine.new_game(engine.Rules.from_dict(options), settings.seed)
    states = [state]
    ended: dict[int, tuple[frozenset[str], int]] = {}
    for version in range(1, max(moves) + 1):
        seat, move = moves[version]
        before = state
        state, applied = engine.apply(state, seat, move)
        states.append(state)
        kinds = [e.kind for e in applied]
        if "hand_ended" in kinds:
            nxt = kinds.index("hand_started") + 1 if "hand_started" in kinds else len(kinds) + 1
            ended[version] = (frozenset(engine.card_text(c) for c in before.stock), nxt)
    totals = list(pages[-1].current.result.totals)
    return Replayed(totals, moves, states, ended)


def _cards_in(obj: Any) -> set[str]:
    text = json.dumps(obj)
    return {c for c in ALL if f'"{c}"' in text}


def scan(capture: Capture, viewer: int, replayed: Replayed) -> int:
    """Assert no message the page received holds a card ``viewer`` may not see at its version; returns how many
    pieces were checked."""
    checked = 0
    states, ended = replayed.states, replayed.ended

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


def _shown_totals(page: Any) -> list[int]:
    page.wait_for_selector("#match-over")
    cells = page.eval_on_selector_all("#hand-end .total", "els => els.map(e => Number(e.textContent))")
    return [int(x) for x in cells]


def _session(page: Any) -> tuple[str, str]:
    """The game id and token the page plays (kept in its address)."""
    fragment = parse_qs(urlparse(page.url).fragment)
    return fragment["game"][0], fragment["token"][0]


def _check_page_moves(played: dict[int, tuple[int, pb.Move]], replayed: Replayed, seat: int) -> None:
    """Every move the page made is the replay's move of that version, and the page's seat made no other."""
    ours = replayed.seats_moves(seat)
    assert set(played) == set(ours), "the replay holds the page's moves, and the house bots made the others"
    for version, (_, move) in played.items():
        if move.WhichOneof("move") not in ("knock", "declare"):  # these come back as the melds the referee chose
            assert ours[version] == engine.move_text(codec.move_from_proto(move)), (version, move)


def test_gin_hand_started_in_the_lobby_against_a_house_bot_with_a_spectator_and_nothing_hidden_received(
    server: Referee, client: Client, browser: Any, tmp_path: Path
) -> None:
    page, capture, errors = _page(browser, f"{server.http_url}/")
    page.select_option("#new-game select[name=profile]", "gin")
    page.fill("#new-game input[name=name]", "Ann")
    assert page.input_value("#new-game select[name=others]") == "bots"  # house bots, the default
    page.select_option("#new-game select[name=length]", "hand")
    page.check("#new-game input[name=spectators]")
    page.click("#create")
    page.wait_for_selector("#hand .card")
    game_id, token = _session(page)
    spectator_token = page.get_attribute("body", "data-spectator-token")
    assert spectator_token
    game = Game(game_id, {0: token}, spectator_token, rpb.CreateGameResponse(game_id=game_id))
    assert page.locator("#hand .card").count() == 10
    assert "bot" in page.locator(".seat[data-seat='1']").inner_text()
    # the lobby's note names no one to join: the other seat is a house bot's, not open
    assert f"game {game_id} created" in page.inner_text("#log") and "join" not in page.inner_text("#log")
    spectator, spec_capture, spec_errors = _page(browser, f"{server.http_url}/#game={game_id}&token={spectator_token}")
    spectator.wait_for_selector("body[data-role='SPECTATOR']")
    assert spectator.locator("#hand .card").count() == 0
    assert spectator.locator("#mine").is_hidden()

    # a refused move, in words: double-clicking a card discards it, which the first turn (take or pass the upcard,
    # or draw after the bot took it) does not allow; the house bot waits for the page meanwhile
    table = TablePage(page)
    assert table.wait_turn_or_end()
    page.dblclick("#hand .card >> nth=0")
    page.wait_for_selector("#refusal:not([hidden])")
    assert page.get_attribute("#refusal", "data-reason") == "WRONG_PHASE"
    assert "part of the turn" in page.inner_text("#refusal")

    played: dict[int, tuple[int, pb.Move]] = {}
    count = play_with_mouse(table, client, game, 0, random.Random(3), played)
    assert count >= 2
    totals = _shown_totals(page)
    replayed = _replayed(client, game)
    assert totals == replayed.totals
    _check_page_moves(played, replayed, 0)
    assert replayed.seats_moves(1), "the house bot played"
    assert page.locator("#hand-end .row").count() == 2  # every hand shown
    page.screenshot(path=str(tmp_path / "web-table-gin.png"))
    # the log says what each seat did in words, its cards as faces ("Gin bot 1: discarded 10♥"), not the events'
    # kinds ("6.1 Gin bot 1: discarded", "hand_ended"); the line of the game's creation names its id and tokens
    said = [line for line in page.inner_text("#log").splitlines() if " created" not in line]
    assert any(re.fullmatch(r"Gin bot 1: discarded (10|[A2-9JQK])[♠♥♦♣]", line) for line in said), said
    assert not any(RAW_CARD.search(line) or "_" in line for line in said), said
    # on a phone the hand's end fits the screen's width: its scores and the Close button are not off to the side
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    close = page.locator("#hand-end-close").bounding_box()
    assert close and close["x"] + close["width"] <= 390, close
    page.screenshot(path=str(tmp_path / "web-table-gin-phone.png"), full_page=True)
    spectator.wait_for_function("document.body.dataset.phase === 'MATCH_OVER'")
    assert _shown_totals(spectator) == totals
    assert int(spectator.get_attribute("body", "data-version") or 0) == replayed.last_version

    assert scan(capture, 0, replayed) > count
    assert scan(spec_capture, engine.SPECTATOR, replayed) > 3
    assert not errors and not spec_errors, errors + spec_errors


def test_rummy_three_players_two_house_bots_joined_by_id_reconnects_and_scores_as_replayed(
    server: Referee, client: Client, browser: Any, tmp_path: Path
) -> None:
    request = rpb.CreateGameRequest(
        profile="rummy", allow_spectators=True, match=rpb.MatchSettings(max_hands=1),
        seats=[pb.SeatSpec(open=True), pb.SeatSpec(display_name="Bot A", bot="rummy"),
               pb.SeatSpec(display_name="Bot B", bot="gin")],
    )  # fmt: skip
    created = client.stub.CreateGame(request, metadata=md(ORGANIZER))
    assert {t.seat for t in created.seat_tokens} == set(), "no token for an open seat nor a house bot's"
    game = Game(created.game_id, {}, created.spectator_token, created)
    proxy = CuttableProxy(("127.0.0.1", server.http_port))
    page, capture, errors = _page(browser, f"http://127.0.0.1:{proxy.port}/")
    page.fill("#join-game input[name=game]", game.game_id)
    page.fill("#join-game input[name=name]", "Ann")
    page.click("#join")
    page.wait_for_selector("#hand .card")
    game.tokens[0] = _session(page)[1]
    assert page.locator(".seat[data-seat='0'] .name").inner_text() == "Ann"
    assert page.locator("#hand .card").count() == 7
    for seat in (1, 2):
        assert "bot" in page.locator(f".seat[data-seat='{seat}']").inner_text()

    table = TablePage(page)
    rng = random.Random(5)
    played: dict[int, tuple[int, pb.Move]] = {}
    # a few moves, then the connection drops: the page says so, comes back, and resumes the stream
    for _ in range(2):
        if not table.wait_turn_or_end():
            break
        view = client.view(game, game.tokens[0])
        move = bot_move(view, rng)
        table.play(move)
        played[view.version + 1] = (0, move)
    page.wait_for_selector("#status[data-status='live']")
    proxy.cut()
    page.wait_for_selector("#status[data-status='reconnecting']")
    page.wait_for_selector("#status[data-status='live']")
    # the referee out of reach (as while it restarts): a move tried meanwhile is not made, and the page says why in
    # words (not the browser's "Failed to fetch"); once the referee is back the note goes and play goes on. The
    # move tried is a draw: first the page's turn is played on to its next draw (a turn may go on after the two
    # moves above, when the bot's choice after its draw was a meld: the random deal decides)
    while (my_turn := table.wait_turn_or_end()) and (view := client.view(game, game.tokens[0])).phase != pb.PHASE_DRAW:
        move = bot_move(view, rng)
        table.play(move)
        played[view.version + 1] = (0, move)
    if my_turn:
        page.wait_for_selector("#stock.clickable")
        proxy.refusing = True
        proxy.cut()
        page.wait_for_selector("#status[data-status='reconnecting']")
        page.click("#stock")
        page.wait_for_selector("#refusal:not([hidden])")
        assert "cannot reach the referee" in page.inner_text("#refusal"), page.inner_text("#refusal")
        assert "Failed to fetch" not in page.inner_text("#refusal")
        proxy.refusing = False
        page.wait_for_selector("#status[data-status='live']")
        page.wait_for_selector("#refusal", state="hidden")
    count = len(played) + play_with_mouse(table, client, game, 0, rng, played)
    totals = _shown_totals(page)
    replayed = _replayed(client, game)
    assert totals == replayed.totals
    _check_page_moves(played, replayed, 0)
    assert replayed.seats_moves(1) and replayed.seats_moves(2), "both house bots played"
    assert page.locator("#hand-end .row").count() == 3
    page.screenshot(path=str(tmp_path / "web-table-rummy.png"))
    assert proxy.cuts in (1, 2)  # the second: the referee out of reach, unless the hand had ended by then
    # what the page got (the stream cut mid-hand has no complete body: what it received is not in the capture)
    assert scan(capture, 0, replayed) > count
    assert not errors, errors
    proxy.close()


def test_lobby_starts_a_game_with_a_clock_and_shows_a_refused_join_in_words(
    server: Referee, browser: Any, tmp_path: Path
) -> None:
    page, _capture, errors = _page(browser, f"{server.http_url}/")
    # the join form, shorter than the new-game form beside it, keeps its fields and button at their own height
    # (not stretched to fill the taller form's height)
    join, start = page.locator("#join").bounding_box(), page.locator("#create").bounding_box()
    game_field = page.locator("#join-game input[name=game]").bounding_box()
    name_field = page.locator("#new-game input[name=name]").bounding_box()
    assert join and start and game_field and name_field
    assert join["height"] <= start["height"] + 1 and game_field["height"] <= name_field["height"] + 1
    page.fill("#join-game input[name=game]", "no-such-game")
    page.fill("#join-game input[name=token]", "not-a-token")
    page.click("#join")
    page.wait_for_selector("#lobby-error")
    assert page.get_attribute("#lobby-error", "data-reason") in ("GAME_NOT_FOUND", "BAD_TOKEN")
    assert "Refused:" in page.inner_text("#lobby-error")
    page.select_option("#new-game select[name=profile]", "rummy")
    page.fill("#new-game input[name=players]", "3")
    page.fill("#new-game input[name=name]", "Cy")
    page.select_option("#new-game select[name=clock]", "clock:60+1")
    page.click("#create")
    page.wait_for_selector("#hand .card")
    assert page.locator("#hand .card").count() == 7
    assert page.locator(".seat").count() == 3
    # the referee keeps a clock per seat: every seat shows its time left, the one to act counting down
    page.wait_for_selector(".seat.to-act .clock.running")
    assert page.locator(".seat .clock").count() == 3 and page.locator(".seat .clock.running").count() == 1
    shown = page.inner_text(".seat.to-act .clock .time")
    assert "0:50" <= shown <= "1:01", shown
    page.wait_for_function("t => document.querySelector('.seat.to-act .clock .time').textContent !== t", arg=shown)
    for seat in range(3):
        assert ":" in page.inner_text(f".seat[data-seat='{seat}'] .clock .time")
    page.screenshot(path=str(tmp_path / "web-table-clocks.png"))
    for seat in (1, 2):  # open seats (join by the game id), or house bots where the referee has them
        text = page.locator(f".seat[data-seat='{seat}']").inner_text()
        assert "open seat" in text or "bot" in text
    page.click("#sort-rank")
    ranks = page.eval_on_selector_all("#hand .card", "els => els.map(e => 'A23456789TJQK'.indexOf(e.dataset.card[0]))")
    assert ranks == sorted(ranks)
    assert not errors, errors


def test_a_seat_with_one_card_left_reads_1_card(server: Referee, client: Client, browser: Any) -> None:
    """Rummy: the player to act melds three runs and discards, keeping one card; the table counts it "1 card"
    (it read "1 cards"), as it counts the others' "10 cards"."""
    hand = "AS 2S 3S 4H 5H 6H 7C 8C 9C KD"
    game = client.create("rummy", token=ORGANIZER, preset_deals=[deal(1, [hand, "AH 2H 3H AC 2C 3C AD 2D 3D 4S"],
                                                                   "5S", stock_top="QD")])  # fmt: skip
    mover = game.tokens[0]
    for text in ("draw stock", "meld AS 2S 3S", "meld 4H 5H 6H", "meld 7C 8C 9C", "discard KD"):
        client.move(game, mover, move_from_text(text))
    page, _, errors = _page(browser, f"{server.http_url}/#game={game.game_id}&token={mover}")
    try:
        page.wait_for_selector("#seats .seat[data-seat='0'][data-hand-size='1']")
        assert page.inner_text(".seat[data-seat='0'] .hand-size") == "1 card"
        assert page.inner_text(".seat[data-seat='1'] .hand-size") == "10 cards"
        TablePage(page).check_counts()
        assert not errors
    finally:
        page.close()


def test_while_the_defender_lays_off_the_table_says_who_knocked_with_what_deadwood(
    server: Referee, client: Client, browser: Any
) -> None:
    """Gin: the knocker's deadwood and its face-up cards are public from the knock (RULES.md 4); the table said so
    only in the event log, so a page opened (or reloaded) during the layoffs did not show them."""
    game = client.create("gin", token=ORGANIZER, preset_deals=[deal(0, ["AH 2H 3H AC 2C 3C AD 3D 4S 5S",
                                                                         "AS 2S 3S 4H 5H 6H 7C 8C 9C KD"],
                                                                   "QC", stock_top="2D")])  # fmt: skip
    for text in ("draw stock", "knock KD"):
        client.move(game, game.tokens[1], move_from_text(text))
    assert client.view(game, game.tokens[0]).phase == pb.PHASE_LAYOFF
    page, _, errors = _page(browser, f"{server.http_url}/#game={game.game_id}&token={game.tokens[0]}")
    try:
        page.wait_for_selector("#info [data-knock]")
        assert page.inner_text("#info [data-knock]") == "knocked Bob, 2 deadwood (2\u2666)"
        assert not errors
    finally:
        page.close()


def test_the_whole_discard_pile_is_shown_in_order(server: Referee, client: Client, browser: Any) -> None:
    """RULES.md 4: the discard pile is visible to everyone, the whole of it (a Rummy player may want to know
    whether a card went by long ago); the table showed its top five cards only. Three seats draw from the stock
    and discard for three rounds: the seat's page and the spectator's show the upcard and all nine discards,
    bottom to top, the top one the card to take."""
    game = client.create("rummy", ("Ann", "Bob", "Cy"), token=ORGANIZER, seed=bytes(range(32)),
                         allow_spectators=True)  # fmt: skip
    rng = random.Random(7)
    for _ in range(9):
        mover = game.tokens[client.view(game, game.spectator).to_act]
        client.move(game, mover, move_from_text("draw stock"))
        client.move(game, mover, move_from_text(f"discard {rng.choice(client.view(game, mover).hand)}"))
    pile = list(client.view(game, game.spectator).discard_pile)
    assert len(pile) == 10
    for token in (game.tokens[0], game.spectator):
        page, _, errors = _page(browser, f"{server.http_url}/#game={game.game_id}&token={token}")
        try:
            page.wait_for_selector("#discard-top")
            shown = page.eval_on_selector_all("#discard-beneath [data-card], #discard .card",
                                              "cards => cards.map(c => c.dataset.card)")  # fmt: skip
            assert shown == pile  # in document order: bottom to top
            beneath = page.inner_text("#discard-beneath")
            assert beneath.split() == [face(c) for c in pile[:-5]] and not RAW_CARD.search(beneath), beneath
            assert page.get_attribute("#discard-top", "data-card") == pile[-1]
            assert not errors
        finally:
            page.close()


@pytest.mark.parametrize(("profile", "words", "players"), [
    ("gin-standard", "Gin Rummy, standard bonuses", 2), ("oklahoma-gin", "Oklahoma Gin", 2),
    ("hollywood-gin", "Hollywood Gin", 2), ("rummy-g4a", "Rummy, G4A rules", 3),
])  # fmt: skip
def test_the_lobby_offers_every_profile_and_the_table_names_it(
    server: Referee, client: Client, browser: Any, profile: str, words: str, players: int
) -> None:
    """RULES.md's six profiles can be started from the lobby (it offered only gin and rummy), each against house
    bots: the table names the profile; Rummy's G4A rules start with 3 seats, Gin's with the player count fixed at
    2; Oklahoma shows the knock limit its upcard set; Hollywood shows each seat's points in its three games."""
    page, _, errors = _page(browser, f"{server.http_url}/")
    try:
        page.select_option("#new-game select[name=profile]", profile)
        assert page.is_disabled("#new-game input[name=players]") == (players == 2)
        assert page.input_value("#new-game input[name=players]") == str(players)
        page.click("#create")
        page.wait_for_selector("#hand .card")
        game_id, token = _session(page)
        got = client.stub.GetGame(rpb.GetGameRequest(game_id=game_id), metadata=md(token))
        assert got.settings.profile == profile
        assert words in page.inner_text("#info")
        assert page.locator("#seats .seat").count() == players == len(got.view.seats)
        assert [s.bot for s in got.settings.seats[1:]] == ["gin" if players == 2 else "rummy"] * (players - 1)
        if profile == "oklahoma-gin":
            upcard_value = min(10, "A23456789TJQK".index(got.view.upcard[0]) + 1)
            assert got.view.knock_limit == (0 if upcard_value == 1 else upcard_value)
            assert f"knock limit {got.view.knock_limit}" in page.inner_text("#info")
        games = page.eval_on_selector_all("#seats .seat .hollywood", "els => els.map(e => e.dataset.games)")
        assert games == (["0,0,0"] * 2 if profile == "hollywood-gin" else [])
        assert not errors
    finally:
        page.close()
