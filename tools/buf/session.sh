#!/usr/bin/env bash
# A first session with the referee using `buf curl` (gRPC with server reflection, no .proto needed):
# create a Gin game, look at seat 1's view, play a move, and see a refused move's reason code as JSON.
# Usage: tools/buf/session.sh [HOST:PORT]   (default 127.0.0.1:50051; `make run` listens there)
set -euo pipefail
ADDR="${1:-127.0.0.1:50051}"
BUF="${BUF:-$(dirname "$0")/node_modules/.bin/buf}"
URL="http://$ADDR/rummy.v1.RefereeService"
call() { "$BUF" curl --protocol grpc --http2-prior-knowledge "$@"; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval('d' + sys.argv[1]))" "$1"; }

# 1. Create a game: profile gin, two seats. The answer holds the game id and one secret token per seat.
call -d '{"profile": "gin", "seats": [{"displayName": "Ada"}, {"displayName": "Bob"}]}' "$URL/CreateGame" \
  > /tmp/rummy-session-create.json
GAME=$(field '["gameId"]' < /tmp/rummy-session-create.json)
TOKEN=$(field '["seatTokens"][1]["token"]' < /tmp/rummy-session-create.json)
echo "game $GAME"

# 2. Seat 1 (the dealer's next seat acts first) looks at its view: its hand, the upcard, its legal moves.
call -H "authorization: Bearer $TOKEN" -d "{\"gameId\": \"$GAME\"}" "$URL/GetGame" > /tmp/rummy-session-view.json
echo "hand $(field '["view"]["hand"]' < /tmp/rummy-session-view.json)"

# 3. Seat 1 draws from the stock (request_id makes a resend harmless).
call -H "authorization: Bearer $TOKEN" \
  -d "{\"gameId\": \"$GAME\", \"move\": {\"drawStock\": {}}, \"requestId\": \"session-1\"}" \
  "$URL/SubmitMove" > /tmp/rummy-session-move.json
echo "version $(field '["version"]' < /tmp/rummy-session-move.json)," \
  "drew $(field '["events"][0]["data"]["card"]' < /tmp/rummy-session-move.json)"

# 4. A refused move: the other seat tries to play out of turn (FAILED_PRECONDITION, reason NOT_YOUR_TURN).
OTHER=$(field '["seatTokens"][0]["token"]' < /tmp/rummy-session-create.json)
if call -H "authorization: Bearer $OTHER" -d "{\"gameId\": \"$GAME\", \"move\": {\"drawStock\": {}}}" \
  "$URL/SubmitMove" 2> /tmp/rummy-session-error.json; then
  echo "unexpected: an out-of-turn move was accepted" >&2
  exit 1
fi
echo "refused: $(field '["code"]' < /tmp/rummy-session-error.json) $(field '["message"]' < /tmp/rummy-session-error.json)"

# 5. The reason, as JSON. buf curl shows an error detail as JSON only for the types compiled into buf itself, and
# google.rpc.ErrorInfo is not one of them (it prints "value" in base64), so the detail is read with `buf convert`
# and the descriptors the referee serves by reflection (grpcurl does this by itself: `grpcurl -plaintext ...`).
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
call -d '{"fileContainingSymbol": "google.rpc.ErrorInfo"}' \
  "http://$ADDR/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo" > "$TMP/reflection.json"
# A FileDescriptorSet is, on the wire, field 1 repeated (each a serialized file): "Files" gives it a JSON form.
printf 'syntax = "proto3";\nmessage Files { repeated bytes file = 1; }\n' > "$TMP/files.proto"
python3 -c 'import json, sys; print(json.dumps({"file": json.load(sys.stdin)["fileDescriptorResponse"]["fileDescriptorProto"]}))' \
  < "$TMP/reflection.json" > "$TMP/files.json"
"$BUF" convert "$TMP/files.proto" --type Files --from "$TMP/files.json#format=json" \
  --to "$TMP/descriptors.binpb#format=binpb"
python3 -c 'import base64, json, sys; d = json.load(sys.stdin)["details"][0]; v = d["value"]; print(d["type"])
open(sys.argv[1], "wb").write(base64.b64decode(v + "=" * (-len(v) % 4)))' "$TMP/detail.binpb" \
  < /tmp/rummy-session-error.json > "$TMP/type"
echo "reason $("$BUF" convert "$TMP/descriptors.binpb" --type "$(cat "$TMP/type")" \
  --from "$TMP/detail.binpb#format=binpb" --to -#format=json)"
