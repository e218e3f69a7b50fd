"""The HTTP port through ordinary tools: `buf curl --protocol connect` and `--protocol grpcweb` (pinned in
tools/buf, the schema read from proto/) get the same answers as native gRPC, and the README's plain-curl session
(tools/curl/session.sh: Connect JSON POSTs) runs against a real referee."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import Client, ServerThread
from tests.server.test_buf import NPM, buf  # noqa: F401  (the pinned buf, a fixture)

ROOT = Path(__file__).resolve().parents[2]
CURL = shutil.which("curl")


def _buf_curl(binary: Path, protocol: str, url: str, body: str, token: str | None = None) -> tuple[int, str, str]:
    command = [str(binary), "curl", "--schema", str(ROOT / "proto"), "--protocol", protocol, "-d", body, url]
    if token is not None:
        command[2:2] = ["-H", f"authorization: Bearer {token}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.skipif(NPM is None, reason="buf comes from the npm registry: needs `npm` on PATH")
@pytest.mark.parametrize("protocol", ["connect", "grpcweb"])
def test_buf_curl_speaks_connect_and_grpc_web_to_the_http_port(
    protocol: str, buf: Path, web: ServerThread  # noqa: F811
) -> None:
    url = f"{web.http_url}/rummy.v1.RefereeService"
    client = Client(web.address)
    try:
        game = client.create("gin")
        rc, out, err = _buf_curl(buf, protocol, f"{url}/Ping", "{}")
        assert (rc, json.loads(out)) == (0, {}), err
        rc, out, err = _buf_curl(buf, protocol, f"{url}/AnalyzeHand", '{"cards": ["AS", "2S", "3S", "KD"]}')
        native = client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=["AS", "2S", "3S", "KD"]))
        assert rc == 0 and json.loads(out)["minDeadwood"] == native.min_deadwood == 10, err
        rc, out, err = _buf_curl(buf, protocol, f"{url}/GetGame", json.dumps({"gameId": game.game_id}), game.tokens[1])
        assert rc == 0 and json.loads(out)["view"]["hand"] == list(client.view(game, game.tokens[1]).hand), err
        # refused out of turn: FAILED_PRECONDITION, the referee's message, the ErrorInfo detail
        move = json.dumps({"gameId": game.game_id, "move": {"drawStock": {}}})
        rc, out, err = _buf_curl(buf, protocol, f"{url}/SubmitMove", move, game.tokens[0])
        error = json.loads(err)
        assert rc != 0 and error["code"] == "failed_precondition", err
        assert error["message"] == "seat 1 is to act, not seat 0"
        assert error["details"][0]["type"] == "google.rpc.ErrorInfo"
    finally:
        client.close()


@pytest.mark.skipif(CURL is None, reason="needs curl on PATH")
def test_readme_curl_session_runs(web: ServerThread) -> None:
    result = subprocess.run(
        [str(ROOT / "tools" / "curl" / "session.sh"), f"127.0.0.1:{web.http_port}"],
        env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("game ")
    assert lines[1].startswith("hand [") and lines[1].count("'") == 20  # ten cards
    assert lines[2].startswith("version 1, drew ")
    label, _, body = lines[3].partition(" HTTP 400 ")
    assert label == "refused:"
    error = json.loads(body)
    assert (error["code"], error["message"]) == ("failed_precondition", "seat 1 is to act, not seat 0")
    label, _, reason = lines[4].partition(" ")
    assert label == "reason" and json.loads(reason) == {"reason": "NOT_YOUR_TURN", "domain": "rummy-referee"}


def test_readme_shows_the_curl_session() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "tools/curl/session.sh" in readme and "curl -H 'content-type: application/json'" in readme
