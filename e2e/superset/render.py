"""The chart in a real browser: Debian's Chromium, headless, driven by Selenium through Debian's
chromedriver (the same build as the browser, so nothing is downloaded). It signs in on Superset's login
page as a user does, opens the saved chart alone (``/explore/?slice_id=N&standalone=1``) and a dashboard
holding it, waits for ECharts to draw and saves PNGs; ``measure_bars`` reads the bars back from the pixels."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

__all__ = ["Bars", "Browser", "measure_bars"]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
    "--window-size=1000,800", "--hide-scrollbars", "--force-device-scale-factor=1",
]  # fmt: skip
_DRAWN = ".chart-container canvas, .chart-container svg"


class Browser:
    """One headless Chromium session signed in to Superset."""

    def __init__(self, url: str, username: str, password: str, timeout: float = 90) -> None:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in _FLAGS:
            options.add_argument(flag)
        self.url = url
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.wait = WebDriverWait(self.driver, timeout)
        try:
            self.driver.get(url + "/login/")
            self.wait.until(ec.presence_of_element_located((By.ID, "username"))).send_keys(username)
            self.driver.find_element(By.ID, "password").send_keys(password + "\n")
            self.wait.until(lambda d: "/login" not in d.current_url)
        except Exception:
            self.driver.quit()
            raise

    def chart(self, chart: int, out: Path) -> None:
        """Open the chart alone (``standalone=1``: no controls), wait until it is drawn, save a PNG."""
        self._draw(f"/explore/?slice_id={chart}&standalone=1", out)

    def dashboard(self, dashboard: int, out: Path) -> None:
        """Open a dashboard (``standalone=1``: no menus), wait until its chart is drawn, save a PNG."""
        self._draw(f"/superset/dashboard/{dashboard}/?standalone=1", out)

    def _draw(self, path: str, out: Path, settle: float = 3.0) -> None:
        self.driver.get(self.url + path)
        self.wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, _DRAWN)))
        self.wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, ".loading, [aria-label='Loading']"))
        time.sleep(settle)  # ECharts animates the bars in (about a second)
        errors = self.driver.find_elements(By.CSS_SELECTOR, ".alert-danger, .ant-alert-error")
        if errors:
            raise RuntimeError(f"{path} shows an error: {errors[0].text[:500]}")
        out.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(out))

    def console_errors(self) -> list[str]:
        """The page's severe console messages, but Superset's telemetry pixel (scarf.sh), which cannot
        load on a machine without internet."""
        entries: list[dict[str, str]] = self.driver.get_log("browser")  # type: ignore[no-untyped-call]
        return [e["message"] for e in entries if e["level"] == "SEVERE" and "scarf.sh" not in e["message"]]

    def close(self) -> None:
        self.driver.quit()


@dataclass(frozen=True)
class Bars:
    colour: tuple[int, int, int]
    share: float  # of the image's pixels in the bars' colour
    heights: list[int]  # each bar's height in pixels, left to right
    widths: list[int]


def measure_bars(png: Path, tolerance: int = 12) -> Bars:
    """The bars in a screenshot: the most frequent saturated colour is taken as the bars' (ECharts fills
    them flat), and each run of image columns holding that colour is one bar, as tall as its tallest
    column. A blank or error page has no such colour and gives no bars."""
    image = Image.open(png).convert("RGB")
    width, height = image.size
    raw = image.tobytes()

    def pixel(x: int, y: int) -> tuple[int, int, int]:
        i = 3 * (y * width + x)
        return raw[i], raw[i + 1], raw[i + 2]

    counts: Counter[tuple[int, int, int]] = Counter()
    for y in range(0, height, 2):
        for x in range(0, width, 2):
            p = pixel(x, y)
            if max(p) - min(p) > 60:  # saturated: not white, grey or black text
                counts[p] += 1
    if not counts:
        return Bars((0, 0, 0), 0.0, [], [])
    colour = counts.most_common(1)[0][0]

    def near(p: tuple[int, int, int]) -> bool:
        return all(abs(a - b) <= tolerance for a, b in zip(p, colour, strict=True))

    column_heights = [sum(near(pixel(x, y)) for y in range(height)) for x in range(width)]
    total = sum(column_heights)
    heights, widths, run = [], [], []
    for h in [*column_heights, 0]:
        if h > 2:
            run.append(h)
        elif run:
            if len(run) > 4:  # thinner runs are legend marks or anti-aliasing, not bars
                heights.append(max(run))
                widths.append(len(run))
            run = []
    return Bars(colour, total / (width * height), heights, widths)
