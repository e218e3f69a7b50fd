"""Kit of the browser tests: headless Chromium (Debian's /usr/bin/chromium, driven by Playwright for Python, never
Playwright's own browser download), a page of the web table playing one seat with the mouse (the other seats are
the referee's house bots), and a capture of every byte the page receives (HTTP responses, the WatchGame stream
included)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from tests.server.refkit import Client, Game, bot_move

CHROMIUM = os.environ.get("RUMMY_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]  # fmt: skip
TIMEOUT_MS = 60_000
#: A card as engine text ("TH"), which the page shows people as its face ("10♥") instead.
RAW_CARD = re.compile(r"\b[A2-9TJQK][SHDC]\b")
SUITS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}


def face(card: str) -> str:
    """A card's face as the page shows it in words: "TH" is "10♥"."""
    return ("10" if card[0] == "T" else card[0]) + SUITS[card[1]]


def why_no_browser() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (as root: apt-get install -y chromium)"
    return None


class CuttableProxy:
    """A TCP proxy on a free port of 127.0.0.1 to ``target`` (host, port): ``cut()`` closes every connection
    through it at once, a real dropped connection for the page (new connections are accepted again at once);
    while ``refusing`` is set, each new connection is closed as soon as it is accepted (the referee out of reach,
    as while it restarts)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.cuts = 0
        self.refusing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inner, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                inner.close()
                continue
            outer = socket.create_connection(self.target)
            with self.lock:
                self.sockets += [inner, outer]
            for a, b in ((inner, outer), (outer, inner)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self.lock:
            sockets, self.sockets = self.sockets, []
            self.cuts += 1
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.listener.close()
        self.cut()


@dataclass
class Capture:
    """Every HTTP response body a page received, in order: (url, content type, body)."""

    bodies: list[tuple[str, str, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, page: Any) -> None:
        def on_finished(request: Any) -> None:
            response = request.response()
            if response is None:
                return
            try:
                body = response.body()
            except Exception:  # a stream cut before its end has no body to read: nothing reached the page
                return
            with self.lock:
                self.bodies.append((request.url, response.headers.get("content-type", ""), body))

        page.on("requestfinished", on_finished)

    def messages(self) -> Iterator[tuple[str, Any]]:
        """Every JSON message received: unary responses whole, and each envelope of a Connect stream."""
        with self.lock:
            bodies = list(self.bodies)
        for url, kind, body in bodies:
            if kind.startswith("application/json"):
                yield url, json.loads(body)
            elif kind.startswith("application/connect+json"):
                at = 0
                while at + 5 <= len(body):
                    flags, size = struct.unpack(">BI", body[at : at + 5])
                    yield url + (" (end of stream)" if flags & 2 else ""), json.loads(body[at + 5 : at + 5 + size])
                    at += 5 + size


def move_text(move: pb.Move) -> str:
    """The engine's text of a Move message (what the page's buttons of legal moves show)."""
    kind = move.WhichOneof("move")
    if kind == "discard":
        return f"discard {move.discard.card}"
    if kind == "knock":
        return f"knock {move.knock.discard}"
    if kind == "meld":
        return "meld " + " ".join(move.meld.cards)
    if kind == "lay_off":
        return f"layoff {move.lay_off.card} {move.lay_off.meld_id}"
    if kind == "declare":
        return "declare best" if move.declare.best else "declare"
    return {"draw_stock": "draw stock", "draw_discard": "draw discard", "pass_turn": "pass", "big_gin": "big_gin",
            "done": "done"}[str(kind)]  # fmt: skip


class TablePage:
    """One seat's page of the web table, played with the mouse."""

    def __init__(self, page: Any) -> None:
        self.page = page

    def version(self) -> int:
        return int(self.page.get_attribute("body", "data-version") or -1)

    def wait_turn_or_end(self) -> bool:
        """Wait until the page offers moves (True) or shows the match over (False)."""
        self.page.wait_for_function(
            "document.body.dataset.myTurn === 'true' || document.body.dataset.phase === 'MATCH_OVER'",
            timeout=TIMEOUT_MS,
        )
        return self.page.get_attribute("body", "data-my-turn") == "true"

    def close_hand_end(self) -> None:
        box = self.page.locator("#hand-end")
        if box.is_visible():
            self.page.click("#hand-end-close")

    def play(self, move: pb.Move) -> None:
        """Play ``move`` by clicking as a person would: the piles, the cards of the hand, the action buttons, the
        table meld to lay off on; then wait for the table to show the next version."""
        page = self.page
        before = self.version()
        self.close_hand_end()
        kind = move.WhichOneof("move")

        def pick(card: str) -> None:
            page.click(f'#hand .card[data-card="{card}"]')

        def action(key: str, *cards: str) -> None:
            """Click the action button ``key``, which names the cards it plays by their faces."""
            label = page.inner_text(f'[data-action="{key}"]')
            assert all(face(c) in label for c in cards) and not RAW_CARD.search(label), label
            page.click(f'[data-action="{key}"]')

        if kind == "draw_stock":
            page.click("#stock")
        elif kind == "draw_discard":
            page.click("#discard-top")
        elif kind == "pass_turn":
            page.click('[data-action="passTurn"]')
        elif kind == "discard":
            pick(move.discard.card)
            action("discard", move.discard.card)
        elif kind == "knock":
            pick(move.knock.discard)
            action("knock", move.knock.discard)
        elif kind == "big_gin":
            page.click('[data-action="bigGin"]')
        elif kind == "meld":
            for card in move.meld.cards:
                pick(card)
            action("meld", *move.meld.cards)
        elif kind == "lay_off":
            pick(move.lay_off.card)
            hint = page.inner_text("#actions")  # "click a highlighted meld to lay off 10♥"
            assert face(move.lay_off.card) in hint and not RAW_CARD.search(hint), hint
            page.click(f'#melds .meld.target[data-meld-id="{move.lay_off.meld_id}"]')
        elif kind == "declare":
            page.click('[data-action="declareBest"]')
        elif kind == "done":
            page.click('[data-action="done"]')
        else:
            raise AssertionError(f"no way to play {kind}")
        page.wait_for_function(f"Number(document.body.dataset.version) > {before}", timeout=TIMEOUT_MS)
        self.check_counts()

    def check_counts(self) -> None:
        """Every seat's hand size in words: "1 card", "7 cards"."""
        seats = self.page.eval_on_selector_all(  # read at once: the table may be drawn again meanwhile
            "#seats .seat", "seats => seats.map(s => [s.dataset.handSize, s.querySelector('.hand-size').textContent])"
        )
        for size, text in seats:
            assert text == f"{size} card{'' if size == '1' else 's'}", seats


