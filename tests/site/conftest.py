"""The built site, served on 127.0.0.1 and driven by Playwright in Debian's chromium.

Run by ``nox -s site_tests`` (which builds the site first); the ordinary test session does not
collect this folder (see ``tests/conftest.py``). Every request that does not go to the local
server is blocked, so a page that needs the network fails here as it would offline.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

SITE = Path(os.environ.get("ATTNPRIMER_SITE_DIR", Path(__file__).parents[2] / "site"))
"""The built site (``mkdocs build`` writes it to ``site/``)."""


@pytest.fixture(scope="session")
def base_url():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: run `nox -s docs` (or `nox -s site_tests`)")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium is not installed (apt-get install chromium); "
                    "Playwright cannot download a browser here")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


class Visit:
    """One page load, with everything that went wrong on the way."""

    def __init__(self, browser, base_url: str, path: str) -> None:
        self.page = browser.new_page()
        self.console_errors: list[str] = []
        self.failed: list[str] = []
        self.blocked: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.console_errors.append(str(error)))
        self.page.on("requestfailed", self._request_failed)
        self.page.on("response", self._response)
        self.base_url = base_url
        self.page.route("**/*", self._route)
        self.page.goto(base_url + path, wait_until="networkidle")

    def _console(self, message) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)

    def _request_failed(self, request) -> None:
        if request.url not in self.blocked:
            self.failed.append(f"{request.url} ({request.failure})")

    def _response(self, response) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.url} (HTTP {response.status})")

    def _route(self, route) -> None:
        if route.request.url.startswith(self.base_url):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()


@pytest.fixture
def visit(browser, base_url):
    pages = []

    def load(path: str) -> Visit:
        pages.append(Visit(browser, base_url, path))
        return pages[-1]

    yield load
    for visited in pages:
        visited.page.unroute_all(behavior="ignoreErrors")
        visited.page.close()
