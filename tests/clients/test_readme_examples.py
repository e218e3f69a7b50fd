"""The README's bots are the files it names, and the Python one runs as shown against a real referee (the Node.js
one plays whole matches in test_node_client.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.clients.clientkit import ServerThread

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_shows_the_python_bot_file_whole_in_about_twenty_lines() -> None:
    source = (ROOT / "clients" / "examples" / "my_bot.py").read_text()
    assert source.rstrip() in README
    code_lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(code_lines) <= 24


def test_readme_shows_the_node_bot_file_whole() -> None:
    source = (ROOT / "clients" / "node" / "examples" / "random_bot.js").read_text()
    assert source.rstrip() in README


def test_readme_python_bot_runs_as_shown(referee: ServerThread) -> None:
    """`python clients/examples/my_bot.py ADDRESS` plays a whole match against the bundled gin bot."""
    result = subprocess.run(
        [sys.executable, "clients/examples/my_bot.py", referee.address], cwd=ROOT, capture_output=True, text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "winners: [" in result.stdout, result.stdout
