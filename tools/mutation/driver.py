"""Running mutants for tools/mutate.py: a scratch copy of the tree, one build, and per mutant
apply -> rebuild one target -> run the check until its first failure -> revert.

Outcomes: killed (the check failed, crashed or timed out; `how` says which), survived (the check
passed), stillborn (the mutant does not compile; not counted in the score).
"""

import hashlib
import os
import re
import select
import shutil
import signal
import subprocess
import time

# What is not copied to the scratch tree: build output, VCS data, golden files (the mutation
# checks run against the reference, never against golden), and the run folders under reports/
# (its own files are the reports layer's sources, which the build needs).
EXCLUDE_TOP = {"build", ".git", "golden"}
FILES_ONLY_TOP = {"reports"}


def _prune(rel, dirs):
    """Limits os.walk to what sync_tree copies."""
    if rel == ".":
        dirs[:] = [d for d in dirs if d not in EXCLUDE_TOP]
    elif rel in FILES_ONLY_TOP:
        dirs[:] = []

# A failing verdict line of `opgate run` (printed under --quiet, flushed as each case ends).
_FAIL_LINE = re.compile(r"^\[\s*\d+/\d+\]\s+(FAILED|MISTRUSTED|BACKEND_ERROR|INVALID_CASE|TIMEOUT|CRASHED)\s+(\S+)")


def sync_tree(src, dst):
    """Makes dst a copy of src (minus EXCLUDE_TOP and the folders of FILES_ONLY_TOP), rewriting only files whose bytes differ, so
    the scratch build stays incremental and ccache sees unchanged files."""
    keep = set()
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        _prune(rel, dirs)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in files:
            s = os.path.join(root, name)
            d = os.path.normpath(os.path.join(dst, rel, name))
            keep.add(d)
            with open(s, "rb") as fh:
                data = fh.read()
            try:
                with open(d, "rb") as fh:
                    same = fh.read() == data
            except OSError:
                same = False
            if not same:
                with open(d, "wb") as fh:
                    fh.write(data)
                shutil.copymode(s, d)
    for root, dirs, files in os.walk(dst):
        rel = os.path.relpath(root, dst)
        _prune(rel, dirs)
        for name in files:
            d = os.path.normpath(os.path.join(root, name))
            if d not in keep:
                os.remove(d)


# Files that cannot change a mutant's outcome (documentation, CI scripts, this tool and its test).
_NOT_BUILT = re.compile(r"(\.md$|^\.ci/|^tools/mutate\.py$|^tools/mutation/|^tests/mutation/|^tools/\w+\.sh$|"
                        r"^CMakePresets\.json$)")


def tree_digest(src):
    """sha1 over the files sync_tree copies that the builds and checks read (path and bytes):
    equal digests, equal mutant outcomes."""
    h = hashlib.sha1()
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        _prune(rel, dirs)
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            relpath = os.path.normpath(os.path.join(rel, name))
            if _NOT_BUILT.search(relpath):
                continue
            h.update(relpath.encode() + b"\0")
            with open(path, "rb") as fh:
                h.update(hashlib.sha1(fh.read()).digest())
    return h.hexdigest()


