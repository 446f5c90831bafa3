"""Debian's chromium driven through its chromium-driver (selenium): a page is read once what the
test waits for is on it, not after a fixed time budget; past the deadline the test fails with
the page's text. A single-page app (Prefect's UI) fetches its data after the page has loaded.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1")
MISSING = [name for name, found in (("chromium", CHROMIUM), ("chromium-driver", CHROMEDRIVER),
                                    ("selenium", importlib.util.find_spec("selenium"))) if not found]
needs_browser = pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)} (make setup)")


def dom_text(html: str) -> str:
    """The page's markup without tags, whitespace collapsed (text split across elements joins)."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


class Browser:
    """One headless chromium session (its own profile folder under ``folder``)."""

    def __init__(self, folder: Path, width: int, height: int) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--window-size={width},{height}", f"--user-data-dir={folder / 'profile'}"):
            options.add_argument(flag)
        self.log = folder / "chromedriver.log"
        self.driver = webdriver.Chrome(options=options,
                                       service=Service(CHROMEDRIVER, log_output=str(self.log)))
        extra_w, extra_h = self.driver.execute_script(  # the window's frame: the page gets width x height
            "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]")
        self.driver.set_window_size(width + extra_w, height + extra_h)

    def open(self, url: str, *needles: str, timeout: float = 180) -> str:
        """Load ``url`` and wait until every needle is in its text; that text (see ``dom_text``)."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        def ready(driver) -> str | None:
            text = dom_text(driver.page_source)
            loaded = driver.execute_script("return document.readyState") == "complete"
            return text if loaded and all(n in text for n in needles) else None

        self.driver.get(url)
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.25).until(ready)
        except TimeoutException:
            text = dom_text(self.driver.page_source)
            pytest.fail(f"{[n for n in needles if n not in text]} not on {url} within {timeout:.0f} s; "
                        f"the page shows:\n{self.driver.find_element('tag name', 'body').text[-4000:]}",
                        pytrace=False)

    def html(self) -> str:
        return self.driver.page_source

    def screenshot(self, path: Path) -> Path:
        self.driver.save_screenshot(str(path))
        return path


@contextmanager
def browser(folder: Path, width: int = 1400, height: int = 1600) -> Iterator[Browser]:
    """A chromium session for the ``with`` block; chromium and its driver are stopped after."""
    folder.mkdir(parents=True, exist_ok=True)
    session = Browser(folder, width, height)
    try:
        yield session
    finally:
        session.driver.quit()
