"""The hot path's command packer (hiredis's, in C) writes exactly what the Python packer it replaced wrote, for
every kind of argument the store sends; another kind (hiredis refuses it) is spelled as str() spells it."""

from __future__ import annotations

from server.hotpath import _resp, resp


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
