// The Node bot: plays one seat of a game to the end through the referee's HTTP port (Connect, connect-node).
//   node dist/bot.mjs --url http://localhost:8080 --game GAME_ID --token SEAT_TOKEN
// It follows the game with WatchGame (resumed after any cut) and, whenever the seat is to act, asks GetGame for
// its view and plays a move of its legal moves (src/strategy.ts), sent with the view's version as
// expected_version and a request_id, so that a retry is never applied twice. A call that gets no answer
// (UNAVAILABLE: a referee down or restarting, or COMMIT_OUTCOME_UNKNOWN; DEADLINE_EXCEEDED: none within the call's
// 10 s deadline) is sent again, the same request_id with a move, for up to a minute (`persist`); over several
// referees (`--url A,B`) each resend goes to the next one (one that just refused a connection is skipped a while).
import { parseArgs } from "node:util";
import { auth, connectReferee, moveText, persist, refusal, watchGame, type GameView } from "./node.js";
import { chooseMove } from "./strategy.js";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://localhost:8080" },
    game: { type: "string" },
    token: { type: "string" },
    quiet: { type: "boolean", default: false },
  },
});
if (!values.game || !values.token) {
  console.error("usage: node dist/bot.mjs --url http://localhost:8080 --game GAME_ID --token SEAT_TOKEN");
  process.exit(2);
}
const gameId = values.game;
const token = values.token;
const referee = connectReferee(values.url!);
const say = (text: string) => {
  if (!values.quiet) console.log(text);
};

async function playWhileMyTurn(): Promise<GameView> {
  let { view } = await persist(() => referee.getGame({ gameId }, auth(token)));
  while (view && view.toAct === view.viewerSeat && view.legalMoves.length > 0) {
    const m = chooseMove(view);
    const requestId = `bot-${view.viewerSeat}-${view.version}`;
    const request = { gameId, move: m, expectedVersion: view.version, requestId };
    try {
      const answer = await persist(() => referee.submitMove(request, auth(token)));
      say(`seat ${view.viewerSeat}: ${moveText(m)}`);
      view = answer.view;
    } catch (err) {
      const r = refusal(err);
      // someone moved first, or (a time control) the referee's timeout came first: look again
      if (r.code !== "Aborted" && r.reason !== "OUT_OF_TIME") throw err;
      // OUT_OF_TIME: the move came after its deadline; the referee applies its timeout policy next: wait for it
      const late = r.reason === "OUT_OF_TIME";
      do {
        if (late) await new Promise((resolve) => setTimeout(resolve, 100));
        view = (await persist(() => referee.getGame({ gameId }, auth(token)))).view;
      } while (late && view?.version === request.expectedVersion && view.toAct === view.viewerSeat);
    }
  }
  return view!;
}

let last: GameView | undefined = await playWhileMyTurn();
for await (const update of watchGame(referee, gameId, token, {
  onCut: (err, n) => say(`stream cut (${refusal(err).code}), resuming (attempt ${n})`),
})) {
  if (update.update.case === "event" && update.update.value.kind === "match_ended") break;
  // an event of a version our last view already shows (our own moves) changes nothing for us
  if (update.update.case === "event" && last && update.update.value.version <= last.version) continue;
  last = await playWhileMyTurn();
}
const { view } = await persist(() => referee.getGame({ gameId }, auth(token)));
const totals = view?.result?.totals ?? [];
console.log(JSON.stringify({ seat: view?.viewerSeat, totals, winners: view?.result?.winners ?? [] }));
