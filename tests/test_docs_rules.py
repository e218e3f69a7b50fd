"""docs/rules.md stays true to the code: every option with its default, every profile with its values, and every
reason code the engine or the server can return, with the status it comes with.

The reason codes are collected from the source, not from a list: the string literal first argument of every
construction of an engine ``RuleError`` or a server ``RefereeError`` subclass in engine/ and server/ (found with
``ast``), plus the codes ``server.errors.classify`` gives to storage failures and bugs. So a new code fails this
test until it is documented.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

import engine
import server
from engine import errors as engine_errors
from server import errors as server_errors

ROOT = Path(__file__).resolve().parent.parent
RULES_MD = ROOT / "docs" / "rules.md"


def _section(number: int) -> str:
    """The text of section ``number`` of docs/rules.md (from its heading to the next one)."""
    text = RULES_MD.read_text()
    match = re.search(rf"^## {number}\. .*?(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/rules.md has no section {number}"
    return match.group(0)


def _table_rows(section: str) -> dict[str, list[str]]:
    """The rows of the tables in ``section`` whose first cell is one `backticked` name: name -> the other cells."""
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \|(.*)\|\s*$", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} listed twice"
            rows[m.group(1)] = [cell.strip() for cell in m.group(2).split("|")]
    return rows


def _text(value: object) -> str:
    """An option value as the docs write it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


# --------------------------------------------------------------------------------------------------- options


def test_every_option_is_documented_with_its_game_and_default() -> None:
    rows = _table_rows(_section(5))
    assert set(rows) == set(engine.OPTION_NAMES), "docs/rules.md section 5 must list exactly the engine's options"
    defaults = engine.Rules()
    for name, (game, _type, default, effect) in rows.items():
        value = getattr(defaults, name)
        assert default.strip("`") == _text(value), f"{name}: documented default {default}, engine {value!r}"
        assert effect, f"{name}: no effect documented"
        if name in ("game", "players"):
            continue
        changed = {name: _other_value(name, value)}
        applies = {"both": {"gin", "rummy"}, "Gin": {"gin"}, "Rummy": {"rummy"}}[game]
        for profile in applies:
            engine.rules_from_profile(profile, **changed)  # accepted where the docs say it applies ...
        for profile in {"gin", "rummy"} - applies:
            with pytest.raises(engine.InvalidOptionsError, match=name):  # ... and refused elsewhere
                engine.rules_from_profile(profile, **changed)


def _other_value(name: str, value: object) -> object:
    """A valid value of the option other than its default."""
    from engine.options import _CHOICES

    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return next(v for v in _CHOICES[name] if v != value)


def test_the_engine_lists_every_option_at_the_top_of_its_module() -> None:
    """engine/options.py's docstring is the engine's own table of options (OpenSpiel's habit)."""
    from engine import options

    doc = options.__doc__ or ""
    missing = [name for name in engine.OPTION_NAMES if not re.search(rf"\b{name}\b", doc)]
    assert not missing, f"engine/options.py's docstring does not list {missing}"


def test_every_choice_option_documents_all_its_values() -> None:
    rows = _table_rows(_section(5))
    from engine.options import _CHOICES

    for name, values in _CHOICES.items():
        documented = rows[name][1]
        for value in values:
            assert f"`{value}`" in documented, f"{name}: value {value} not in its type column"


# -------------------------------------------------------------------------------------------------- profiles


def test_every_profile_is_documented_with_the_options_it_changes() -> None:
    rows = _table_rows(_section(6))
    assert set(rows) == set(engine.PROFILES), "docs/rules.md section 6 must list exactly the engine's profiles"
    for name, values in engine.PROFILES.items():
        cells = " ".join(rows[name])
        documented = set(re.findall(r"`(\w+)=([\w-]+)`", cells))
        assert documented == {(k, _text(v)) for k, v in values.items()}, name


# ---------------------------------------------------------------------------------------------- reason codes


def _modules() -> Iterator[str]:
    for package in (engine, server):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            yield info.name


