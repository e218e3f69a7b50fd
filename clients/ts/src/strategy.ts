// A small move chooser from the legal moves of a view (the Node bot's, and the web table's "hint"): go out when
// possible, meld and lay off in Rummy, take the discard only when it fits, discard the loneliest high card.
import type { GameView, Move } from "./referee.js";

const RANKS = "A23456789TJQK";

function rank(card: string): number {
  return RANKS.indexOf(card[0]!) + 1;
}

function value(card: string): number {
  return Math.min(rank(card), 10);
}

/** How well `card` fits with the other cards of `hand`: 2 per card of its rank, 1 per suit neighbour within 2. */
export function fit(card: string, hand: readonly string[]): number {
  let score = 0;
  for (const other of hand) {
    if (other === card) continue;
    if (other[0] === card[0]) score += 2;
    else if (other[1] === card[1] && Math.abs(rank(other) - rank(card)) <= 2) score += 1;
  }
  return score;
}

/** The move to play from `view.legalMoves` (throws when there is none). */
export function chooseMove(view: GameView): Move {
  const moves = view.legalMoves;
  if (moves.length === 0) throw new Error("no legal move");
  const of = (kind: Move["move"]["case"]) => moves.filter((m) => m.move.case === kind);
  const pick = of("bigGin")[0] ?? of("declare").find((m) => m.move.case === "declare" && m.move.value.best);
  if (pick) return pick;
  const knocks = of("knock");
  if (knocks.length > 0) return knocks[0]!;
  const melds = of("meld");
  if (melds.length > 0 && view.game === 2) {
    // the longest meld first
    return melds.reduce((a, b) => ((a.move.value as { cards: string[] }).cards.length >=
      (b.move.value as { cards: string[] }).cards.length ? a : b));
  }
  const layoffs = of("layOff");
  if (layoffs.length > 0 && view.game === 2) return layoffs[0]!;
  const drawDiscard = of("drawDiscard")[0];
  const top = view.discardPile[view.discardPile.length - 1];
  if (drawDiscard && top && (fit(top, view.hand) >= 2 || of("drawStock").length === 0)) return drawDiscard;
  const draw = of("drawStock")[0] ?? of("passTurn")[0];
  if (draw) return draw;
  const discards = of("discard");
  if (discards.length > 0) {
    const score = (m: Move) => {
      const card = (m.move.value as { card: string }).card;
      return fit(card, view.hand) * 20 - value(card);
    };
    return discards.reduce((a, b) => (score(b) < score(a) ? b : a));
  }
  return moves[0]!;
}
