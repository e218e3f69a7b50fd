// Unit tests of referee.js against a scripted in-process RefereeService (node --test). The whole client, bot
// runner and example against the real referee: tests/clients/test_node_client.py.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

import { COMMIT_OUTCOME_UNKNOWN, connect, OUTCOME_RESENDS, PROTO_DIR, RefereeError, status, structToObject } from "../referee.js";

const definition = protoLoader.loadSync("rummy/v1/referee.proto", {
  keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_DIR],
});
const { RefereeService } = grpc.loadPackageDefinition(definition).rummy.v1;

const rpc = protobuf.Root.fromJSON({
  nested: {
    Status: {
      fields: {
        code: { type: "int32", id: 1 }, message: { type: "string", id: 2 },
        details: { rule: "repeated", type: "Any", id: 3 },
      },
    },
    Any: { fields: { type_url: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } },
    ErrorInfo: { fields: { reason: { type: "string", id: 1 }, domain: { type: "string", id: 2 } } },
  },
});

/** A status as the referee sends it: code, message, and a google.rpc.ErrorInfo in grpc-status-details-bin. */
function refereeStatus(code, reason, message) {
  const info = rpc.lookupType("ErrorInfo").encode({ reason, domain: "rummy-referee" }).finish();
  const details = rpc.lookupType("Status").encode({
    code, message, details: [{ type_url: "type.googleapis.com/google.rpc.ErrorInfo", value: info }],
  }).finish();
  const metadata = new grpc.Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from(details));
  return { code, details: message, metadata };
}

// What the scripted server saw, and what it is told to do next.
const seen = { submits: [], watches: [] };
const script = { submitFailures: 0, submitUnknown: 0, resignUnknown: 0, watchPlans: [] };

function view(version, extra = {}) {
  return { game_id: "g1", version, viewer_seat: 0, to_act: 1, phase: "PHASE_DRAW", ...extra };
}

function event(version, index, kind, data = {}) {
  const fields = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, { stringValue: String(v) }]));
  return { event: { version, index, kind, seat: 0, data: { fields } } };
}

const handlers = {
  SubmitMove(call, callback) {
    seen.submits.push({
      request: call.request,
      authorization: call.metadata.get("authorization")[0],
      deadline: call.getDeadline(),
    });
    if (call.request.move?.discard?.card === "KH") {
      callback(refereeStatus(status.FAILED_PRECONDITION, "NOT_YOUR_TURN", "seat 1 is to act, not seat 0"));
    } else if (script.submitUnknown > 0) {
      script.submitUnknown--;
      callback(refereeStatus(status.UNAVAILABLE, COMMIT_OUTCOME_UNKNOWN, "the commit may or may not have happened"));
    } else if (script.submitFailures > 0) {
      script.submitFailures--;
      callback({ code: status.UNAVAILABLE, details: "the game storage is unreachable; retry later" });
    } else {
      callback(null, {
        version: 8,
        events: [{ version: 8, index: 1, kind: "discarded", seat: 0, data: { fields: { card: { stringValue: "TD" } } } }],
        view: view(8),
      });
    }
  },
  Resign(call, callback) {
    seen.resigns = [...(seen.resigns ?? []), call.request];
    if (script.resignUnknown > 0) {
      script.resignUnknown--;
      callback(refereeStatus(status.UNAVAILABLE, COMMIT_OUTCOME_UNKNOWN, "the commit may or may not have happened"));
      return;
    }
    callback(null, {
      version: 4,
      events: [{ version: 4, index: 1, kind: "resigned", seat: 0, data: { fields: {} } }],
      view: view(4, { phase: "PHASE_MATCH_OVER", result: { totals: [0, 0], winners: [1], ended: "MATCH_END_RESIGNED",
        seat_ends: ["SEAT_END_RESIGNED", "SEAT_END_FINISHED"] } }),
    });
  },
  Ping(call, callback) {
    if (script.pingDown) callback({ code: status.UNAVAILABLE, details: "down" });
    else callback(null, {});
  },
  GetGame(call, callback) {
    if (call.request.game_id === "slow") return; // never answers: the deadline must end the call
    callback(null, { view: view(3, { last_hand: { hand_number: 0, reason: "knock" } }) });
  },
  WatchGame(call) {
    seen.watches.push(call.request);
    const plan = script.watchPlans.shift() ?? { messages: [] };
    for (const message of plan.messages) call.write(message);
    if (plan.fail) call.emit("error", { code: plan.fail, details: "going away" });
    else call.end();
  },
};

let server;
let address;

