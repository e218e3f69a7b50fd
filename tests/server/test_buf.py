"""The API contract through `buf` (pinned in tools/buf, from the npm registry): `buf lint` (STANDARD rules) is
clean, and the README's first session (tools/buf/session.sh: `buf curl` with server reflection) works against a
real referee: create a game, view it, play a move, see a refused move's reason code."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.server.refkit import ServerThread

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "buf"
NPM = shutil.which("npm")
pytestmark = pytest.mark.skipif(NPM is None, reason="buf comes from the npm registry: needs `npm` on PATH")


@pytest.fixture(scope="module")
def buf() -> Path:
    """The pinned buf binary, installed by `npm ci` once per package-lock.json."""
    stamp = TOOLS / "node_modules" / ".rummy-lock-sha256"
    digest = hashlib.sha256((TOOLS / "package-lock.json").read_bytes()).hexdigest()
    binary = TOOLS / "node_modules" / ".bin" / "buf"
    if not (stamp.exists() and stamp.read_text() == digest and binary.exists()):
        subprocess.run(
            [NPM or "npm", "ci", "--no-audit", "--no-fund"], cwd=TOOLS, check=True, timeout=300, capture_output=True
        )
        stamp.write_text(digest)
    return binary


def test_proto_passes_buf_lint_standard(buf: Path) -> None:
    result = subprocess.run([str(buf), "lint"], cwd=ROOT / "proto", capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "STANDARD" in (ROOT / "proto" / "buf.yaml").read_text()


def test_readme_buf_curl_session_runs(buf: Path, referee_server: ServerThread) -> None:
    result = subprocess.run(
        [str(TOOLS / "session.sh"), referee_server.address],
        env={"BUF": str(buf), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("game ")
    assert lines[1].startswith("hand [") and lines[1].count("'") == 20  # ten cards
    assert lines[2].startswith("version 1, drew ")
    assert lines[3] == "refused: failed_precondition seat 1 is to act, not seat 0"
    label, _, reason = lines[4].partition(" ")  # the ErrorInfo as JSON, decoded by buf with reflection's descriptors
    assert label == "reason" and json.loads(reason) == {"reason": "NOT_YOUR_TURN", "domain": "rummy-referee"}


def test_readme_shows_the_session() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "tools/buf/session.sh" in readme and "buf curl" in readme
