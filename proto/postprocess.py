"""Make protoc's Python output an importable package: `python proto/postprocess.py OUT_DIR`.

protoc writes `rummy/v1/*_pb2*.py[i]` under OUT_DIR with absolute imports such as `from rummy.v1 import
game_pb2`. The generated tree is committed as the package `rummy_pb` (OUT_DIR = rummy_pb), so those imports
become `from rummy_pb.rummy.v1 import game_pb2`, and every directory gets an `__init__.py` (plus `py.typed` at
the top, for the .pyi stubs). Only import lines are touched: descriptor names (`rummy.v1.GameView`) stay.
The result depends only on protoc's output, so `make proto-check` can regenerate and compare.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PACKAGE = "rummy_pb"
_IMPORTS = re.compile(r"^(from|import) rummy\.v1\b", re.MULTILINE)


def postprocess(out: Path) -> None:
    """Rewrite the imports of every generated module under ``out`` and add the package markers."""
    for path in sorted(out.rglob("*_pb2*.py*")):
        text = path.read_text(encoding="utf-8")
        fixed = _IMPORTS.sub(lambda m: f"{m.group(1)} {PACKAGE}.rummy.v1", text)
        if fixed != text:
            path.write_text(fixed, encoding="utf-8")
    for directory in (out, out / "rummy", out / "rummy" / "v1"):
        init = directory / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    (out / "py.typed").write_text("", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python proto/postprocess.py OUT_DIR")
    postprocess(Path(sys.argv[1]))
