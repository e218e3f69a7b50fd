"""The hot path's command packer (hiredis's, in C) writes exactly what the Python packer it replaced wrote, for
every kind of argument the store sends; another kind (hiredis refuses it) is spelled as str() spells it."""

from __future__ import annotations

import random
from typing import Any

from server.hotpath import CommitPacker, _resp, resp


def test_hiredis_packs_the_store_commands_byte_for_byte_as_the_python_packer() -> None:
    commit: tuple[str | bytes | int, ...] = (
        "EVALSHA", "a" * 40, 3, "game:{g_x}", "log:{g_x}", "idem:{g_x}", 12, b"\x00\xff" * 450, "c1",
        1764600000000, b"", 86400, 0, -1, "é", "", 2**70,
    )  # fmt: skip
    commands: list[tuple[str | bytes | int, ...]] = [
        commit, ("HMGET", "game:{g_x}", "state", "version"), ("PING",), ("ASKING",),
    ]  # fmt: skip
    for command in commands:
        assert resp(command) == _resp(command)
    assert resp(("EVAL", "return 1", 0)) == b"*3\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n0\r\n"


def test_an_argument_hiredis_refuses_is_packed_as_before() -> None:
    command: tuple[str | bytes | int, ...] = ("SET", "k", True)  # a bool is an int to mypy; no caller sends one
    assert resp(command) == _resp(command) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\nTrue\r\n"


def test_a_commit_is_packed_by_its_template_as_resp_packs_it() -> None:
    rng = random.Random(7)

    def text() -> str:
        return "".join(rng.choice("ab{}:-_é0") for _ in range(rng.randrange(0, 12)))

    def blob() -> bytes:
        return rng.randbytes(rng.choice((0, 1, 16, 40, 900)))

    def number() -> int:
        return rng.choice((0, 1, -1, 9, 10, 2**31, 2**70, rng.randrange(-(10**13), 10**13)))

    games = [text() for _ in range(20)]
    sha = "".join(rng.choice("0123456789abcdef") for _ in range(40))
    packer = CommitPacker(sha, size=8)  # (its table of heads fills and is emptied again)
    for _ in range(3000):
        game = rng.choice(games)
        keys = [f"game:{{{game}}}", f"game:{{{game}}}:log", f"game:{{{game}}}:idem"]
        if rng.random() < 0.1:
            keys[rng.randrange(1, 3)] += "x"  # another key after the same first one
        args: list[Any] = [
            number(), blob(), text(), number(), blob(), number(), number(), number(), blob(), text(), number(),
        ]  # fmt: skip
        assert packer.pack(keys, args) == resp(("EVALSHA", sha, 3, *keys, *args))


def test_other_arguments_are_packed_by_resp() -> None:
    keys = ["game:{g}", "game:{g}:log", "game:{g}:idem"]
    args: list[Any] = [1, b"s", "c", 2, b"", 3, 4, 5, b"e", "", 6]
    packer = CommitPacker("a" * 40)
    for i, odd in [(0, True), (3, 1.5), (1, "state"), (4, "text"), (8, "text"), (2, b"id"), (9, b"m,1,0"), (10, 2**70)]:
        changed = [*args]
        changed[i] = odd
        assert packer.pack(keys, changed) == resp(("EVALSHA", "a" * 40, 3, *keys, *changed))
    for ks, more in [(keys, ["s"]), (keys[:2], []), (keys, args[:1])]:
        assert packer.pack(ks, args + more) == resp(("EVALSHA", "a" * 40, len(ks), *ks, *args, *more))
    assert packer.pack(keys, args[:10]) == resp(("EVALSHA", "a" * 40, 3, *keys, *args[:10]))
