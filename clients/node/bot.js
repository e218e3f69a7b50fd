// The bot runner: plays one seat of a game to the end of the match.
//
// It follows the game with WatchGame. Whenever something happens after the version it last acted on, it
// fetches its view (GetGame); while that view says it is this seat's turn, it asks `chooseMove(view,
// legalMoves)` and submits the answer (SubmitMove, pinned to the view's version, idempotent by request_id),
// going on from the view the response carries (a Gin turn is two moves: draw, then discard). A move refused
// OUT_OF_TIME (a time control: it came after its deadline) waits for the referee's timeout policy, then goes on.

import { setTimeout as sleep } from "node:timers/promises";

import { connect, moveText, RefereeError, status } from "./referee.js";

/** After a move refused OUT_OF_TIME: how often the view is fetched until the referee applied its timeout policy. */
const OUT_OF_TIME_POLL_MS = 100;

/**
 * @callback ChooseMove
 * @param {any} view the seat's GameView (hand, discard_pile, melds, seats, phase, ...); a table meld's `cards`
 *   is every card of it now, laid-off cards included (its `layoffs` say which of them were laid off, by whom)
 * @param {any[]} legalMoves every legal Move now (not empty); returning one of them is always accepted
 * @returns {object | Promise<object>} the Move to play (Gin knock / big_gin may also declare their own melds)
 */

/**
 * @typedef {object} SeatSummary
 * @property {string} game_id
 * @property {number} seat the seat played
 * @property {number} moves moves submitted and accepted
 * @property {number} version the game's final version
 * @property {string} phase the final phase ("PHASE_MATCH_OVER")
 * @property {number} hands_played
 * @property {number[]} winners the winning seats
 * @property {number[]} totals every seat's final total
 * @property {any} view the final view
 */

/**
 * Play the seat of `token` in game `gameId` until the match is over.
 * @param {object} options
 * @param {string} [options.address] "host:port" of the referee (or give `client`)
 * @param {import("./referee.js").RefereeClient} [options.client] a connected client (its token is used unless
 *   `token` is given)
 * @param {string} options.gameId
 * @param {string} [options.token] the seat's token
 * @param {ChooseMove} options.chooseMove
 * @param {(line: string) => void} [options.log] told about every move played (default: silent)
 * @param {(event: any) => void} [options.onEvent] told about every event of the game, as this seat sees it
 * @returns {Promise<SeatSummary>}
 */
export async function playSeat({ address, client, gameId, token, chooseMove, log = () => {}, onEvent }) {
  if (!client && !address) throw new TypeError("playSeat needs an address or a client");
  const own = !client;
  let referee = client ?? connect(address, { token });
  if (client && token) referee = client.withToken(token);

  let handled = -1; // the highest version this seat has looked at
  let moves = 0;
  let view = null;

  // Plays while `current` says it is this seat's turn; returns the last view seen.
  const act = async (current) => {
    while (current.phase !== "PHASE_MATCH_OVER" && current.to_act === current.viewer_seat) {
      const move = await chooseMove(current, current.legal_moves);
      let response;
      try {
        response = await referee.submitMove(gameId, move, { expectedVersion: current.version });
      } catch (error) {
        if (error instanceof RefereeError && error.code === status.ABORTED) {
          // The game moved on since this view (it should not, when only the seat to act may move): reload.
          ({ view: current } = await referee.getGame(gameId));
          handled = Math.max(handled, current.version);
          continue;
        }
        if (error instanceof RefereeError && error.reason === "OUT_OF_TIME") {
          // Answered after its deadline (a time control): the referee applies its timeout policy next (an
          // automatic move, or the match lost on time); wait for it, then go on from the game as it is.
          const before = current.version;
          do {
            await sleep(OUT_OF_TIME_POLL_MS);
            ({ view: current } = await referee.getGame(gameId));
          } while (current.version === before && current.to_act === current.viewer_seat);
          handled = Math.max(handled, current.version);
          continue;
        }
        throw error;
      }
      moves++;
      log(`seat ${current.viewer_seat} v${response.version}: ${moveText(move)}`);
      handled = Math.max(handled, response.version);
      current = response.view;
    }
    return current;
  };

  try {
    for await (const update of referee.watchGame(gameId)) {
      if (update.snapshot) {
        handled = Math.max(handled, update.snapshot.version);
        view = await act(update.snapshot);
        continue;
      }
      const { event } = update;
      onEvent?.(event);
      if (event.version > handled) {
        // One GetGame per version at most: it returns the game as it is now, all of this version's events
        // (and maybe later ones) included.
        ({ view } = await referee.getGame(gameId));
        handled = Math.max(handled, view.version);
        view = await act(view);
      }
    }
    ({ view } = await referee.getGame(gameId));
  } finally {
    if (own) referee.close();
  }
  return {
    game_id: gameId,
    seat: view.viewer_seat,
    moves,
    version: view.version,
    phase: view.phase,
    hands_played: view.hands_played,
    winners: view.result?.winners ?? [],
    totals: view.result?.totals ?? [],
    view,
  };
}