def run_limited(argv, timeout, cwd=None, fail_line=None):
    """Runs argv in its own process group. With fail_line, stdout is read line by line and the
    group is killed at the first line matching it. Returns (status, detail, seconds) where
    status is 'ok', 'failed' (exit != 0 or a matching line), or 'timeout'."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0,
                            start_new_session=True)
    fd = proc.stdout.fileno()
    tail, pending = [], b""
    status, detail = None, ""
    try:
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                status = "timeout"
                break
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:  # stdout closed: the process is ending; wait for it within the limit
                try:
                    proc.wait(timeout=max(0.1, timeout - (time.monotonic() - t0)))
                except subprocess.TimeoutExpired:
                    status = "timeout"
                break
            pending += chunk
            *done, pending = pending.split(b"\n")
            for raw in done:
                line = raw.decode("utf-8", "replace")
                tail = (tail + [line])[-20:]
                m = fail_line.match(line) if fail_line else None
                if m:
                    status, detail = "failed", f"{m.group(1)} {m.group(2)}"
                    break
            if status:
                break
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        proc.stdout.close()
    if status is None:
        status = "ok" if proc.returncode == 0 else "failed"
        if status == "failed":
            sig = -proc.returncode if proc.returncode < 0 else 0
            detail = f"killed by signal {sig}" if sig else f"exit {proc.returncode}"
    return status, detail, time.monotonic() - t0, tail


class Target:
    """What a mutant of one source file is checked with: a build and a check command line."""

    def __init__(self, name, build_argv, check_argv, fail_line=None, cwd=None, error_exit=None):
        self.name, self.build_argv, self.check_argv, self.fail_line, self.cwd = name, build_argv, check_argv, fail_line, cwd
        # The check's exit code for "the check itself could not run" (opgate's 2: usage or harness
        # error): an error, never a kill (a refused --out once made every mutant "killed").
        self.error_exit = error_exit


def run_mutant(mutant, tree, target, check_timeout, build_timeout=900):
    """Applies `mutant` to the scratch tree, builds, checks, reverts. Returns a result dict."""
    path = os.path.join(tree, mutant.file)
    with open(path, encoding="utf-8") as fh:
        original_text = fh.read()
    lines = original_text.split("\n")
    if lines[mutant.line - 1] != mutant.original:
        return {"outcome": "error", "how": "source line differs from the mutant's original"}
    lines[mutant.line - 1] = mutant.mutated
    result = {}
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))
        st, detail, build_s, tail = run_limited(target.build_argv, build_timeout, cwd=target.cwd)
        result["build_s"] = round(build_s, 2)
        if st != "ok":
            result.update(outcome="stillborn", how="does not compile" if st == "failed" else "build timed out")
            result["build_log"] = [l for l in tail if "error" in l][:3]
            return result
        st, detail, check_s, tail = run_limited(target.check_argv, check_timeout, cwd=target.cwd,
                                                fail_line=target.fail_line)
        result["check_s"] = round(check_s, 2)
        if st == "ok":
            result.update(outcome="survived", how="check passed")
        elif target.error_exit is not None and detail == f"exit {target.error_exit}":
            result.update(outcome="error", how=f"the check could not run ({detail}): {' | '.join(tail[-2:])}")
        elif st == "timeout":
            result.update(outcome="killed", how=f"timeout after {check_timeout:.0f} s")
        else:
            result.update(outcome="killed", how=detail or "check failed")
        return result
    finally:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(original_text)


def opgate_target(op, tree, build_dir, report_dir, case_timeout):
    """The ci tier of one operator, stopped at the first failing case."""
    return Target(op,
                  ["cmake", "--build", build_dir, "-j1", "--target", "opgate"],
                  [os.path.join(build_dir, "opgate"), "run", "--op", op, "--tier", "ci", "--backend", "emu",
                   "--root", tree, "--out", report_dir, "--overwrite", "--quiet", "--strict", "--timeout",
                   str(case_timeout)],
                  fail_line=_FAIL_LINE, cwd=tree, error_exit=2)


def comparator_target(tree, build_dir, gtest_filter):
    """The comparator's unit tests, stopped at the first failing test."""
    return Target("comparator",
                  ["cmake", "--build", build_dir, "-j1", "--target", "core_tests"],
                  [os.path.join(build_dir, "tests", "core_tests"), f"--gtest_filter={gtest_filter}",
                   "--gtest_fail_fast", "--gtest_brief=1"],
                  cwd=tree)


def configure(tree, build_dir, log):
    """Configures the scratch build once: the release flags (so numerics equal the gate's and
    ccache hits the engineers' builds), tests on (core_tests), no fuzzers, no benchmarks."""
    if os.path.exists(os.path.join(build_dir, "build.ninja")):
        return True
    argv = ["cmake", "-S", tree, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
            "-DOPGATE_BUILD_TESTS=ON", "-DOPGATE_BUILD_FUZZERS=OFF", "-DOPGATE_BUILD_BENCH=OFF"]
    st, detail, _, tail = run_limited(argv, 600)
    if st != "ok":
        log("configure failed: " + " ".join(argv) + "\n" + "\n".join(tail))
        return False
    return True
