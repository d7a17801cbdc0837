#!/usr/bin/env python3
"""report.html of a run with failures, opened in headless Chromium (label `browser`).

Usage: report_browser_test.py <opgate binary> <source dir> <scratch dir>

A fault-backend run of two operators' ci tier (the fault breaks one of them) gives a report with
PASSED and FAILED cases. Chromium renders it offline (file://, networking off); the test then checks
what a CI owner sees:
  - the page loads and logs nothing to the console (no script errors, no blocked resources);
  - the verdict counts on the page are the ones summary.txt and results.jsonl give;
  - the per-operator summary gives each operator's count per verdict as results.jsonl does;
  - the failures section lists exactly the failing cases, in results.jsonl order, each with its
    repro command and a link to failed/<id>.json that exists in the report folder;
  - the case table's filters work: Chromium's --dump-dom cannot click, so the filter is set through
    the URL fragment the page honours (report.html#verdict=FAILED, #op=..., #text=...; the same
    links people share), and the rows the page leaves visible must be the ones results.jsonl
    (or, for text, the row texts) say;
  - nothing is fetched from the network (the file is self-contained);
  - the first 1400x900 screen (laid out by Chromium at that size, measured by a probe script added
    to a copy of the page) shows the verdict and counts, the date, host and kernel rev, and the
    first failure with its error picture; the title carries the verdict and counts too;
and saves a screenshot, report.png, in the scratch folder for people to look at.
"""
import html
import html.parser
import json
import os
import re
import socket
import shutil
import subprocess
import sys
import tempfile
import urllib.parse


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("FAIL: no chromium on PATH (tools/setup.sh installs Debian's chromium)")


def headless(browser, url, *extra):
    """Runs headless Chromium on url; returns (stdout, stderr)."""
    profile = tempfile.mkdtemp(prefix="opgate-browser-")
    try:
        args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", *extra, url]
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        return done.stdout, done.stderr
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class Text(html.parser.HTMLParser):
    """The page's visible text and the external resources it refers to."""

    def __init__(self):
        super().__init__()
        self.text = []
        self.external = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("src", "href") and value and re.match(r"^(https?:)?//", value):
                self.external.append(value)

    def handle_data(self, data):
        self.text.append(data)


class Structure(html.parser.HTMLParser):
    """What the report's markup says: per-operator summary cells, failure blocks and their links,
    case table rows (with their visibility and text), and the "N of M shown" line."""

    def __init__(self):
        super().__init__()
        self.ops = {}          # op -> {verdict: count}
        self.failures = []     # case ids, in page order
        self.links = []        # href of each a.case-file
        self.rows = []         # dicts: op, verdict, id, hidden, text
        self.shown = ""
        self._op = None        # the tr.op being read
        self._cell = None      # (op, verdict) of the summary cell being read
        self._row = None       # the tr.case being read
        self._in_failure_summary = False
        self._in_failure_id = False
        self._in_shown = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "tr" and "op" in classes:
            self._op = a["data-op"]
            self.ops[self._op] = {}
        elif tag == "td" and self._op is not None and "data-verdict" in a:
            self._cell = (self._op, a["data-verdict"])
        elif tag == "details" and "failure" in classes:
            self._in_failure_summary = True
        elif tag == "code" and self._in_failure_summary:
            self.failures.append("")
            self._in_failure_id = True
        elif tag == "a" and "case-file" in classes:
            self.links.append(a["href"])
        elif tag == "tr" and "case" in classes:
            self._row = {"op": a["data-op"], "verdict": a["data-verdict"], "id": a["data-id"],
                         "hidden": "hidden" in a or "display:none" in (a.get("style") or "").replace(" ", ""),
                         "text": ""}
        elif tag == "span" and a.get("id") == "f-shown":
            self._in_shown = True

    def handle_endtag(self, tag):
        if tag == "tr":
            self._op = None
            if self._row is not None:
                self.rows.append(self._row)
                self._row = None
        elif tag == "td":
            self._cell = None
        elif tag == "code":
            self._in_failure_id = False
        elif tag == "summary":
            self._in_failure_summary = False
        elif tag == "span":
            self._in_shown = False

    def handle_data(self, data):
        if self._cell is not None:
            op, verdict = self._cell
            self.ops[op][verdict] = int(data.strip())
        if self._in_failure_id:
            self.failures[-1] += data
        if self._row is not None:
            self._row["text"] += data
        if self._in_shown:
            self.shown += data


def rendered(browser, url, fragment, check):
    """The page at url#fragment after its scripts ran, parsed; checks it logged nothing."""
    dom, log = headless(browser, url + fragment, "--dump-dom")
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    check(not console, f"no console messages with '{fragment}': " + " | ".join(console[:3]))
    page = Structure()
    page.feed(dom)
    return page