def _subclasses(cls: type) -> set[type]:
    out = {cls}
    for sub in cls.__subclasses__():
        out |= _subclasses(sub)
    return out


def _status_of(cls: type) -> str:
    if issubclass(cls, server_errors.RefereeError):
        return str(cls.status.name)
    if issubclass(cls, engine.IllegalMoveError):
        return "FAILED_PRECONDITION"
    if issubclass(cls, engine.InvalidMoveError):
        return "INVALID_ARGUMENT"
    raise AssertionError(f"{cls.__name__}: an engine RuleError must be InvalidMoveError or IllegalMoveError")


@functools.cache
def returned_codes() -> dict[str, set[str]]:
    """Every reason code the engine and the server construct, with the statuses it comes with."""
    for name in _modules():
        importlib.import_module(name)  # so that error subclasses defined anywhere are known
    classes = {c.__name__: c for c in _subclasses(engine_errors.RuleError) | _subclasses(server_errors.RefereeError)}
    codes: dict[str, set[str]] = {}
    for package in ("engine", "server"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called not in classes or called in ("RuleError", "RefereeError"):
                    continue
                first = node.args[0] if node.args else None
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                    f"{where}: {called}(...) without a string literal reason code: write the code out, so that "
                    "this test (and docs/rules.md section 9) can see it"
                )
                codes.setdefault(first.value, set()).add(_status_of(classes[called]))
    # the codes classify() gives to failures that are not RefereeErrors (storage, deadlines, bugs): every
    # `return grpc.StatusCode.X, "CODE", ...` in it
    errors_py = ROOT / "server" / "errors.py"
    for node in ast.walk(ast.parse(errors_py.read_text(), str(errors_py))):
        if isinstance(node, ast.FunctionDef) and node.name in ("classify", "_known"):
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and len(ret.value.elts) >= 2:
                    status, code = ret.value.elts[0], ret.value.elts[1]
                    if isinstance(status, ast.Attribute) and isinstance(code, ast.Constant):
                        codes.setdefault(str(code.value), set()).add(status.attr)
    return codes


def test_the_collector_sees_codes_of_every_kind() -> None:
    """The test below is only as good as its collector: it finds engine, server and classify codes."""
    codes = returned_codes()
    assert codes["INVALID_MELD"] == {"FAILED_PRECONDITION"}
    assert codes["INVALID_CARD"] == {"INVALID_ARGUMENT"}
    assert codes["VERSION_MISMATCH"] == {grpc.StatusCode.ABORTED.name}
    assert codes["STORAGE_UNAVAILABLE"] == {"UNAVAILABLE"} and codes["INTERNAL"] == {"INTERNAL"}
    assert len(codes) > 50


def test_every_reason_code_has_one_status() -> None:
    """A client can tell what to do from the reason alone: no code is sent with two statuses."""
    mixed = {code: statuses for code, statuses in returned_codes().items() if len(statuses) != 1}
    assert not mixed, f"reason codes sent with more than one status: {mixed}"


def test_every_reason_code_is_documented_with_its_status() -> None:
    rows = _table_rows(_section(9))
    codes = returned_codes()
    missing = sorted(set(codes) - set(rows))
    assert not missing, f"reason codes missing from docs/rules.md section 9: {missing}"
    for code, statuses in codes.items():
        assert rows[code][0] in statuses, f"{code}: documented as {rows[code][0]}, returned as {statuses}"
        assert rows[code][1], f"{code}: no trigger documented"
    stale = sorted(set(rows) - set(codes))
    assert not stale, f"docs/rules.md section 9 lists codes nothing returns: {stale}"


# ----------------------------------------------------------------------------------------------------- links


def test_the_readme_and_the_proto_comments_link_the_rules() -> None:
    assert "(docs/rules.md)" in (ROOT / "README.md").read_text()
    for proto in ("game.proto", "referee.proto"):
        assert "docs/rules.md" in (ROOT / "proto" / "rummy" / "v1" / proto).read_text(), proto
