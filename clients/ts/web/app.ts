// The reference web table: start, join or watch a game, and play it with the mouse. Everything it shows comes from
// the caller's own view (GetGame / SubmitMove / WatchGame through Connect-Web); the moves it offers are the view's
// legal moves only. The game id and token live in the page's address (#game=...&token=...), so that a reload or a
// dropped connection comes back to the same seat; the stream resumes from the last event received.
import {
  SeatSpecSchema, GameKind, MeldKind, Phase, Role, SeatKind, TimeoutPolicy_Kind, auth, connectReferee, move, moveText,
  refusal, watchGame, type Event, type GameView, type Move, type Refusal, type SeatClock, type TableMeld,
  type TimeControlSchema,
} from "../src/web.js";
import type { MessageInitShape } from "@bufbuild/protobuf";

const referee = connectReferee();
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const SUITS: Record<string, string> = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
const RANKS = "A23456789TJQK";
const SUIT_ORDER = "SHCD";

const REASON_WORDS: Record<string, string> = {
  NOT_YOUR_TURN: "It is not your turn.",
  GAME_OVER: "The match is over.",
  WRONG_PHASE: "That move does not belong to this part of the turn.",
  CARD_NOT_IN_HAND: "You do not hold that card.",
  DISCARD_TAKEN_CARD: "You cannot discard the card you just took from the discard pile.",
  KNOCK_OVER_LIMIT: "Your deadwood is over the knock limit.",
  INVALID_MELD: "Those cards are not a set or a run.",
  NOT_ALL_MELDED: "Big gin needs every card in a meld.",
  MUST_DRAW_STOCK: "Both players passed the upcard: draw from the stock.",
  MUST_KNOCK_WITH_LAST_CARD: "The last discard may only be taken to knock or go big gin.",
  CANNOT_LAY_OFF: "That card does not fit that meld.",
  UNKNOWN_MELD: "That meld is not on the table.",
  LAYOFF_REQUIRES_OWN_MELD: "Lay off only after you have a meld of your own on the table.",
  MELD_LIMIT_REACHED: "No more melds this turn.",
  MUST_DISCARD_TO_GO_OUT: "You must keep a card to discard to go out.",
  WOULD_STRAND_TAKEN_CARD: "That would leave only the card you just took from the discard pile.",
  VERSION_MISMATCH: "The game moved on meanwhile: the table is shown as it is now.",
  OUT_OF_TIME: "Out of time: the referee has taken over this move.",
  INVALID_TIME_CONTROL: "A clock needs every seat filled from the start: play against house bots, or without a clock.",
  VERSION_CONFLICT: "Another move came first: the table is shown as it is now.",
  SPECTATOR: "Spectators watch; they cannot play.",
  BAD_TOKEN: "That token is not one of this game's.",
  ORGANIZER_NO_SEAT: "That is the organizer token: it holds no seat. Use a seat's token or the spectator token.",
  MISSING_TOKEN: "This needs a token.",
  GAME_NOT_FOUND: "There is no such game (or it has expired).",
  SEAT_TAKEN: "No seat is open in that game.",
  INVALID_GAME_ID: "That is not a game id.",
  INVALID_NAME: "That name cannot be used.",
  STORAGE_UNAVAILABLE: "The referee cannot reach its storage right now: try again.",
  RATE_LIMITED: "Too many requests: slow down a little.",
};
// The profiles the lobby offers (RULES.md 2 and 3): their names on the table, and which game each plays.
const PROFILE_WORDS: Record<string, string> = {
  gin: "Gin Rummy", "gin-standard": "Gin Rummy, standard bonuses", "oklahoma-gin": "Oklahoma Gin",
  "hollywood-gin": "Hollywood Gin", rummy: "Rummy", "rummy-g4a": "Rummy, G4A rules",
};
const isGin = (profile: string): boolean => !profile.startsWith("rummy");
const HAND_END_WORDS: Record<string, string> = {
  knock: "knocked and won", gin: "went gin", big_gin: "went big gin", undercut: "undercut the knocker",
  tie: "tie", went_out: "went out", stock_end: "the stock ran out", turn_cap: "the turn limit was reached",
  no_cards_left: "no cards left", stalled: "the hand stalled",
};