before(async () => {
  server = new grpc.Server();
  server.addService(RefereeService.service, handlers);
  const port = await new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  address = `127.0.0.1:${port}`;
});

after(() => server.forceShutdown());

test("submitMove sends the token, a deadline and one request_id, retried on UNAVAILABLE", async () => {
  seen.submits = [];
  script.submitFailures = 2;
  const referee = connect(address, { token: "seat-secret", retryBaseMs: 5 });
  const legal = { discard: { card: "TD" }, move: "discard", knock: null };
  const response = await referee.submitMove("g1", legal, { expectedVersion: 7 });
  referee.close();

  assert.equal(response.version, 8);
  assert.deepEqual(response.events[0].data, { card: "TD" }); // the Struct as a plain object
  assert.equal(response.view.to_act, 1);
  assert.ok(!("_to_act" in response.view)); // proto-loader's marker of an optional field is dropped
  assert.equal(seen.submits.length, 3);
  const ids = new Set(seen.submits.map((s) => s.request.request_id));
  assert.equal(ids.size, 1);
  assert.match([...ids][0], /^[0-9a-f-]{36}$/);
  for (const s of seen.submits) {
    assert.equal(s.authorization, "Bearer seat-secret");
    assert.equal(s.request.expected_version, 7);
    assert.deepEqual(s.request.move.discard, { card: "TD" });
    assert.ok(Number(s.deadline) > Date.now() && Number(s.deadline) < Date.now() + 11_000); // 10 s by default
  }
});

test("resign sends one request_id and returns the match result", async () => {
  const referee = connect(address, { token: "seat-secret", retryBaseMs: 5 });
  const response = await referee.resign("g1", { requestId: "bye-1" });
  referee.close();
  assert.equal(response.version, 4);
  assert.equal(response.events[0].kind, "resigned");
  assert.equal(response.view.result.ended, "MATCH_END_RESIGNED");
  assert.deepEqual(response.view.result.seat_ends, ["SEAT_END_RESIGNED", "SEAT_END_FINISHED"]);
  assert.equal(seen.resigns.at(-1).request_id, "bye-1");
});

test("resign resolves COMMIT_OUTCOME_UNKNOWN like submitMove, beyond its retries", async () => {
  seen.resigns = [];
  script.resignUnknown = 3;
  const referee = connect(address, { token: "t", retries: 0, retryBaseMs: 1 });
  const response = await referee.resign("g1", { requestId: "bye-2" });
  assert.equal(response.version, 4);
  assert.deepEqual(seen.resigns.map((r) => r.request_id), ["bye-2", "bye-2", "bye-2", "bye-2"]);
  referee.close();
  script.resignUnknown = 0;
});

test("submitMove gives up after its retries", async () => {
  script.submitFailures = 10;
  const referee = connect(address, { token: "t", retries: 2, retryBaseMs: 1 });
  await assert.rejects(referee.submitMove("g1", { draw_stock: {} }), (e) => e instanceof RefereeError && e.code === status.UNAVAILABLE);
  referee.close();
  script.submitFailures = 0;
});

test("submitMove resolves COMMIT_OUTCOME_UNKNOWN by resending with the same request_id, beyond its retries", async () => {
  seen.submits = [];
  script.submitUnknown = 3;
  const referee = connect(address, { token: "t", retries: 0, retryBaseMs: 1 });
  const response = await referee.submitMove("g1", { draw_stock: {} }, { requestId: "rid-1" });
  assert.equal(response.version, 8);
  assert.deepEqual(seen.submits.map((s) => s.request.request_id), ["rid-1", "rid-1", "rid-1", "rid-1"]);

  seen.submits = [];
  script.submitUnknown = OUTCOME_RESENDS + 1; // stays unknown: bounded, and said so
  await assert.rejects(referee.submitMove("g1", { draw_stock: {} }),
    (e) => e instanceof RefereeError && e.code === status.UNAVAILABLE && e.reason === COMMIT_OUTCOME_UNKNOWN);
  assert.equal(seen.submits.length, OUTCOME_RESENDS + 1);

  seen.submits = [];
  script.submitUnknown = 1;
  script.submitFailures = 1; // unknown, then a plain UNAVAILABLE with no retry left: still unknown
  await assert.rejects(referee.submitMove("g1", { draw_stock: {} }),
    (e) => e instanceof RefereeError && e.reason === COMMIT_OUTCOME_UNKNOWN);
  assert.equal(seen.submits.length, 2);
  referee.close();
  script.submitUnknown = 0;
  script.submitFailures = 0;
});