def check_filter(browser, url, fragment, expected_ids, check):
    """Opens the page filtered by fragment; the visible rows must be exactly expected_ids."""
    page = rendered(browser, url, fragment, check)
    visible = [r["id"] for r in page.rows if not r["hidden"]]
    check(len(page.rows) > len(expected_ids) > 0, f"'{fragment}': a filter that keeps some rows and drops others "
          f"({len(expected_ids)} of {len(page.rows)})")
    check(sorted(visible) == sorted(expected_ids),
          f"'{fragment}' shows exactly its {len(expected_ids)} rows (shows {len(visible)}: {visible[:3]})")
    check(page.shown.strip() == f"{len(expected_ids)} of {len(page.rows)} cases shown",
          f"'{fragment}' says how many rows it shows (says '{page.shown.strip()}')")


# Added to a copy of report.html: where each thing a person must see first is laid out, and whether
# it lies wholly inside the window (the first screen).
PROBE = """<script>window.addEventListener('load', function () {
  var seen = {};
  function inside(el) {
    if (!el) return false;
    var r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 &&
           r.bottom <= window.innerHeight && r.right <= window.innerWidth;
  }
  var failure = document.querySelector('.failure');
  var items = {verdict: document.getElementById('verdict'), when: document.getElementById('when'),
               host: document.getElementById('host'), rev: document.getElementById('kernel-rev'),
               failure: failure && failure.querySelector('summary'),
               picture: failure && failure.querySelector('svg.axis')};
  for (var k in items) seen[k] = {inside: inside(items[k]), text: items[k] ? items[k].textContent : null};
  seen.window = [window.innerWidth, window.innerHeight];
  // No horizontal scrollbar: the page (the worst-element and case tables above all) fits the width.
  seen.scroll = [document.documentElement.scrollWidth, document.documentElement.clientWidth];
  seen.worst_right = Math.max.apply(null, [0].concat(Array.prototype.map.call(
      document.querySelectorAll('table.worst'), function (t) { return t.getBoundingClientRect().right; })));
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(seen);
  document.body.appendChild(pre);
});</script>"""


def check_first_screen(browser, report, results, rev, check):
    """The first 1400x900 screen of report.html shows what a person must see first."""
    page = open(os.path.join(report, "report.html")).read()
    probed = os.path.join(report, "first_screen.html")  # beside it: failed/ links stay valid
    with open(probed, "w") as f:
        f.write(page.replace("</body>", PROBE + "</body>"))
    dom, _ = headless(browser, "file://" + probed, "--window-size=1400,900", "--dump-dom")
    os.remove(probed)
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    check(found is not None, "the first-screen probe ran")
    if not found:
        return
    seen = json.loads(html.unescape(found.group(1)))
    # --dump-dom's viewport may be shorter than the window (757 px seen): inside it is inside 900.
    check(seen["window"][0] == 1400 and 600 < seen["window"][1] <= 900,
          f"the probe saw a 1400 px wide window at most 900 high ({seen['window']})")
    check(seen["scroll"][0] <= seen["scroll"][1], f"no horizontal scrollbar at 1400 px (page {seen['scroll'][0]} px "
          f"wide in {seen['scroll'][1]})")
    check(0 < seen["worst_right"] <= seen["window"][0], f"the worst-element tables fit the width ({seen['worst_right']})")
    for item in ("verdict", "when", "host", "rev", "failure", "picture"):
        check(seen[item]["inside"], f"the first screen shows the {item} ({seen[item]})")
    failed = sum(1 for r in results if r["verdict"] != "PASSED" and r["verdict"] != "SKIPPED")
    passed = sum(1 for r in results if r["verdict"] == "PASSED")
    words = f"FAILED · {failed} failed, {passed} passed"
    check((seen["verdict"]["text"] or "").startswith(words), f"the banner says '{words}' ({seen['verdict']['text']})")
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    check(title is not None and html.unescape(title.group(1)).startswith(words),
          f"the title says '{words}' ({title.group(1) if title else None})")
    started = json.load(open(os.path.join(report, "run.json")))["started_at"]
    check((seen["when"]["text"] or "").startswith(started[:10]), f"the banner's date is the run's ({seen['when']})")
    check(seen["host"]["text"] == socket.gethostname(), f"the banner names this host ({seen['host']})")
    check(seen["rev"]["text"] == rev, f"the banner names the kernel rev {rev} ({seen['rev']})")
    first = next(r["id"] for r in results if r["verdict"] == "FAILED")
    check(first in (seen["failure"]["text"] or ""), f"the first failure on screen is {first} ({seen['failure']})")