interface Session { game: string; token: string }
let session: Session | undefined;
let view: GameView | undefined;
let profile = "";  // the game's profile (from GetGame's settings)
let selected = new Set<string>();
let sortBy: "suit" | "rank" | "dealt" = "suit";
let shownHandEnd = -1;
let busy = false;
let watching: AbortController | undefined;

// ------------------------------------------------------------------------------------------ cards

/** A card as people read it, in the page's words as on its faces: "TH" is "10♥". */
function face(card: string): string {
  return `${card[0] === "T" ? "10" : card[0]!}${SUITS[card[1]!]}`;
}

/** Cards as people read them: "7♥ 8♥ 9♥". */
function faces(cards: Iterable<string>): string {
  return [...cards].map(face).join(" ");
}

/** A legal move as people read it, cards as on their faces ("discard 10♥", "lay off 7♠ on #2"); its
 * data-move keeps the referee's move text. */
function moveLabel(m: Move): string {
  const x = m.move;
  switch (x.case) {
    case "drawStock":
      return "draw from the stock";
    case "drawDiscard":
      return "take the discard";
    case "passTurn":
      return "pass";
    case "discard":
      return `discard ${face(x.value.card)}`;
    case "knock":
      return `knock, discarding ${face(x.value.discard)}`;
    case "bigGin":
      return "big gin";
    case "meld":
      return `meld ${faces(x.value.cards)}`;
    case "layOff":
      return `lay off ${face(x.value.card)} on #${x.value.meldId}`;
    case "declare":
      return x.value.best ? "declare my best" : "declare";
    default:
      return moveText(m);
  }
}

function cardEl(card: string, tag: "div" | "button" = "div"): HTMLElement {
  const el = document.createElement(tag);
  el.className = `card ${card[1]}`;
  el.dataset.card = card;
  el.title = face(card);
  el.innerHTML = `<span class="r">${face(card)}</span><span class="s">${SUITS[card[1]!]}</span>`;
  el.setAttribute("aria-label", face(card));
  return el;
}

function sortCards(cards: readonly string[]): string[] {
  const rank = (c: string) => RANKS.indexOf(c[0]!);
  const suit = (c: string) => SUIT_ORDER.indexOf(c[1]!);
  const out = [...cards];
  if (sortBy === "suit") out.sort((a, b) => suit(a) - suit(b) || rank(a) - rank(b));
  else if (sortBy === "rank") out.sort((a, b) => rank(a) - rank(b) || suit(a) - suit(b));
  return out;
}

/** "1 card", "2 cards". */
function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function seatName(seat: number | undefined): string {
  if (seat === undefined || !view) return "nobody";
  const s = view.seats[seat];
  const name = s?.displayName || `seat ${seat}`;
  return view.viewerSeat === seat && name.toLowerCase() !== "you" ? `${name} (you)` : name;
}

// ------------------------------------------------------------------------------------------ clocks

