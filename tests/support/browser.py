"""Debian's headless Chromium driven by Selenium, for tests and benchmarks of the console page.

Skips (in tests) or says why (elsewhere) when Chromium, its driver or Selenium is missing:
`apt-get install chromium chromium-driver` and the ``dev`` extra bring them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
)


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    for name in ("chromium", "chromedriver"):
        if shutil.which(name) is None:
            return f"{name} is not installed (apt-get install chromium chromium-driver)"
    return None


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1800) -> Iterator[Any]:
    """A Selenium WebDriver on headless Chromium, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in (*CHROMIUM_FLAGS, f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.binary_location = str(shutil.which("chromium"))
    driver = webdriver.Chrome(service=Service(str(shutil.which("chromedriver"))), options=options)
    try:
        yield driver
    finally:
        driver.quit()
