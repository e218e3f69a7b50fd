"""The repository's front door: the README's two commands exist and do what it says."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def makefile_targets() -> set[str]:
    """Names of the explicit targets defined in the Makefile."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {m.group(1) for m in re.finditer(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.MULTILINE)}


def dry_run(target: str) -> str:
    """What `make -n TARGET` would execute (nothing is run)."""
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True, check=True, timeout=60
    )
    return result.stdout


def test_makefile_defines_run_and_test() -> None:
    assert {"run", "test"} <= makefile_targets()


def test_readme_gives_make_run_and_make_test() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make run" in readme
    assert "make test" in readme


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_test_lints_type_checks_and_runs_pytest() -> None:
    commands = dry_run("test")
    assert "ruff check ." in commands
    assert "mypy --strict" in commands
    assert "-m pytest" in commands


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_serves() -> None:
    assert "rummy-referee serve" in dry_run("run")


def test_ci_runs_make_test() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "set -euo pipefail" in script
    assert re.search(r"^step make test$", script, re.MULTILINE)