/** A time left: 4:05, and tenths under ten seconds (0:07.3). */
function clockText(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `0:${s.toFixed(1).padStart(4, "0")}`;
  const whole = Math.floor(s);
  const h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), sec = String(whole % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

/** The seat's time left now: the running seat's until its deadline (the referee's clock is Redis's; this page
 * counts with its own), the others' as the view says. */
function clockLeft(c: SeatClock): number {
  return c.running && c.deadlineMs !== undefined ? Number(c.deadlineMs) - Date.now() : Number(c.remainingMs);
}

/** Each seat's clock element shows its time left; the running one counts down (ticked every 100 ms). */
function tickClocks(): void {
  if (!view) return;
  for (const c of view.clocks) {
    const el = document.querySelector<HTMLElement>(`.seat[data-seat="${c.seat}"] .clock`);
    if (!el) continue;
    const left = clockLeft(c);
    el.querySelector(".time")!.textContent = clockText(left);
    el.classList.toggle("low", c.running && left < 10_000);
  }
}
setInterval(tickClocks, 100);

// ------------------------------------------------------------------------------------------ rendering

const PHASE_WORDS: Record<number, string> = {
  [Phase.TAKE_OR_PASS]: "take the upcard or pass", [Phase.DRAW]: "draw", [Phase.DISCARD]: "discard, knock or gin",
  [Phase.PLAY]: "meld, lay off, discard", [Phase.LAYOFF]: "the defender lays off", [Phase.LAST_CARD]: "last card",
  [Phase.MATCH_OVER]: "match over",
};

function render(): void {
  if (!view) return;
  const v = view;
  document.body.dataset.version = String(v.version);
  document.body.dataset.phase = Phase[v.phase] ?? "";
  document.body.dataset.role = Role[v.viewerRole] ?? "";
  document.body.dataset.toAct = v.toAct === undefined ? "" : String(v.toAct);
  const myTurn = v.viewerRole === Role.SEAT && v.toAct === v.viewerSeat && v.legalMoves.length > 0;
  document.body.dataset.myTurn = String(myTurn);
  const game = PROFILE_WORDS[profile] ?? (v.game === GameKind.GIN ? "Gin Rummy" : "Rummy");
  const who = v.viewerRole === Role.SPECTATOR ? "spectating" : `seat ${v.viewerSeat}`;
  $("info").innerHTML = "";
  const info: [string, string][] = [
    ["game", v.gameId], ["", game], ["you", who], ["hand", String(v.handNumber + 1)],
    ["turn", v.toAct === undefined ? "\u2014" : seatName(v.toAct)], ["phase", PHASE_WORDS[v.phase] ?? ""],
  ];
  if (v.knockLimit !== undefined && v.game === GameKind.GIN) info.push(["knock limit", String(v.knockLimit)]);
  if (v.clocks.length) info.push(["clock", "the referee keeps time"]);
  const knocked = v.phase === Phase.LAYOFF ? v.knock : undefined;  // public from the knock (RULES.md 4)
  if (knocked) {
    const up = knocked.deadwoodCards.length ? ` (${faces(knocked.deadwoodCards)})` : "";
    info.push(["knocked", `${seatName(knocked.knocker)}, ${knocked.deadwood} deadwood${up}`]);
  }
  for (const [k, val] of info) {
    const span = document.createElement("span");
    span.innerHTML = k ? `${k} <b></b>` : "<b></b>";
    span.querySelector("b")!.textContent = val;
    if (k === "game") span.id = "game-id";
    if (k === "knocked") span.dataset.knock = String(knocked!.knocker);
    $("info").append(span);
  }

  const seats = $("seats");
  seats.innerHTML = "";
  for (const s of v.seats) {
    const el = document.createElement("div");
    el.className = `seat${s.seat === v.toAct ? " to-act" : ""}`;
    el.dataset.seat = String(s.seat);
    el.dataset.handSize = String(s.handSize);
    el.dataset.score = String(s.score);
    const kind = s.kind === SeatKind.BOT ? '<span class="badge">bot</span>' : "";
    const name = s.displayName || `seat ${s.seat}`;
    const you = s.seat === v.viewerSeat && name.toLowerCase() !== "you" ? '<span class="you">you</span>' : "";
    el.innerHTML = `<div><span class="name"></span>${kind}${you}</div>
      <div class="backs"></div><div><span class="hand-size">${count(s.handSize, "card")}</span> \u00b7 score <b class="score">${s.score}</b>
      \u00b7 hands won ${s.boxes}${s.open ? " \u00b7 <i>open seat</i>" : ""}</div>`;
    el.querySelector(".name")!.textContent = name;
    if (s.hollywoodScores.length) {  // Hollywood: the three games' points (the score above is their sum)
      const games = document.createElement("div");
      games.className = "hollywood";
      games.dataset.games = s.hollywoodScores.join(",");
      games.textContent = "games " + s.hollywoodScores.map((p, g) => `${p}${v.hollywoodGamesEnded[g] ? " (ended)" : ""}`)
        .join(" \u00b7 ");
      el.append(games);
    }
    const backs = el.querySelector(".backs")!;
    for (let i = 0; i < s.handSize; i++) backs.append(Object.assign(document.createElement("span"), { className: "mini" }));
    const clock = v.clocks.find((c) => c.seat === s.seat);
    if (clock) {
      const c = document.createElement("div");
      c.className = `clock${clock.running ? " running" : ""}`;
      c.dataset.remainingMs = String(clock.remainingMs);
      c.dataset.running = String(clock.running);
      c.innerHTML = `clock <span class="time"></span>${clock.autoMoves ? ` <span class="autos">\u00b7 ${clock.autoMoves} played by the referee</span>` : ""}`;
      el.append(c);
    }
    if (s.knownCards.length && s.seat !== v.viewerSeat) {
      const known = document.createElement("div");
      known.className = "known";
      known.textContent = `known: ${faces(s.knownCards)}`;
      el.append(known);
    }
    seats.append(el);
  }

  const legalOf = (kind: Move["move"]["case"]) => (myTurn ? v.legalMoves.filter((m) => m.move.case === kind) : []);
  const stock = $<HTMLButtonElement>("stock");
  const drawStock = legalOf("drawStock")[0];
  stock.disabled = !drawStock;
  stock.classList.toggle("clickable", !!drawStock);
  stock.onclick = drawStock ? () => play(drawStock) : null;
  $("stock-size").textContent = `${v.stockSize} left`;
  // the whole pile is public (RULES.md 4): its top five as cards, the ones beneath them as faces, bottom first
  const beneath = $("discard-beneath");
  beneath.innerHTML = "";
  for (const c of v.discardPile.slice(0, -5)) {
    const el = Object.assign(document.createElement("span"), { className: `face ${c[1]}`, textContent: face(c) });
    el.dataset.card = c;
    beneath.append(el);
  }
  beneath.hidden = !beneath.childElementCount;
  const discard = $("discard");
  discard.innerHTML = "";
  const pile = v.discardPile.slice(-5);
  const takeDiscard = legalOf("drawDiscard")[0];
  pile.forEach((c, i) => {
    const el = cardEl(c);
    if (i === pile.length - 1) {
      el.id = "discard-top";
      if (takeDiscard) {
        el.classList.add("clickable");
        el.onclick = () => play(takeDiscard);
      }
    }
    discard.append(el);
  });
  if (!pile.length) discard.innerHTML = '<div class="label">empty</div>';

  // lay-off targets for the one selected card
  const one = selected.size === 1 ? [...selected][0] : undefined;
  const layoffs = legalOf("layOff").filter((m) => m.move.case === "layOff" && m.move.value.card === one);
  const melds = $("melds");
  melds.innerHTML = "";
  for (const tm of v.melds) melds.append(meldEl(tm, layoffs.find((m) => m.move.case === "layOff" && m.move.value.meldId === tm.id)));

  // my hand
  $("mine").hidden = v.viewerRole !== Role.SEAT;
  const hand = $("hand");
  hand.innerHTML = "";
  selected = new Set([...selected].filter((c) => v.hand.includes(c)));
  for (const c of sortCards(v.hand)) {
    const el = cardEl(c);
    if (selected.has(c)) el.classList.add("selected");
    if (c === v.takenCard) el.classList.add("taken");
    el.onclick = () => {
      if (selected.has(c)) selected.delete(c);
      else selected.add(c);
      render();
    };
    el.ondblclick = () => {
      // a shortcut: discard this card, whatever the legal moves say (the referee's refusal is shown)
      selected.clear();
      void play(move({ case: "discard", value: { card: c } } as Move["move"]));
    };
    hand.append(el);
  }
  $("hand-label").textContent = `Your hand (${v.hand.length})`;

  const actions = $("actions");
  actions.innerHTML = "";
  const add = (label: string, m: Move, key: string) => {
    const b = document.createElement("button");
    b.textContent = label;
    b.dataset.action = key;
    b.onclick = () => play(m);
    actions.append(b);
  };
  if (takeDiscard) add(v.phase === Phase.TAKE_OR_PASS ? "Take the upcard" : "Take the discard", takeDiscard, "drawDiscard");
  if (drawStock) add("Draw from the stock", drawStock, "drawStock");
  const pass = legalOf("passTurn")[0];
  if (pass) add("Pass", pass, "passTurn");
  const discardMove = legalOf("discard").find((m) => m.move.case === "discard" && m.move.value.card === one);
  if (discardMove && one) add(`Discard ${face(one)}`, discardMove, "discard");
  const knock = legalOf("knock").find((m) => m.move.case === "knock" && m.move.value.discard === one);
  if (knock && one) add(`Knock, discarding ${face(one)}`, knock, "knock");
  const bigGin = legalOf("bigGin")[0];
  if (bigGin) add("Big gin!", bigGin, "bigGin");
  const key = [...selected].sort().join(" ");
  const meld = legalOf("meld").find((m) => m.move.case === "meld" && [...m.move.value.cards].sort().join(" ") === key);
  if (meld && selected.size) add(`Meld ${faces(sortCards([...selected]))}`, meld, "meld");
  const declareBest = legalOf("declare").find((m) => m.move.case === "declare" && m.move.value.best);
  if (declareBest) add("Lay off the best way", declareBest, "declareBest");
  const done = legalOf("done")[0];
  if (done) add("Done laying off", done, "done");
  if (layoffs.length) {
    const hint = document.createElement("span");
    hint.textContent = `click a highlighted meld to lay off ${face(one!)}`;
    actions.append(hint);
  }
  if (myTurn && !actions.querySelector("button")) {
    const hint = document.createElement("span");
    hint.textContent = v.legalMoves.some((m) => m.move.case === "discard" || m.move.case === "knock")
      ? "select a card to discard (or several to meld)" : "your turn";
    actions.append(hint);
  }
  const legal = $("legal");
  legal.innerHTML = "";
  for (const m of myTurn ? v.legalMoves : []) {
    const b = document.createElement("button");
    b.textContent = moveLabel(m);
    b.dataset.move = moveText(m);
    b.onclick = () => play(m);
    legal.append(b);
  }
  ($("legal-box") as HTMLDetailsElement).hidden = !myTurn;
  renderHandEnd();
  tickClocks();
}

function meldEl(tm: TableMeld, layoff: Move | undefined): HTMLElement {
  const el = document.createElement("div");
  el.className = "meld";
  el.dataset.meldId = String(tm.id);
  el.innerHTML = `<div class="owner"></div><div class="cards"></div>`;
  el.querySelector(".owner")!.textContent =
    `#${tm.id} ${tm.kind === MeldKind.RUN ? "run" : "set"} of ${seatName(tm.owner)}`;
  const laid = new Map(tm.layoffs.map((l) => [l.card, l.seat]));
  for (const c of tm.cards) {
    const card = cardEl(c);
    if (laid.has(c)) {
      card.classList.add("laid");
      card.title = `${face(c)}, laid off by ${seatName(laid.get(c))}`;
    }
    el.querySelector(".cards")!.append(card);
  }
  if (layoff) {
    el.classList.add("target");
    el.onclick = () => play(layoff);
  }
  return el;
}

function renderHandEnd(): void {
  const v = view!;
  const box = $("hand-end");
  const last = v.lastHand;
  const over = v.phase === Phase.MATCH_OVER;
  if (!last || (last.handNumber <= shownHandEnd && !over) || (over && shownHandEnd === 1e9)) return;
  box.innerHTML = "";
  const h = document.createElement("h2");
  const winner = last.winner === undefined ? "nobody scores" : `${seatName(last.winner)}: ${count(last.points, "point")}`;
  h.textContent = `Hand ${last.handNumber + 1}: ${HAND_END_WORDS[last.reason] ?? last.reason} \u2014 ${winner}`;
  box.append(h);
  box.dataset.handNumber = String(last.handNumber);
  box.dataset.reason = last.reason;
  if (last.knocker !== undefined) {
    const p = document.createElement("p");
    p.textContent = `${seatName(last.knocker)} knocked with ${last.knockerDeadwood ?? "?"} deadwood; ` +
      `the defender had ${last.defenderDeadwood ?? "?"}.`;
    box.append(p);
  }
  const rows = Object.assign(document.createElement("div"), { className: "rows" });
  const side = Object.assign(document.createElement("div"), { className: "side" });
  box.append(rows, side);
  last.hands.forEach((cards, seat) => {
    const row = document.createElement("div");
    row.className = "row";
    row.dataset.seat = String(seat);
    row.innerHTML = `<span class="who"></span><span class="cards"></span><span class="value"></span>`;
    row.querySelector(".who")!.textContent = seatName(seat);
    for (const c of cards.cards) row.querySelector(".cards")!.append(cardEl(c));
    row.querySelector(".value")!.textContent = cards.cards.length ? `${count(last.handValues[seat] ?? 0, "point")} left in hand`
      : "went out";
    rows.append(row);
  });
  const table = document.createElement("table");
  table.innerHTML = "<tr><th>seat</th><th>score</th></tr>";
  const totals = over && v.result ? v.result.totals : last.scores;
  totals.forEach((score, seat) => {
    const tr = document.createElement("tr");
    tr.innerHTML = `<td></td><td class="total" data-seat="${seat}">${score}</td>`;
    tr.querySelector("td")!.textContent = seatName(seat);
    table.append(tr);
  });
  side.append(table);
  if (over && v.result) {
    const p = document.createElement("div");
    p.id = "match-over";
    p.textContent = `Match over: ${v.result.winners.map(seatName).join(" and ")} won.`;
    side.append(p);
  }
  const close = document.createElement("button");
  close.id = "hand-end-close";
  close.textContent = over ? "Close" : "Next hand";
  close.onclick = () => {
    box.hidden = true;
  };
  close.style.marginTop = ".6rem";
  side.append(close);
  shownHandEnd = over ? 1e9 : last.handNumber;
  box.hidden = false;
}

/** A call that got no answer at all: the page could not reach the referee (the browser's fetch failed, which
 * Connect reports as UNKNOWN in the browser's own words, "Failed to fetch"). Not a refusal: nothing was judged. */
function unreached(err: unknown): boolean {
  return err instanceof TypeError || (err instanceof Error && err.cause instanceof TypeError);
}

const UNREACHED_WORDS = "The page cannot reach the referee right now";
const UNSENT_WORDS = "so that move may not have been made: once the connection is back, the table shows the game as it is";

/** The refused (or unsent) move's note; a note that the referee was out of reach goes once the page is live. */
function showRefusal(r: Refusal | undefined, unreachable = false): void {
  const el = $("refusal");
  el.hidden = !r;
  if (!r) return;
  el.dataset.reason = r.reason;
  el.dataset.code = r.code;
  el.dataset.unreached = String(unreachable);
  el.textContent = unreachable
    ? `${UNREACHED_WORDS}, ${UNSENT_WORDS}.`
    : `Refused: ${REASON_WORDS[r.reason] ?? r.message} (${r.reason || r.code})`;
}

/** What an event did, in words, with the cards it names as the viewer may see them ("drew from the stock",
 * "discarded 10♥", "laid off 7♠ on #2"); the event's kind for the rest ("hand ended"). */
function eventWords(ev: Event): string {
  const p = ev.payload;
  switch (p.case) {
    case "drew":
      return p.value.source === "stock" ? `drew ${p.value.card ? face(p.value.card) + " " : ""}from the stock`
        : `took ${p.value.card ? face(p.value.card) : "the top card"} from the discard pile`;
    case "passed": return `passed${p.value.card ? ` on the upcard ${face(p.value.card)}` : ""}`;
    case "discarded": return `discarded ${face(p.value.card)}`;
    case "knocked": return p.value.gin ? `went gin, discarding ${face(p.value.discard)}`
      : `knocked with ${p.value.deadwood} deadwood, discarding ${face(p.value.discard)}`;
    case "bigGin": return "went big gin";
    case "melded": return `melded ${faces(p.value.meld?.cards ?? [])} (#${p.value.meldId})`;
    case "laidOff": return `laid off ${face(p.value.card)} on #${p.value.meldId}`;
    case "declared": return `declared: ${p.value.deadwood} deadwood`;
    case "timedOut": return p.value.forfeit ? "out of time: the match is lost on time"
      : "out of time: the referee moves instead";
    case "autoMoved": return "the referee moved for this seat";
    default: return ev.kind.replaceAll("_", " ");
  }
}

function log(text: string): void {
  const line = document.createElement("div");
  line.textContent = text;
  $("log").prepend(line);
  while ($("log").childElementCount > 60) $("log").lastChild!.remove();
}

function setStatus(state: string, text: string): void {
  $("status").dataset.status = state;
  $("status").textContent = text;
  if (state === "live" && $("refusal").dataset.unreached === "true") showRefusal(undefined);
}

// ------------------------------------------------------------------------------------------ calls

async function play(m: Move): Promise<void> {
  if (!session || !view || busy) return;
  busy = true;
  try {
    const answer = await referee.submitMove(
      { gameId: session.game, move: m, expectedVersion: view.version, requestId: crypto.randomUUID() },
      auth(session.token),
    );
    showRefusal(undefined);
    selected.clear();
    if (answer.view && answer.view.version >= (view?.version ?? 0n)) view = answer.view;
    render();
  } catch (err) {
    showRefusal(refusal(err), unreached(err));
    await refresh().catch(() => undefined);
  } finally {
    busy = false;
  }
}

let refreshing: Promise<void> | undefined;
let again = false;

/** GetGame, at most one at a time (a call asked for meanwhile runs once after it). */
async function refresh(): Promise<void> {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      const { view: v, settings } = await referee.getGame({ gameId: session!.game }, auth(session!.token));
      if (settings) profile = settings.profile;
      if (v && (!view || v.version >= view.version)) view = v;
      render();
    } while (again);
  })().finally(() => {
    refreshing = undefined;
  });
  return refreshing;
}