test("a refused move is a RefereeError with the ErrorInfo reason", async () => {
  const referee = connect(address, { token: "t" });
  const error = await referee.submitMove("g1", { discard: { card: "KH" } }).catch((e) => e);
  referee.close();
  assert.ok(error instanceof RefereeError);
  assert.equal(error.code, status.FAILED_PRECONDITION);
  assert.equal(error.codeName, "FAILED_PRECONDITION");
  assert.equal(error.reason, "NOT_YOUR_TURN");
  assert.equal(error.domain, "rummy-referee");
  assert.equal(error.details, "seat 1 is to act, not seat 0");
});

test("every unary call has a deadline", async () => {
  const referee = connect(address, { token: "t", deadlineMs: 200 });
  const started = Date.now();
  const error = await referee.getGame("slow").catch((e) => e);
  referee.close();
  assert.equal(error.code, status.DEADLINE_EXCEEDED);
  assert.ok(Date.now() - started < 5000);
});

test("watchGame resumes after a broken stream without gaps or repeats", async () => {
  seen.watches = [];
  script.watchPlans = [
    { messages: [{ snapshot: view(3) }, event(4, 1, "drew"), event(5, 1, "discarded", { card: "TD" })], fail: status.UNAVAILABLE },
    { messages: [event(5, 2, "hand_ended")], fail: status.RESOURCE_EXHAUSTED }, // asked for what follows 5.1
    // a server that sends an event again: the client still delivers it once
    { messages: [event(5, 2, "hand_ended"), event(6, 1, "match_ended"), event(7, 1, "never")] },
  ];
  const referee = connect(address, { token: "t", retryBaseMs: 1 });
  const got = [];
  for await (const update of referee.watchGame("g1")) {
    got.push(update.snapshot ? `snapshot ${update.snapshot.version}` : `${update.event.version}.${update.event.index} ${update.event.kind}`);
  }
  referee.close();
  assert.deepEqual(got, ["snapshot 3", "4.1 drew", "5.1 discarded", "5.2 hand_ended", "6.1 match_ended"]);
  assert.deepEqual(
    seen.watches.map((r) => [r.after_version, r.after_index]),
    [[undefined, undefined], [5, 1], [5, 2]],
  );
});

test("watchGame of a quiet game outlives more streams cut without a word than maxReconnects while the referee answers", async () => {
  // a referee ending each connection at its maximum age (serve --max-connection-age) cuts a stream with nothing new
  const cut = { messages: [], fail: status.UNAVAILABLE };
  script.watchPlans = [...Array(5).fill(cut), { messages: [event(4, 1, "match_ended")] }];
  const referee = connect(address, { token: "t", retryBaseMs: 1 });
  const got = [];
  for await (const update of referee.watchGame("g1", { afterVersion: 3, maxReconnects: 2 })) got.push(update.event.kind);
  assert.deepEqual(got, ["match_ended"]);

  script.watchPlans = Array(5).fill(cut); // ... and while it does not answer, maxReconnects bounds them
  script.pingDown = true;
  seen.watches = [];
  await assert.rejects(
    (async () => {
      for await (const update of referee.watchGame("g1", { afterVersion: 3, maxReconnects: 2 })) got.push(update);
    })(),
    (e) => e instanceof RefereeError && e.code === status.UNAVAILABLE,
  );
  assert.equal(seen.watches.length, 3);
  script.pingDown = false;
  script.watchPlans = [];
  referee.close();
});

test("watchGame from a version asks for no snapshot, and fails when told not to reconnect", async () => {
  seen.watches = [];
  script.watchPlans = [{ messages: [event(10, 1, "drew")], fail: status.UNAVAILABLE }];
  const referee = connect(address, { token: "t" });
  const got = [];
  await assert.rejects(
    (async () => {
      for await (const update of referee.watchGame("g1", { afterVersion: 9, reconnect: false })) got.push(update.event.kind);
    })(),
    (e) => e instanceof RefereeError && e.code === status.UNAVAILABLE,
  );
  referee.close();
  assert.deepEqual(got, ["drew"]);
  assert.equal(seen.watches[0].after_version, 9);
  assert.equal(seen.watches[0].after_index, undefined);
});

test("getGame turns Struct details into plain objects", async () => {
  const referee = connect(address, { token: "t" });
  const { view: got } = await referee.getGame("g1");
  referee.close();
  assert.equal(got.version, 3);
  assert.deepEqual(got.last_hand.details, {});
  assert.deepEqual(
    structToObject({ fields: { a: { kind: "listValue", listValue: { values: [{ kind: "numberValue", numberValue: 1 }, { kind: "nullValue", nullValue: 0 }] } } } }),
    { a: [1, null] },
  );
});