def play_with_mouse(table: TablePage, client: Client, game: Game, seat: int, rng: random.Random,
                    record: dict[int, tuple[int, pb.Move]] | None = None) -> int:  # fmt: skip
    """Play ``seat`` in the page to the end of the match; returns the moves played (recorded in ``record`` by the
    version each made). The choice is refkit's bot_move on the seat's own view, one of the page's offered moves."""
    played = 0
    while table.wait_turn_or_end():
        view = client.view(game, game.tokens[seat])
        if view.to_act != seat or not view.legal_moves:
            continue
        seats = table.page.inner_text("#seats")  # names, sizes, scores and the cards known to be held
        assert not RAW_CARD.search(seats), seats
        offered = set(table.page.eval_on_selector_all("#legal [data-move]", "els => els.map(e => e.dataset.move)"))
        assert offered == {move_text(m) for m in view.legal_moves}, "the page offers exactly the legal moves"
        labels = " | ".join(table.page.eval_on_selector_all("#legal [data-move]", "els => els.map(e => e.textContent)"))
        assert not RAW_CARD.search(labels), f"the legal moves read as the cards' faces: {labels}"
        move = bot_move(view, rng)
        table.play(move)
        if record is not None:
            record[view.version + 1] = (seat, move)
        played += 1
    return played


def visible(state: engine.GameState, viewer: int) -> frozenset[str]:
    """The card texts ``viewer`` may see in ``state`` (RULES.md section 4)."""
    mask = 0
    for c in state.discard:
        mask |= 1 << c
    for meld in state.melds:
        mask |= meld.cards
    for known in state.known:
        mask |= known
    if viewer >= 0:
        mask |= state.hands[viewer]
    return frozenset(engine.card_text(c) for c in engine.cards_of(mask))