let probing: Promise<void> | undefined;

/** After a cut: GetGame until it answers again (the connection is back; the stream resumes by itself, and a
 * resumed stream says nothing until the next event). */
function probe(): void {
  probing ??= (async () => {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      try {
        await refresh();
        setStatus("live", "live");
        return;
      } catch {
        // still down
      }
    }
  })().finally(() => {
    probing = undefined;
  });
}

async function follow(): Promise<void> {
  watching?.abort();
  watching = new AbortController();
  const s = session!;
  setStatus("live", "live");
  try {
    for await (const u of watchGame(referee, s.game, s.token, {
      signal: watching.signal,
      onOpen: () => {
        setStatus("live", "live");
        void refresh().catch(() => undefined); // whatever happened while the connection was down
      },
      onCut: (_err, n) => {
        setStatus("reconnecting", `connection lost: reconnecting (${n})\u2026`);
        probe();
      },
    })) {
      setStatus("live", "live");
      if (u.update.case === "snapshot") {
        view = u.update.value;
        render();
      } else if (u.update.case === "event") {
        const ev = u.update.value;
        if (ev.kind !== "clock_started" && ev.kind !== "clock_stopped") { // the seats' clocks show those
          log(`${ev.seat === undefined ? "" : seatName(ev.seat) + ": "}${eventWords(ev)}`);
        }
        if (!view || ev.version > view.version) await refresh().catch(() => undefined); // the next event retries
      }
    }
    await refresh();
    setStatus("over", "match over");
  } catch (err) {
    if (watching.signal.aborted) return;
    const r = refusal(err);
    setStatus("lost", `connection lost (${r.reason || r.code})`);
    showRefusal(r);
  }
}