def main():
    opgate, src, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    report = os.path.join(work, "report")
    run = subprocess.run([opgate, "run", "--root", src, "--op", "moe_finalize_routing_v2_grad", "--op", "ffn_worker_batching",
                          "--tier", "ci",
                          "--backend", "fault:mfrg.scale_not_applied", "--kernel-rev", "9f3c2e1", "-q", "--out", report],
                         capture_output=True, text=True)
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    check(run.returncode == 1, f"the fault run exits 1 (got {run.returncode}: {run.stderr.strip()})")
    verdicts = [json.loads(line)["verdict"] for line in open(os.path.join(report, "results.jsonl"))
                if line.strip()]
    counts = {v: verdicts.count(v) for v in set(verdicts)}
    check(counts.get("PASSED", 0) > 0 and counts.get("FAILED", 0) > 0, f"the run has both verdicts: {counts}")
    summary = open(os.path.join(report, "summary.txt")).read()
    for verdict, n in counts.items():
        check(f"{verdict.lower()}:{n}" in summary, f"summary.txt says {verdict.lower()}:{n}")

    browser = chromium()
    url = "file://" + os.path.abspath(os.path.join(report, "report.html"))
    dom, log = headless(browser, url, "--dump-dom")
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    check(not console, "no console messages: " + " | ".join(console[:3]))
    check(len(dom) > 1000, f"Chromium returned the rendered page ({len(dom)} bytes)")
    page = Text()
    page.feed(dom)
    text = " ".join(page.text)
    check(not page.external, f"no external resources: {page.external[:3]}")
    for verdict, n in counts.items():
        check(re.search(rf"\b{verdict}\s+{n}\b", text) is not None, f"the page shows '{verdict} {n}'")
    failed_ids = [json.loads(line)["id"] for line in open(os.path.join(report, "results.jsonl"))
                  if line.strip() and json.loads(line)["verdict"] == "FAILED"]
    missing = [case for case in failed_ids if case not in text]
    check(not missing, f"every failing case is on the page (missing {missing[:3]})")
    check(text.count("repro") >= len(failed_ids), "a repro command per failing case")

    results = [json.loads(line) for line in open(os.path.join(report, "results.jsonl")) if line.strip()]
    page = rendered(browser, url, "", check)
    ops = sorted({r["op"] for r in results})
    check(len(ops) == 2, f"the run covers two operators: {ops}")
    check(sorted(page.ops) == ops, f"one summary row per operator: {sorted(page.ops)}")
    for op in ops:
        for verdict in counts:
            n = sum(1 for r in results if r["op"] == op and r["verdict"] == verdict)
            shown = page.ops.get(op, {}).get(verdict)
            check(shown == n, f"the summary gives {op} {verdict} {n} (gives {shown})")
    failing = [r["id"] for r in results if r["verdict"] != "PASSED"]
    check(page.failures == failing, f"the failures section lists the {len(failing)} failing cases in order "
          f"(lists {len(page.failures)}, first {page.failures[:2]})")
    check(len(page.links) == len(failing), f"a case-file link per failure ({len(page.links)})")
    # The error pictures: every failing output with a first dimension of 2 or more (results.jsonl
    # carries its axis_budget) draws one strip of cells along it; a red cell where the output is
    # beyond its allowance.
    pictured = sum(1 for r in results if r["verdict"] == "FAILED" for o in r.get("outputs", [])
                   if not o.get("passed", True) and "axis_budget" in o.get("metrics", {}))
    strips = re.findall(r"<svg class=\"axis\"[^>]*>(.*?)</svg>", dom, re.S)
    check(pictured >= 40, f"most failing outputs have an error picture to draw ({pictured})")
    check(len(strips) == pictured, f"an error picture per such output ({len(strips)} of {pictured})")
    check(all('fill="#c62828"' in s for s in strips), "each picture marks where the output is beyond its allowance")
    # Each picture has its colour legend and an axis named in the operator's terms, not "dim 0".
    labels = re.findall(r'<p class="axis-label"><small>[^<]*?: error along ([^(<]*) \(dim 0', dom)
    legends = re.findall(r'<svg class="axis".*?</svg><p class="legend">', dom, re.S)
    check(len(legends) == len(strips), f"a legend under every picture ({len(legends)} of {len(strips)})")
    check(len(labels) == len(strips) and all(l in ("expandedX row", "expert", "token row r") for l in labels),
          f"the pictures' axes are named in domain terms ({sorted(set(labels))})")
    for href in page.links:
        target = os.path.join(report, urllib.parse.unquote(href))
        check(not href.startswith("/") and os.path.isfile(target), f"the link {href} is relative and exists")
    check(len(page.rows) == len(results) and not any(r["hidden"] for r in page.rows),
          f"without a fragment every case is a visible row ({len(page.rows)} rows)")

    check_filter(browser, url, "#verdict=FAILED", [r["id"] for r in results if r["verdict"] == "FAILED"], check)
    check_filter(browser, url, "#op=ffn_worker_batching",
                 [r["id"] for r in results if r["op"] == "ffn_worker_batching"], check)
    check_filter(browser, url, "#op=moe_finalize_routing_v2_grad&verdict=PASSED",
                 [r["id"] for r in results if r["op"] == "moe_finalize_routing_v2_grad" and r["verdict"] == "PASSED"],
                 check)
    word = "bf16"  # case ids name their dtype; the text filter matches the whole row's text, any case
    check_filter(browser, url, "#text=" + word.upper(),
                 [r["id"] for r in page.rows if word in r["text"].lower()], check)

    check_first_screen(browser, report, results, "9f3c2e1", check)

    shot = os.path.join(work, "report.png")
    headless(browser, url, "--window-size=1400,900", "--screenshot=" + shot)
    check(os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"a PNG screenshot at {shot}")
    check(os.path.getsize(shot) > 20000 if os.path.exists(shot) else False, "the screenshot is not blank")

    for f in failures:
        print("FAIL:", f)
    print(f"browser: {len(failures)} failure(s); screenshot {shot}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
