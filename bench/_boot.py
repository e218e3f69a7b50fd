"""The first import of every benchmark (``import _boot``, before anything of the project's).

``python bench/x.py`` puts bench/ first on sys.path, where bench/engine.py would shadow the ``engine`` package:
this drops it and puts the repository root in its place, so a benchmark also runs without an install.
``need_project()`` runs the benchmark again in the project's .venv when its dependencies are not importable here
(a plain ``python bench/x.py``); ``load("service")`` gives another benchmark as a module (bench/service.py's
driver, measuring loop and referee launcher are shared by several benchmarks, not copied); ``start_referee``
starts a referee process (clients.referee_proc) or exits with why not.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clients.referee_proc import RefereeProcess

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def need_project() -> None:
    try:
        import grpc  # noqa: F401
        import redis  # noqa: F401
    except ModuleNotFoundError:
        venv = ROOT / ".venv"
        python = venv / "bin" / "python"
        if python.exists() and Path(sys.prefix).resolve() != venv.resolve():
            os.execv(python, [str(python), *sys.argv])
        raise SystemExit(f"bench/{Path(sys.argv[0]).name} needs the project installed: run `make venv` first") from None


def load(name: str) -> ModuleType:
    """bench/<name>.py as a module (loaded once: later calls get the same module)."""
    module_name = f"bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, BENCH_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def start_referee(args: list[str], **options: Any) -> RefereeProcess:
    """``rummy-referee serve ARGS`` started (clients.referee_proc.RefereeProcess with ``options``) and listening
    (SystemExit if it does not start)."""
    from clients.referee_proc import RefereeProcess, RefereeStartError

    referee = RefereeProcess(args, **options)
    try:
        referee.start()
    except RefereeStartError as exc:
        raise SystemExit(f"the referee did not start: {exc}") from None
    assert referee.process is not None
    return referee