async function open(game: string, token: string): Promise<void> {
  session = { game, token };
  history.replaceState(null, "", `#game=${encodeURIComponent(game)}&token=${encodeURIComponent(token)}`);
  try {
    await refresh();
  } catch (err) {
    session = undefined;
    showLobbyError(refusal(err), unreached(err));
    return;
  }
  $("lobby").hidden = true;
  $("table").hidden = false;
  showRefusal(undefined); // a refusal from the lobby is not this game's
  void follow();
}

function showLobbyError(r: Refusal, unreachable = false): void {
  $("lobby").hidden = false;
  $("table").hidden = false;
  showRefusal(r, unreachable);
  $("table").hidden = true;
  let el = document.getElementById("lobby-error");
  if (!el) {
    el = Object.assign(document.createElement("div"), { id: "lobby-error", role: "alert" });
    $("lobby").append(el);
  }
  el.dataset.reason = r.reason;
  el.textContent = unreachable ? `${UNREACHED_WORDS}: try again in a moment.`
    : `Refused: ${REASON_WORDS[r.reason] ?? r.message} (${r.reason || r.code})`;
}

// ------------------------------------------------------------------------------------------ lobby

$("new-game").onsubmit = async (e) => {
  e.preventDefault();
  const f = new FormData(e.target as HTMLFormElement);
  const chosen = String(f.get("profile"));
  const gin = isGin(chosen);
  const players = gin ? 2 : Math.max(2, Math.min(6, Number(f.get("players")) || 2));
  const seats: Record<string, unknown>[] = [{ displayName: String(f.get("name") || "You"), kind: SeatKind.HUMAN }];
  const bots = f.get("others") === "bots";
  for (let i = 1; i < players; i++) {
    seats.push(bots ? { displayName: `${gin ? "Gin" : "Rummy"} bot ${i}`, kind: SeatKind.BOT, bot: gin ? "gin" : "rummy" }
      : { displayName: "", open: true });
  }
  try {
    // "one hand": a match of a single hand (Gin: the first hand's points reach a target of 1, a drawn hand dealt
    // again; Hollywood, whose first win counts in its first game only, and Rummy: one hand, drawn or not)
    const oneHand = gin && chosen !== "hollywood-gin" ? { targetScore: 1 } : { maxHands: 1 };
    const match = f.get("length") === "hand" ? oneHand : undefined;
    // the time control: "move:SECONDS" per move, "clock:INITIAL+INCREMENT" a clock per seat; a seat out of time
    // gets the referee's automatic move (after three in a row, its next timeout loses the match)
    const [kind, spec = ""] = String(f.get("clock") || "none").split(":");
    const [a = 0n, b = 0n] = spec.split("+").map((x) => BigInt(Math.round(Number(x) * 1000)));
    const timeControl: MessageInitShape<typeof TimeControlSchema> | undefined =
      kind === "move" ? { kind: { case: "perMove", value: { limitMs: a } } }
      : kind === "clock" ? { kind: { case: "clock", value: { initialMs: a, incrementMs: b } } } : undefined;
    const created = await referee.createGame({
      profile: chosen, seats: seats as never, allowSpectators: f.get("spectators") === "on", match, timeControl,
      timeoutPolicy: timeControl ? { kind: TimeoutPolicy_Kind.AUTO_MOVE } : undefined,
    });
    const mine = created.seatTokens.find((t) => t.seat === 0)!;
    if (created.spectatorToken) document.body.dataset.spectatorToken = created.spectatorToken;
    await open(created.gameId, mine.token);
    log(`game ${created.gameId} created` + (bots ? "" : "; others join it by its id") +
      (created.spectatorToken ? `; spectator token ${created.spectatorToken}` : ""));
  } catch (err) {
    showLobbyError(refusal(err), unreached(err));
  }
};

