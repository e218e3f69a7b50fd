"""The HTTP port serves the web table's static files (server/web/) beside Connect: GET and HEAD of /, /app.js and
/table.css with their types; anything else stays 404, and a POST to / is no file."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from server.http_server import WEB_DIR
from server.redis_launcher import RedisProcess
from tests.server.refkit import ServerThread


@pytest.fixture(scope="module")
def http(redis_server: RedisProcess) -> Iterator[httpx.Client]:
    server = ServerThread(redis_server.url, http=True)
    try:
        with httpx.Client(base_url=server.http_url, timeout=30) as client:
            yield client
    finally:
        server.stop()


def test_the_web_table_is_served_at_the_root(http: httpx.Client) -> None:
    page = http.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.content == (WEB_DIR / "index.html").read_bytes()
    assert b'src="app.js"' in page.content
    script = http.get("/app.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.content == (WEB_DIR / "app.js").read_bytes()
    assert http.get("/table.css").headers["content-type"].startswith("text/css")
    head = http.head("/index.html")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(page.content)


def test_other_paths_and_methods_are_not_files(http: httpx.Client) -> None:
    assert http.get("/nothing.js").status_code == 404
    assert http.get("/../pyproject.toml").status_code == 404
    assert http.post("/", content=b"x").status_code == 404
    ping = http.post("/rummy.v1.RefereeService/Ping", json={})
    assert ping.status_code == 200 and ping.json() == {}
