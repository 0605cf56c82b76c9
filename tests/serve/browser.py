#!/usr/bin/env python3
"""egm serve in a real browser: headless Chromium driven through chromedriver's
W3C WebDriver HTTP API (plain urllib, no Selenium).

  browser.py finished URL SWEEP OUT   the pages of a finished sweep
  browser.py live URL SWEEP OUT       a running sweep's page updating itself
  browser.py figures OUT URL...       every plot on these pages, measured (below)

`live` handshakes with the calling script through files in OUT: it writes
`ready` once the browser runs, waits for `go` (the sweep is frozen at a known
point), loads the page, checks it and writes `loaded` with the steps it shows,
then watches the page (reloaded by its meta refresh, never by us) until it
shows more steps done. Screenshots go to OUT/*.png. Exit 0: every check
passed; 1: a check failed (each failure printed); 77: no chromium/chromedriver.

`figures` lays out each `svg.plot` of each page (egm serve's pages, the
gallery of hard cases that egm_svg_gallery writes) and measures what
Chromium drew, in the SVG's own units: every text inside the viewBox (the
legend not clipped); no two texts overlapping (tick labels, category labels,
legend lines, title; turned labels as the quadrilaterals they are); every
colour a data mark is drawn in (lines, points, intervals, bands, spans) on a
legend swatch (every legend complete); on a count axis (the sequences) only
whole-number ticks. Each plot is saved as OUT/ID.png.
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

failures = []


def fail(message):
    print("FAIL: " + message, flush=True)
    failures.append(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    def __init__(self):
        self.driver_port = free_port()
        self.driver = subprocess.Popen(
            [shutil.which("chromedriver"), f"--port={self.driver_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.driver_port}"
        deadline = time.time() + 60
        while True:
            try:
                if self.call("GET", "/status")["ready"]:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            if time.time() > deadline:
                raise RuntimeError("chromedriver did not become ready within 60 s")
            time.sleep(0.2)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": shutil.which("chromium"),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--hide-scrollbars", "--window-size=1280,900"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"WebDriver {method} {path}: {e.code} {e.read()[:500]!r}") from None

    def open(self, url):
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def js(self, script, *args):
        return self.call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": list(args)})

    def screenshot(self, path, full_height=False):
        if full_height:  # the whole page, not just the window
            h = self.js("return document.documentElement.scrollHeight")
            self.call("POST", f"/session/{self.session}/window/rect", {"width": 1280, "height": min(int(h) + 40, 6000)})
        png = base64.b64decode(self.call("GET", f"/session/{self.session}/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        if full_height:
            self.call("POST", f"/session/{self.session}/window/rect", {"width": 1280, "height": 900})
        if not png.startswith(b"\x89PNG") or len(png) < 5000:
            fail(f"screenshot {path}: not a PNG of a page ({len(png)} bytes)")

    def close(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        finally:
            self.driver.terminate()
            self.driver.wait(timeout=30)


def count(b, selector):
    return b.js("return document.querySelectorAll(arguments[0]).length", selector)


def text(b, selector):
    return b.js("const e = document.querySelector(arguments[0]); return e ? e.textContent : null", selector)


def expect_count(b, selector, at_least, what):
    n = count(b, selector)
    if n < at_least:
        fail(f"{what}: expected at least {at_least} of '{selector}', found {n}")


def finished(b, url, sweep, out):
    b.open(url)
    expect_count(b, f"#sweeps tr[data-sweep='{sweep}']", 1, "sweeps page lists the sweep")
    status = text(b, f"#sweeps tr[data-sweep='{sweep}'] .status")
    if status != "done":
        fail(f"sweeps page: status of {sweep} is {status!r}, expected 'done'")
    progress = b.js(f"return document.querySelector(\"#sweeps tr[data-sweep='{sweep}'] .progress\").dataset.progress")
    if abs(float(progress) - 1.0) > 1e-9:
        fail(f"sweeps page: progress {progress}, expected 1")
    b.screenshot(os.path.join(out, "sweeps.png"))
    # Click through to the sweep, as a person would.
    b.js(f"document.querySelector(\"#sweeps tr[data-sweep='{sweep}'] a\").click()")
    deadline = time.time() + 60
    while b.js("return location.pathname") != f"/sweep/{sweep}" or count(b, "#table-cells") == 0:
        if time.time() > deadline:
            fail("clicking the sweep's link did not open its page")
            return
        time.sleep(0.2)
    for sel in ["#main-table", "#verdict", "#table-deltas", "#table-interaction", "#table-published",
                "#table-summary", "#table-per_seed", "#table-mope_runs", "#table-gates_by_layer", "#table-cells"]:
        expect_count(b, sel, 1, "sweep page")
    expect_count(b, "#main-table tbody tr", 5, "paper table: 4 variants + interaction")
    expect_count(b, "#table-cells tbody tr", 12, "cells table: 4 variants x 3 seeds")
    for plot, mark, n in [("#plot-val-curves", "path.line", 4), ("#plot-val-curves", "polygon.band", 4),
                          ("#plot-omega-sigma", "circle.point", 24), ("#plot-interaction", "path.interval", 5)]:
        expect_count(b, f"svg{plot} {mark}", n, f"plot {plot}")
    # The browser really laid the plots out (not a zero-size or broken SVG).
    for plot in ["#plot-val-curves", "#plot-omega-sigma", "#plot-interaction"]:
        size = b.js("const r = document.querySelector(arguments[0]).getBoundingClientRect(); "
                    "return [r.width, r.height]", plot)
        if not size or size[0] < 300 or size[1] < 200:
            fail(f"plot {plot} rendered at {size}")
    verdict = text(b, "#verdict") or ""
    if not any(v in verdict for v in ["superadditive", "subadditive", "additive-consistent", "no verdict"]):
        fail(f"verdict reads {verdict!r}")
    if count(b, "meta[http-equiv='refresh']") != 0:
        fail("a finished sweep's page reloads itself")
    b.screenshot(os.path.join(out, "sweep.png"), full_height=True)
    b.screenshot(os.path.join(out, "sweep-top.png"))
    # A cell: follow the first cell link.
    href = b.js("return document.querySelector('#table-cells tbody tr a').getAttribute('href')")
    b.open(url.rstrip("/") + href)
    for sel in ["#table-results", "#table-attempts", "#table-events", "svg#plot-loss"]:
        expect_count(b, sel, 1, f"cell page {href}")
    expect_count(b, "svg#plot-loss path.line", 2, f"cell page {href}: train and eval curves")
    b.screenshot(os.path.join(out, "cell.png"), full_height=True)
    # The SQL box: type a statement and submit the form.
    b.open(url.rstrip("/") + "/query")
    b.js("document.querySelector('#sql').value = arguments[0]; document.querySelector('form').submit()",
         "SELECT variant, count(*) AS n FROM cells GROUP BY variant ORDER BY variant")
    deadline = time.time() + 60
    while count(b, "#query-result") == 0 and time.time() < deadline:
        time.sleep(0.2)
    expect_count(b, "#query-result tbody tr", 4, "SQL box result")
    b.js("document.querySelector('#sql').value = 'DELETE FROM cells'; document.querySelector('form').submit()")
    deadline = time.time() + 60
    while count(b, "#error") == 0 and time.time() < deadline:
        time.sleep(0.2)
    err = text(b, "#error") or ""
    if "read" not in err.lower() and "writ" not in err.lower():
        fail(f"a writing statement's error reads {err!r}")
    b.screenshot(os.path.join(out, "query-refused.png"))
    # An unknown path is a page that says so.
    b.open(url.rstrip("/") + "/no/such/page")
    if "no page at" not in (text(b, "#error") or ""):
        fail("an unknown path does not say 'no page at'")


def wait_file(path, timeout):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            return False
        time.sleep(0.1)
    return True


def live(b, url, sweep, out):
    with open(os.path.join(out, "ready"), "w"):
        pass
    if not wait_file(os.path.join(out, "go"), 300):
        fail("never told to go (the sweep did not reach the point to freeze at)")
        return
    page = url.rstrip("/") + "/sweep/" + sweep
    b.open(page)
    steps0 = int(b.js("return document.querySelector('#progress').dataset.stepsDone"))
    expect_count(b, "meta[http-equiv='refresh']", 1, "a running sweep's page reloads itself")
    expect_count(b, "#table-running tbody tr", 1, "running cells table")
    expect_count(b, "svg#plot-val-curves", 1, "val curves of a running sweep")
    b.screenshot(os.path.join(out, "live-frozen.png"))
    b.js("window.egmMarker = 1")  # gone once the page reloads itself
    with open(os.path.join(out, "loaded"), "w") as f:
        f.write(str(steps0))
    print(f"live page loaded at {steps0} steps done", flush=True)
    deadline = time.time() + 180
    steps, reloaded = steps0, False
    while time.time() < deadline:
        time.sleep(0.5)
        try:
            reloaded = reloaded or b.js("return window.egmMarker === undefined")
            steps = int(b.js("const e = document.querySelector('#progress'); return e ? e.dataset.stepsDone : -1"))
        except RuntimeError:
            continue  # caught mid-reload
        if steps > steps0 + 20:
            break
    if not reloaded:
        fail("the running sweep's page never reloaded itself")
    if steps <= steps0 + 20:
        fail(f"the page still shows {steps} steps done (was {steps0}) after 180 s of training")
        return
    print(f"live page updated itself: {steps0} -> {steps} steps done", flush=True)
    status = text(b, "h1 .status")
    if status != "running":
        fail(f"after the thaw the sweep shows {status!r}, expected 'running'")
    b.screenshot(os.path.join(out, "live-updated.png"))


# Per plot: its viewBox, every text as a quadrilateral in the SVG's units
# (its box through its transform), the legend entries' boxes, and the colours
# of the data marks and of the legend swatches.
MEASURE_JS = """
const corners = (el) => {
  const b = el.getBBox(), m = el.getCTM(), svg = el.ownerSVGElement, p = svg.createSVGPoint();
  return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]].map(([x, y]) => {
    p.x = x; p.y = y; const q = p.matrixTransform(m); return [q.x, q.y];
  });
};
const colour = (el) => {
  const f = el.getAttribute('fill'), s = el.getAttribute('stroke');
  return (f && f !== 'none') ? f : s;
};
return Array.from(document.querySelectorAll('svg.plot')).map((svg) => ({
  id: svg.id,
  view: [svg.viewBox.baseVal.width, svg.viewBox.baseVal.height],
  texts: Array.from(svg.querySelectorAll('text')).filter((t) => t.textContent.trim() !== '').map((t) => ({
    cls: t.getAttribute('class') || '', text: t.textContent, quad: corners(t)})),
  entries: Array.from(svg.querySelectorAll('.legend-entry')).map((g) => ({text: g.textContent, quad: corners(g)})),
  marks: Array.from(svg.querySelectorAll('.line, .point, .interval, .band, .span')).map(colour),
  swatches: Array.from(svg.querySelectorAll('.swatch')).map(colour),
  xticks: Array.from(svg.querySelectorAll('text.xtick')).map((t) => t.textContent),
}));
"""


def separated(a, b, slack=0.5):
    """Two convex quadrilaterals do not overlap by more than `slack` (separating axis theorem)."""
    for quad in (a, b):
        for i in range(4):
            (x1, y1), (x2, y2) = quad[i], quad[(i + 1) % 4]
            nx, ny = y2 - y1, x1 - x2
            norm = (nx * nx + ny * ny) ** 0.5
            if norm == 0:
                continue
            pa = [(x * nx + y * ny) / norm for x, y in a]
            pb = [(x * nx + y * ny) / norm for x, y in b]
            if min(max(pa), max(pb)) - max(min(pa), min(pb)) <= slack:
                return True
    return False


def check_plot(plot, page, integer_x):
    where = f"{page} {plot['id']}"
    w, h = plot["view"]
    if not plot["texts"]:
        fail(f"{where}: no text at all")
    for t in plot["texts"] + [dict(e, cls="legend-entry") for e in plot["entries"]]:
        xs, ys = [p[0] for p in t["quad"]], [p[1] for p in t["quad"]]
        if min(xs) < -0.5 or min(ys) < -0.5 or max(xs) > w + 0.5 or max(ys) > h + 0.5:
            fail(f"{where}: {t['cls']} {t['text']!r} reaches outside the {w:g}x{h:g} viewBox: "
                 f"x {min(xs):.1f}..{max(xs):.1f}, y {min(ys):.1f}..{max(ys):.1f}")
    texts = plot["texts"]
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if not separated(texts[i]["quad"], texts[j]["quad"]):
                fail(f"{where}: {texts[i]['cls']} {texts[i]['text']!r} overlaps {texts[j]['cls']} {texts[j]['text']!r}")
    missing = sorted(set(plot["marks"]) - set(plot["swatches"]))
    if missing:
        fail(f"{where}: marks drawn in {missing} have no legend entry (legend: "
             f"{[e['text'] for e in plot['entries']]})")
    if integer_x:
        for tick in plot["xticks"]:
            if not tick.lstrip("-").isdigit():
                fail(f"{where}: x tick {tick!r} on a count axis")


def figures(b, out, urls):
    measured = 0
    for url in urls:
        b.open(url)
        plots = b.js(MEASURE_JS)
        if not plots:
            fail(f"{url}: no plots")
        for plot in plots:
            check_plot(plot, url, integer_x="sequences" in plot["id"])
            eid = b.call("POST", f"/session/{b.session}/element", {"using": "css selector", "value": "#" + plot["id"]})
            eid = next(iter(eid.values()))
            png = base64.b64decode(b.call("GET", f"/session/{b.session}/element/{eid}/screenshot"))
            name = (url.rstrip("/").split("/")[-1].split("?")[0] or "page").replace(".html", "")
            with open(os.path.join(out, f"{name}-{plot['id']}.png"), "wb") as f:
                f.write(png)
            measured += 1
            print(f"{url} {plot['id']}: {len(plot['texts'])} texts, {len(plot['entries'])} legend entries, "
                  f"viewBox {plot['view'][0]:g}x{plot['view'][1]:g}", flush=True)
    print(f"{measured} plots measured", flush=True)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "figures":
        if not shutil.which("chromium") or not shutil.which("chromedriver"):
            print("SKIP: no chromium/chromedriver (scripts/test.sh installs them)")
            return 77
        out = sys.argv[2]
        os.makedirs(out, exist_ok=True)
        b = Browser()
        try:
            figures(b, out, sys.argv[3:])
        finally:
            b.close()
        return 1 if failures else 0
    if len(sys.argv) != 5 or sys.argv[1] not in ("finished", "live"):
        print(__doc__)
        return 2
    if not shutil.which("chromium") or not shutil.which("chromedriver"):
        print("SKIP: no chromium/chromedriver (scripts/test.sh installs them)")
        return 77
    mode, url, sweep, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    b = Browser()
    try:
        (finished if mode == "finished" else live)(b, url, sweep, out)
    finally:
        b.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
