#!/usr/bin/env node
// A Gin bot a little better than random, with the referee's AnalyzeHand doing the meld arithmetic:
// go big gin or knock (with the least deadwood) as soon as it may; take the discard only when it lands in a
// meld; throw the highest unmelded card; as the defender, let the referee declare the best melds and lay-offs.
//
//   node examples/greedy_bot.js --address=127.0.0.1:50051 --game=GAME_ID --token=SEAT_TOKEN [--verbose]
import { parseArgs } from "node:util";

import { playSeat } from "../bot.js";
import { connect, moveKind } from "../referee.js";

const { values: args } = parseArgs({
  options: {
    address: { type: "string", default: "127.0.0.1:50051" },
    game: { type: "string" },
    token: { type: "string", default: process.env.RUMMY_TOKEN },
    verbose: { type: "boolean", default: false },
  },
});
if (!args.game || !args.token) {
  console.error("usage: node examples/greedy_bot.js --address=HOST:PORT --game=GAME_ID --token=TOKEN");
  process.exit(2);
}

const referee = connect(args.address, { token: args.token });
const value = (card) => ({ A: 1, T: 10, J: 10, Q: 10, K: 10 })[card[0]] ?? Number(card[0]);

async function chooseMove(view, legalMoves) {
  const byKind = (kind) => legalMoves.filter((move) => moveKind(move) === kind);
  if (byKind("big_gin").length) return byKind("big_gin")[0];
  const knocks = byKind("knock");
  if (knocks.length) {
    const { knock_discards } = await referee.analyzeHand(view.hand);
    const deadwood = Object.fromEntries(knock_discards.map((k) => [k.card, k.deadwood]));
    return knocks.reduce((best, move) => (deadwood[move.knock.discard] < deadwood[best.knock.discard] ? move : best));
  }
  if (byKind("declare").length) return { declare: { best: true } };
  const take = byKind("draw_discard");
  if (take.length) {
    if (view.phase === "PHASE_LAST_CARD") return take[0]; // only legal when it allows a knock
    const top = view.discard_pile.at(-1);
    const { arrangements } = await referee.analyzeHand([...view.hand, top]);
    if (arrangements.some((a) => a.melds.some((meld) => meld.cards.includes(top)))) return take[0];
  }
  const passive = [...byKind("draw_stock"), ...byKind("pass_turn")];
  if (passive.length) return passive[0];
  const discards = byKind("discard");
  if (discards.length) {
    const { arrangements } = await referee.analyzeHand(view.hand);
    const unmelded = new Set(arrangements[0]?.deadwood_cards ?? []);
    const score = (move) => (unmelded.has(move.discard.card) ? 100 : 0) + value(move.discard.card);
    return discards.reduce((best, move) => (score(move) > score(best) ? move : best));
  }
  return legalMoves[0];
}

try {
  const { view, ...summary } = await playSeat({
    client: referee,
    gameId: args.game,
    chooseMove,
    log: args.verbose ? (line) => console.error(line) : undefined,
  });
  console.log(`SUMMARY ${JSON.stringify(summary)}`);
} finally {
  referee.close();
}
