#!/usr/bin/env python3
"""Mutation score of opgate's gate: how many one-line defects in an emulator (or the comparator)
the operator's ci tier (or the comparator's unit tests) catches.

Usage:
  tools/mutate.py --op <stem> [--op <stem> ...]   mutants of device/emu/<stem>.cpp, checked by
                                                   `opgate run --op <stem> --tier ci --strict`
  tools/mutate.py --comparator                     mutants of core/compare.cpp and core/error_balance.cpp,
                                                   checked by core_tests
                                                   (--comparator-filter, default below)
  tools/mutate.py --all                            every operator with cases/<stem>/ci.json, and
                                                   the comparator
Options:
  --tree DIR      the source tree (default: the tree holding this script); never modified
  --max N         at most N mutants per target, sampled deterministically with --seed (default all)
  --seed S        sampling seed (default 1)
  --operator OP   only these operators (repeatable): ror loop_bound rounding precision index_swap
                  arith skip_stmt negate
  --id ID         only these mutant ids (repeatable), e.g. to re-check survivors
  --list          print the mutants (id, file:line, operator, original -> mutated) and exit
  --jobs N        mutants built and checked in parallel, each worker in its own scratch tree (default 1)
  --equivalents F survivors judged equivalent (default tests/mutation/equivalent_mutants.txt of
                  the tree): "<id> <file>:<line> <reason>" per line; excluded from the score
  --report F      JSON report (default <scratch>/report.json), rewritten after every mutant
  --scratch DIR   scratch folder (default /work/.mutate/<tree name>, or <tree>/build/mutation when
                  /work is not writable)
  --min-score P   exit 1 when a target's score is below P percent (the nightly job's gate)
  --reuse REPORT  take the results of mutants already judged in REPORT instead of running them
                  again, when REPORT was made from identical sources (e.g. to grow a --max sample)
  --show REPORT   print the scores and survivors of an earlier JSON report again (with the
                  current equivalents file), without running anything

How a mutant is judged: the tree is copied to the scratch folder (without build/, reports/,
golden/), configured there once (Release flags, so ccache reuses the engineers' objects), and for
each mutant the one changed line is written, only `opgate` (or `core_tests`) is rebuilt, the
check runs until its first failing case (then it is killed), and the line is restored.
  killed     a case FAILED / MISTRUSTED / CRASHED / TIMEOUT / ..., the tests failed, or the check
             ran over its limit (10 x the unmutated check's time, at least 20 s)
  survived   the check passed: the gate cannot see this defect
  equivalent a survivor listed in the equivalents file (with the reason it cannot be observed)
  stillborn  the mutant does not compile (not counted)
score = killed / (killed + survived); equivalents are left out of the denominator.
Mutant ids hash the file, operator, original and mutated line text (not the line number), so they
survive edits elsewhere in the file.
Exit: 0 done, 1 a score below --min-score, 2 usage error or the unmutated check fails.
"""

import argparse
import json
import os
import random
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutation import driver, mutants  # noqa: E402

