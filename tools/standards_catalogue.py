#!/usr/bin/env python3
"""Which fault-catalogue defects each gating standard catches (issue 25).

For every defect of `opgate list --defects`, runs its operator's ci tier on fault:<defect> once per
standard (`run --standard S --strict`) and prints a table: caught (exit 1), missed (exit 0), error
(anything else). The last lines are the totals per standard, which the closing notes quote.

Usage: tools/standards_catalogue.py [--opgate BIN] [--tier ci] [--jobs N] [--standards a,b,c]
"""
import argparse
import json
import subprocess
import sys
import tempfile

STANDARDS = ["bound", "ascend-v0.3", "ascend-dual-permille"]


def run_one(opgate, defect, standard, tier, jobs, out):
    """'caught (N)' with the number of failing cases, 'missed' or 'error RC'."""
    cmd = [opgate, "run", "--op", defect["op"], "--tier", tier, "--backend", defect["backend"],
           "--standard", standard, "--strict", "-q", "--out", out, "--overwrite", "-j", str(jobs)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode == 1:
        with open(f"{out}/summary.txt", encoding="utf-8") as f:  # its last line: cases:N passed:N failed:N ...
            last = f.read().splitlines()[-1]
        counts = dict(field.split(":", 1) for field in last.split() if ":" in field)
        return f"caught ({int(counts.get('failed', 0)) + int(counts.get('mistrusted', 0))})"
    return {0: "missed"}.get(done.returncode, f"error {done.returncode}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opgate", default="build/release/opgate")
    ap.add_argument("--tier", default="ci")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--standards", default=",".join(STANDARDS))
    a = ap.parse_args()
    standards = a.standards.split(",")
    listing = subprocess.run([a.opgate, "list", "--defects", "--json"], check=True, capture_output=True, text=True)
    defects = json.loads(listing.stdout)["defects"]
    totals = {s: 0 for s in standards}
    print("| defect | " + " | ".join(standards) + " |")
    print("|---|" + "---|" * len(standards))
    with tempfile.TemporaryDirectory() as tmp:
        for d in defects:
            row = [run_one(a.opgate, d, s, a.tier, a.jobs, f"{tmp}/r") for s in standards]
            for s, v in zip(standards, row):
                totals[s] += v.startswith("caught")
            print(f"| {d['name']} | " + " | ".join(row) + " |", flush=True)
    for s in standards:
        print(f"{s}: {totals[s]} of {len(defects)} caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
