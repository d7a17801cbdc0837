#!/usr/bin/env python3
"""report.html of a run with failures, opened in headless Chromium (label `browser`).

Usage: report_browser_test.py <opgate binary> <source dir> <scratch dir>

A fault-backend run of one operator's ci tier gives a report with both PASSED and FAILED cases.
Chromium renders it offline (file://, networking off); the test then checks what a CI owner sees:
  - the page loads and logs nothing to the console (no script errors, no blocked resources);
  - the verdict counts on the page are the ones summary.txt and results.jsonl give;
  - every failing case is on the page with its repro command;
  - nothing is fetched from the network (the file is self-contained);
and saves a screenshot, report.png, in the scratch folder for people to look at.
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


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


def main():
    opgate, src, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    report = os.path.join(work, "report")
    run = subprocess.run([opgate, "run", "--root", src, "--op", "moe_finalize_routing_v2_grad", "--tier", "ci",
                          "--backend", "fault:mfrg.scale_not_applied", "-q", "--out", report],
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

    shot = os.path.join(work, "report.png")
    headless(browser, url, "--window-size=1400,1000", "--screenshot=" + shot)
    check(os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"a PNG screenshot at {shot}")
    check(os.path.getsize(shot) > 20000 if os.path.exists(shot) else False, "the screenshot is not blank")

    for f in failures:
        print("FAIL:", f)
    print(f"browser: {len(failures)} failure(s); screenshot {shot}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
