#!/usr/bin/env node
// A complete bot: plays one seat with a uniformly random legal move until the match is over.
//
//   node examples/random_bot.js --address=127.0.0.1:50051 --game=GAME_ID --token=SEAT_TOKEN [--seed N] [--verbose]
//
// (Write --game=ID, not --game ID: ids and tokens may begin with "-". The token may also come in $RUMMY_TOKEN.)
// At the end it prints one line: SUMMARY {"game_id":...,"seat":0,"moves":57,"winners":[1],"totals":[12,104],...}
import { parseArgs } from "node:util";

import { playSeat } from "../bot.js";

const { values: args } = parseArgs({
  options: {
    address: { type: "string", default: "127.0.0.1:50051" },
    game: { type: "string" },
    token: { type: "string", default: process.env.RUMMY_TOKEN },
    seed: { type: "string" },
    verbose: { type: "boolean", default: false },
  },
});
if (!args.game || !args.token) {
  console.error("usage: node examples/random_bot.js --address=HOST:PORT --game=GAME_ID --token=TOKEN");
  process.exit(2);
}

// A small seeded generator (mulberry32), so that a game can be played again the same way.
let seed = Number(args.seed ?? Math.floor(Math.random() * 2 ** 32)) >>> 0;
function random() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
}

const summary = await playSeat({
  address: args.address,
  gameId: args.game,
  token: args.token,
  chooseMove: (view, legalMoves) => legalMoves[Math.floor(random() * legalMoves.length)],
  log: args.verbose ? (line) => console.error(line) : undefined,
});
const { view, ...line } = summary;
console.log(`SUMMARY ${JSON.stringify(line)}`);
