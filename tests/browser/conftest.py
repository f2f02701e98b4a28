"""Headless Chromium for the graph page's tests: a page's self-check (the page measures itself when opened with
#selfcheck and writes JSON into the DOM) and screenshots. Chromium comes from the system packages
(apt-get install chromium; .ci/run installs it); without it these tests skip."""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# where screenshots and the pages they show are kept for people to look at
SCREENSHOTS = Path(os.environ.get("XLAPY_SCREENSHOT_DIR", Path(tempfile.gettempdir()) / "xlapy_graph_screenshots"))


class Browser:
    screenshots = SCREENSHOTS

    def __init__(self, executable: str, profile: Path):
        self.executable, self.profile = executable, profile

    def run(self, *args: str) -> str:
        proc = subprocess.run([self.executable, *FLAGS, f"--user-data-dir={self.profile}", *args],
                              capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    def dom(self, page: Path, fragment: str = "", window: str = "1400,1000") -> str:
        """The page's DOM after its scripts ran (virtual time: timers run at once)."""
        return self.run(f"--window-size={window}", "--virtual-time-budget=30000", "--dump-dom",
                        page.resolve().as_uri() + fragment)

    def self_check(self, page: Path, options: str = "", window: str = "1400,1000") -> dict:
        dom = self.dom(page, "#selfcheck" + options, window)
        found = re.search(r'<pre id="selfcheck">(.*?)</pre>', dom, re.S)
        assert found, "no self-check in the page; its status line: " + self.status_line(dom)
        return json.loads(html.unescape(found.group(1)))

    def screenshot(self, page: Path, png: Path, fragment: str = "", window: str = "1600,1200") -> Path:
        png.parent.mkdir(parents=True, exist_ok=True)
        self.run(f"--window-size={window}", "--virtual-time-budget=30000", "--hide-scrollbars",
                 f"--screenshot={png}", page.resolve().as_uri() + fragment)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        print(f"screenshot: {png}")
        return png

    @staticmethod
    def status_line(dom: str) -> str:
        """The text of the page's one status line."""
        found = re.search(r'<p id="status"[^>]*>(.*?)</p>', dom, re.S)
        return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))) if found else "(none)"


@pytest.fixture(scope="session")
def browser(tmp_path_factory) -> Browser:
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    return Browser(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