DEFAULT_COMPARATOR_FILTER = "Compare*.*:*Vacuity*.*:*Verdict*.*:*ExitCode*.*:ErrorBalance*.*:NonFinite*.*:*/NonFinite.*"
COMPARATOR_FILE = "core/compare.cpp"
# The comparator's sources, each its own target, all checked by the comparator's unit tests.
COMPARATOR_TARGETS = {"comparator": COMPARATOR_FILE, "error_balance": "core/error_balance.cpp"}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="tools/mutate.py (--op STEM | --comparator | --all) [options]")
    ap.add_argument("--op", action="append", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--comparator", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--all", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help=argparse.SUPPRESS)
    ap.add_argument("--max", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--operator", action="append", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--id", action="append", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--list", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--equivalents", help=argparse.SUPPRESS)
    ap.add_argument("--report", help=argparse.SUPPRESS)
    ap.add_argument("--scratch", help=argparse.SUPPRESS)
    ap.add_argument("--min-score", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--show", help=argparse.SUPPRESS)
    ap.add_argument("--reuse", help=argparse.SUPPRESS)
    ap.add_argument("--comparator-filter", default=DEFAULT_COMPARATOR_FILTER, help=argparse.SUPPRESS)
    ap.add_argument("--timeout-factor", type=float, default=10.0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if not (a.op or a.comparator or a.all or a.show):
        ap.error("choose what to mutate: --op STEM, --comparator or --all (or --show REPORT)")
    bad = [o for o in a.operator if o not in mutants.OPERATORS]
    if bad:
        ap.error(f"unknown --operator {', '.join(bad)}; known: {' '.join(mutants.OPERATORS)}")
    if a.max < 0 or a.jobs < 1:
        ap.error("--max must be >= 0 and --jobs >= 1")
    a.tree = os.path.abspath(a.tree)
    return a


def known_ops(tree):
    cases = os.path.join(tree, "cases")
    return sorted(d for d in os.listdir(cases)
                  if os.path.isfile(os.path.join(cases, d, "ci.json"))
                  and os.path.isfile(os.path.join(tree, "device", "emu", d + ".cpp")))


def read_equivalents(path):
    """id -> reason. A line without a reason is an error: every equivalent needs its argument."""
    out = {}
    if not path or not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                raise SystemExit(f"{path}:{n}: expected '<id> <file>:<line> <reason>', got '{line}'")
            out[parts[0]] = f"{parts[1]} {parts[2]}"
    return out


def sample(ms, n, seed, key):
    """n mutants of a seeded shuffle (by id); a larger n keeps every mutant a smaller n picked."""
    if n <= 0 or len(ms) <= n:
        return ms
    order = sorted(ms, key=lambda m: m.id)
    random.Random(f"{seed}:{key}").shuffle(order)
    picked = set(m.id for m in order[:n])
    return [m for m in ms if m.id in picked]


def default_scratch(tree):
    if os.path.isdir("/work") and os.access("/work", os.W_OK):
        return os.path.join("/work/.mutate", os.path.basename(tree.rstrip("/")) or "tree")
    return os.path.join(tree, "build", "mutation")


def fmt_pct(k, s):
    return "n/a" if k + s == 0 else f"{100.0 * k / (k + s):.1f}%"


def summarise(name, results, equivalents):
    counts = {"killed": 0, "survived": 0, "equivalent": 0, "stillborn": 0, "error": 0, "killed_by_timeout": 0,
              "killed_by_crash": 0}
    for r in results:
        o = r["outcome"]
        if o == "survived" and r["id"] in equivalents:
            r["outcome"] = o = "equivalent"
            r["reason"] = equivalents[r["id"]]
        counts[o] = counts.get(o, 0) + 1
        if o == "killed" and r["how"].startswith("timeout"):
            counts["killed_by_timeout"] += 1
        if o == "killed" and ("signal" in r["how"] or "CRASHED" in r["how"]):
            counts["killed_by_crash"] += 1
    k, s = counts["killed"], counts["survived"]
    counts["score"] = None if k + s == 0 else round(100.0 * k / (k + s), 2)
    return counts


def print_target(name, counts, results, elapsed):
    print(f"{name}: score {fmt_pct(counts['killed'], counts['survived'])} = {counts['killed']} killed / "
          f"({counts['killed']} + {counts['survived']} survived); {counts['equivalent']} equivalent, "
          f"{counts['stillborn']} stillborn, {counts['error']} error; {len(results)} mutants run, "
          f"{counts['killed_by_timeout']} killed by timeout, {counts['killed_by_crash']} by a crash; {elapsed:.0f} s")
    for r in sorted(results, key=lambda r: (r["file"], r["line"])):
        if r["outcome"] in ("survived", "error", "equivalent"):
            tag = r["outcome"].upper()
            print(f"  {tag} {r['id']} {r['file']}:{r['line']} {r['operator']}: "
                  f"`{r['original'].strip()}` -> `{r['mutated'].strip()}`")
            if r["outcome"] == "equivalent":
                print(f"      because: {r['reason'].split(' ', 1)[-1]}")


def show(a):
    with open(a.show, encoding="utf-8") as fh:
        report = json.load(fh)
    equivalents = read_equivalents(a.equivalents or os.path.join(a.tree, "tests", "mutation",
                                                                   "equivalent_mutants.txt"))
    code = 0
    for name, entry in report["targets"].items():
        for r in entry["results"]:  # judged again with the current equivalents file
            if r["outcome"] == "equivalent":
                r["outcome"] = "survived"
        counts = summarise(name, entry["results"], equivalents)
        print_target(name, counts, entry["results"], entry.get("elapsed_s", 0))
        print(f"  ({entry['mutants_run']} of {entry['mutants_total']} mutants of {entry['file']}; unmutated check "
              f"{entry['baseline_check_s']} s)")
        if a.min_score is not None and counts["score"] is not None and counts["score"] < a.min_score:
            code = 1
    print(f"report {a.show}: started {report.get('started_utc', '?')}, elapsed {report.get('elapsed_s', 0):.0f} s")
    return code


def main(argv):
    a = parse_args(argv)
    if a.show:
        return show(a)
    t_start = time.monotonic()
    ops = known_ops(a.tree) if a.all else []
    for op in a.op:
        if not os.path.isfile(os.path.join(a.tree, "device", "emu", op + ".cpp")):
            print(f"mutate: unknown operator '{op}': no device/emu/{op}.cpp in {a.tree} "
                  f"(known: {', '.join(known_ops(a.tree))})", file=sys.stderr)
            return 2
        if op not in ops:
            ops.append(op)
    targets = [(op, f"device/emu/{op}.cpp") for op in ops]
    if a.comparator or a.all:
        targets.extend(COMPARATOR_TARGETS.items())
    operators = tuple(a.operator) or mutants.OPERATORS
    equivalents = read_equivalents(a.equivalents or os.path.join(a.tree, "tests", "mutation",
                                                                   "equivalent_mutants.txt"))
    plan = []
    generated_ids = set()
    for name, rel in targets:
        with open(os.path.join(a.tree, rel), encoding="utf-8") as fh:
            ms = mutants.generate(fh.read(), rel, operators)
        generated_ids.update(m.id for m in ms)
        total = len(ms)
        if a.id:
            ms = [m for m in ms if m.id in a.id]
        ms = sample(ms, a.max, a.seed, name)
        plan.append((name, rel, ms, total))
    # An equivalents row whose mutant no longer exists (its line changed) is stale: say so.
    files = {rel for _, rel, _, _ in plan}
    stale = [i for i, why in equivalents.items() if why.split(":")[0] in files and i not in generated_ids]
    if stale and len(operators) == len(mutants.OPERATORS):
        print(f"mutate: {len(stale)} equivalents row(s) match no mutant of this tree any more (remove them): "
              f"{' '.join(sorted(stale))}", file=sys.stderr)
    if a.list:
        for name, rel, ms, total in plan:
            print(f"# {name}: {len(ms)} of {total} mutants of {rel}")
            for m in ms:
                print(f"{m.id} {m.file}:{m.line} {m.operator}: `{m.original.strip()}` -> `{m.mutated.strip()}`")
        return 0

    scratch = os.path.abspath(a.scratch or default_scratch(a.tree))
    report_path = a.report or os.path.join(scratch, "report.json")
    os.makedirs(scratch, exist_ok=True)
    log = lambda msg: print(f"[mutate {time.monotonic() - t_start:7.0f}s] {msg}", flush=True)  # noqa: E731

    # Worker trees: each a full copy with its own build (build/release, the same relative layout
    # as the engineers' trees, so ccache hits).
    workers = []
    need_tests = any(name in COMPARATOR_TARGETS for name, *_ in plan)
    for w in range(a.jobs):
        tree = os.path.join(scratch, f"w{w}", "src")
        log(f"syncing {a.tree} -> {tree}")
        driver.sync_tree(a.tree, tree)
        build = os.path.join(tree, "build", "release")
        if not driver.configure(tree, build, log):
            return 2
        tgts = ["opgate"] + (["core_tests"] if need_tests else [])
        st, detail, secs, tail = driver.run_limited(["cmake", "--build", build, "-j2", "--target", *tgts], 7200)
        if st != "ok":
            print("mutate: the unmutated scratch build fails:\n" + "\n".join(tail), file=sys.stderr)
            return 2
        log(f"worker {w}: built {' '.join(tgts)} in {secs:.0f} s")
        workers.append((tree, build))

    digest = driver.tree_digest(a.tree)
    reuse = {}
    if a.reuse:
        with open(a.reuse, encoding="utf-8") as fh:
            old = json.load(fh)
        if old.get("tree_digest") != digest:
            log(f"--reuse {a.reuse}: made from other sources; every mutant runs again")
        else:
            for name, entry in old["targets"].items():
                reuse[name] = {r["id"]: r for r in entry["results"]}
    report = {"tree": a.tree, "tree_digest": digest, "scratch": scratch, "seed": a.seed, "max": a.max, "operators": list(operators),
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "targets": {}}
    lock = threading.Lock()

    def write_report():
        tmp = report_path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(report, fh, indent=1)
        os.replace(tmp, report_path)

    exit_code = 0
    for name, rel, ms, total in plan:
        t0 = time.monotonic()

        def make_target(tree, build, w):
            if name in COMPARATOR_TARGETS:
                return driver.comparator_target(tree, build, a.comparator_filter)
            return driver.opgate_target(name, tree, build, os.path.join(scratch, f"w{w}", "report"), 600)

        # The unmutated check must pass; its time sets the per-mutant limit. Rebuild first: the
        # previous target's last mutant is reverted in the source but still in the binaries.
        tree0, build0 = workers[0]
        st, detail, _, tail = driver.run_limited(make_target(tree0, build0, 0).build_argv, 7200, cwd=tree0)
        if st != "ok":
            print(f"mutate: {name}: the unmutated build fails ({detail}):\n" + "\n".join(tail), file=sys.stderr)
            return 2
        st, detail, base_s, tail = driver.run_limited(make_target(tree0, build0, 0).check_argv, 3600, cwd=tree0,
                                                      fail_line=make_target(tree0, build0, 0).fail_line)
        if st != "ok":
            print(f"mutate: {name}: the unmutated check fails ({detail}); fix that first:\n" + "\n".join(tail),
                  file=sys.stderr)
            return 2
        limit = max(20.0, a.timeout_factor * base_s)
        log(f"{name}: {len(ms)} of {total} mutants; unmutated check {base_s:.1f} s, per-mutant limit {limit:.0f} s")
        entry = {"file": rel, "mutants_total": total, "mutants_run": len(ms), "baseline_check_s": round(base_s, 2),
                 "limit_s": round(limit, 1), "results": []}
        report["targets"][name] = entry
        queue = []
        for m in ms:
            r = reuse.get(name, {}).get(m.id)
            if r is not None:
                entry["results"].append(dict(r, outcome="survived" if r["outcome"] == "equivalent" else r["outcome"],
                                             reused=True))
            else:
                queue.append(m)
        if len(queue) < len(ms):
            log(f"{name}: {len(ms) - len(queue)} results reused from {a.reuse}")

        def work(w):
            tree, build = workers[w]
            target = make_target(tree, build, w)
            while True:
                with lock:
                    if not queue:
                        return
                    m = queue.pop(0)
                r = driver.run_mutant(m, tree, target, limit)
                rec = dict(m.as_dict(), **r)
                with lock:
                    entry["results"].append(rec)
                    done = len(entry["results"])
                    log(f"{name} {done}/{len(ms)} {m.id} {m.file}:{m.line} {m.operator}: {r['outcome']} ({r.get('how', '')})")
                    entry["counts"] = summarise(name, entry["results"], equivalents)
                    write_report()

        threads = [threading.Thread(target=work, args=(w,)) for w in range(len(workers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        entry["elapsed_s"] = round(elapsed, 1)
        entry["counts"] = summarise(name, entry["results"], equivalents)
        write_report()
        print_target(name, entry["counts"], entry["results"], elapsed)
        score = entry["counts"]["score"]
        if a.min_score is not None and score is not None and score < a.min_score:
            exit_code = 1

    report["elapsed_s"] = round(time.monotonic() - t_start, 1)
    write_report()
    print(f"elapsed {report['elapsed_s']:.0f} s; report: {report_path}")
    return exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