// The player count follows the game: Gin is for two; Rummy's G4A rules are for three unless changed.
const lobby = $("new-game") as HTMLFormElement;
lobby.querySelector<HTMLSelectElement>("select[name=profile]")!.onchange = (e) => {
  const chosen = (e.target as HTMLSelectElement).value;
  const count = lobby.querySelector<HTMLInputElement>("input[name=players]")!;
  count.disabled = isGin(chosen);
  count.value = chosen === "rummy-g4a" ? "3" : "2";
};
lobby.querySelector<HTMLInputElement>("input[name=players]")!.disabled = true;  // Gin Rummy comes first

$("join-game").onsubmit = async (e) => {
  e.preventDefault();
  const f = new FormData(e.target as HTMLFormElement);
  const game = String(f.get("game")).trim();
  let token = String(f.get("token") ?? "").trim();
  try {
    if (!token) token = (await referee.joinGame({ gameId: game, displayName: String(f.get("name") || "Guest") })).token;
    await open(game, token);
  } catch (err) {
    showLobbyError(refusal(err), unreached(err));
  }
};

// House bots (SeatSpec.bot) are offered when the generated messages have the field (the referee has a bot host).
if (SeatSpecSchema.fields.some((field) => field.localName === "bot")) {
  const others = document.querySelector<HTMLSelectElement>("#new-game select[name=others]")!;
  others.prepend(Object.assign(document.createElement("option"), { value: "bots", textContent: "house bots" }));
  others.value = "bots";
}

$("sort-suit").onclick = () => { sortBy = "suit"; render(); };
$("sort-rank").onclick = () => { sortBy = "rank"; render(); };

const params = new URLSearchParams(location.hash.slice(1));
if (params.get("game") && params.get("token")) void open(params.get("game")!, params.get("token")!);
