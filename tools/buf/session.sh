#!/usr/bin/env bash
# A first session with the referee using `buf curl` (gRPC with server reflection, no .proto needed):
# create a Gin game, look at seat 1's view, play a move, and see a refused move's reason code.
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
python3 - /tmp/rummy-session-error.json <<'PY'
import base64, json, sys
err = json.load(open(sys.argv[1]))
info = base64.b64decode(err["details"][0]["value"] + "==")
reason = info[2:2 + info[1]].decode()  # google.rpc.ErrorInfo field 1 (reason)
print(f"refused: {err['code']} {reason}: {err['message']}")
PY
