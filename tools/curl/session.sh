#!/usr/bin/env bash
# A first session with the referee using plain curl: Connect's JSON over HTTP/1.1 (the referee's HTTP port,
# `--http-port`, 8080 by default): create a Gin game, look at seat 1's view, play a move, and see a refused move's
# reason code. Every call is one POST of a JSON body to /rummy.v1.RefereeService/<Method>.
# Usage: tools/curl/session.sh [HOST:PORT]   (default 127.0.0.1:8080; `make run` listens there)
set -euo pipefail
ADDR="${1:-127.0.0.1:8080}"
URL="http://$ADDR/rummy.v1.RefereeService"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# call METHOD JSON [TOKEN]: the answer's body in $TMP/METHOD.json, its HTTP status printed (200: OK; else an error)
call() {
  curl -sS -o "$TMP/$1.json" -w '%{http_code}' -H 'content-type: application/json' \
    ${3:+-H "authorization: Bearer $3"} -d "$2" "$URL/$1"
}
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval('d' + sys.argv[1]))" "$1"; }

# 1. Create a game: profile gin, two seats. The answer holds the game id and one secret token per seat.
call CreateGame '{"profile": "gin", "seats": [{"displayName": "Ada"}, {"displayName": "Bob"}]}' > /dev/null
GAME=$(field '["gameId"]' < "$TMP/CreateGame.json")
TOKEN=$(field '["seatTokens"][1]["token"]' < "$TMP/CreateGame.json")
OTHER=$(field '["seatTokens"][0]["token"]' < "$TMP/CreateGame.json")
echo "game $GAME"

# 2. Seat 1 (the dealer's next seat acts first) reads its view: its hand, the upcard, its legal moves.
call GetGame "{\"gameId\": \"$GAME\"}" "$TOKEN" > /dev/null
echo "hand $(field '["view"]["hand"]' < "$TMP/GetGame.json")"

# 3. Seat 1 draws from the stock (requestId makes a resend harmless).
call SubmitMove "{\"gameId\": \"$GAME\", \"move\": {\"drawStock\": {}}, \"requestId\": \"session-1\"}" "$TOKEN" \
  > /dev/null
echo "version $(field '["version"]' < "$TMP/SubmitMove.json"), drew $(field '["events"][0]["data"]["card"]' \
  < "$TMP/SubmitMove.json")"

# 4. A refused move: the other seat tries to play out of turn. The answer is HTTP 400 with a JSON error: its code
# (failed_precondition), its message, and a google.rpc.ErrorInfo detail whose reason is NOT_YOUR_TURN.
STATUS=$(call SubmitMove "{\"gameId\": \"$GAME\", \"move\": {\"drawStock\": {}}}" "$OTHER")
echo "refused: HTTP $STATUS $(cat "$TMP/SubmitMove.json")"

# 5. The reason, as JSON: the detail's value is the ErrorInfo in protobuf's binary form (base64), which is just
# field 1 (reason) and field 2 (domain), each a short string: decoded here with the standard library alone.
python3 - "$TMP/SubmitMove.json" <<'PY'
import base64, json, sys
detail = json.load(open(sys.argv[1]))["details"][0]
assert detail["type"] == "google.rpc.ErrorInfo"
data, fields, at = base64.b64decode(detail["value"] + "=" * (-len(detail["value"]) % 4)), {}, 0
while at < len(data):
    key, size = data[at], data[at + 1]  # short strings: one-byte tag and length
    fields[{1: "reason", 2: "domain"}.get(key >> 3, str(key >> 3))] = data[at + 2 : at + 2 + size].decode()
    at += 2 + size
print("reason", json.dumps(fields, separators=(",", ":")))
PY
