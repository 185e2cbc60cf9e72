"""Screenshot of a running console, as docs/console.md shows it.

    verdictflow dev            # prints "console http://127.0.0.1:PORT/"
    python scripts/console_screenshot.py http://127.0.0.1:PORT/ docs/console.png

The page is opened in Debian's headless Chromium, left to draw a few ticks, filtered to FAIL
verdicts (the failing answers and their highlighted spans come first), and saved as PNG.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support import browser


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--decision", default="FAIL", help="FAIL, DEFER or * for both")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=2000)
    args = parser.parse_args()
    why = browser.missing()
    if why is not None:
        raise SystemExit(why)
    from selenium.webdriver.support.ui import Select

    with browser.headless_chromium(args.width, args.height) as page:
        page.get(args.url)
        time.sleep(2)
        Select(page.find_element("id", "show-decision")).select_by_value(args.decision)
        time.sleep(2)
        page.save_screenshot(str(args.out))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
