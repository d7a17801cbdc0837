#!/usr/bin/env python3
"""Replays hostile inputs through every opgate entry point (ctest label `robustness`).

Usage: robustness_test.py <opgate> <source dir> <scratch dir>

Each input must end as the README promises: exit 2 with exactly one stderr line naming the file
(or, for `golden verify` on a corrupted folder, exit 1 naming the folder), nothing written, and a
peak resident set under 1 GB (measured per command with wait4, which includes a run's case
children). Small inputs are checked in under corpus/; large ones (deep nesting, /dev/zero, a
200 MB case file, a document just under the 8 MiB JSON limit) are made here in the scratch dir.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

OPGATE, SRC, WORK = os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.realpath(__file__))
CORPUS = os.path.join(HERE, "corpus")
MEMORY_LIMIT_KB = 1 << 20  # 1 GB

failures = []
passes = 0
commands = 0
peak = (0, "")  # (kB, what)
GOOD_CASE = {"id": "mfrg.robust.f32.001", "params": {"dtype": "float32", "R": 4, "H": 16, "expertNum": 2},
             "seed": 1, "fill": "exact"}


def opgate(args, cwd=None):
    """Runs opgate; returns (exit code, stdout, stderr, peak RSS in kB)."""
    out_path, err_path = os.path.join(WORK, ".stdout"), os.path.join(WORK, ".stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([OPGATE] + args, stdout=out, stderr=err, cwd=cwd or WORK)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, "rb") as f:
        stdout = f.read().decode("utf-8", "replace")
    with open(err_path, "rb") as f:
        stderr = f.read().decode("utf-8", "replace")
    return proc.returncode, stdout, stderr, usage.ru_maxrss


def check(what, ok, detail=""):
    global passes
    if ok:
        passes += 1
    else:
        failures.append(f"{what}: {detail}")
        print(f"FAIL: {what}: {detail}")


def expect(what, args, code, pattern=None, names=None, stream="stderr", cwd=None):
    """One command: exit code, one stderr line (for exit 2), the line names `names` and matches pattern."""
    global peak, commands
    commands += 1
    rc, out, err, rss = opgate(args, cwd)
    if rss > peak[0]:
        peak = (rss, what)
    text = err if stream == "stderr" else out
    detail = f"exit {rc} (want {code}), {rss // 1024} MB, stderr: {err[:300]!r}"
    check(f"{what}: exit code", rc == code, detail)
    if code == 2:
        check(f"{what}: one stderr line", err.count("\n") == 1 and err.endswith("\n"), detail)
    if names:
        check(f"{what}: names {names}", names in text, detail)
    if pattern:
        check(f"{what}: matches /{pattern}/", re.search(pattern, text) is not None, detail)
    check(f"{what}: peak memory under 1 GB", rss < MEMORY_LIMIT_KB, detail)
    return rc, out, err


def tree_digest(path):
    """Digest of every file name and content under path ("absent" if missing)."""
    if not os.path.exists(path):
        return "absent"
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            if name == "run.lock":  # the report folder's lock (core/report_folder.cpp): taken, not data
                continue
            p = os.path.join(root, name)
            h.update(p.encode())
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)
    return path


def case_file(cases, op="moe_finalize_routing_v2_grad"):
    return json.dumps({"op": op, "cases": cases}) + "\n"


def case_entry_points(path, pattern, label):
    """A hostile case file through run, repro, golden regen and golden verify."""
    name = os.path.basename(path)
    out = os.path.join(WORK, "never_written")
    expect(f"run --cases {label}", ["run", "--cases", path, "--out", out, "--no-isolate"], 2, pattern, name)
    check(f"run --cases {label}: nothing written", not os.path.exists(out))
    shutil.rmtree(out, ignore_errors=True)
    expect(f"repro {label}", ["repro", path], 2, pattern, name, cwd=EMPTY)
    check(f"repro {label}: nothing written", os.listdir(EMPTY) == [])
    expect(f"golden regen {label}", ["golden", "regen", "--cases", path, "--out", out], 2, pattern, name)
    check(f"golden regen {label}: nothing written", not os.path.exists(out))
    shutil.rmtree(out, ignore_errors=True)
    expect(f"golden verify {label}", ["golden", "verify", "--cases", path, "--out", GOLDEN], 2, pattern, name)


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
EMPTY = os.path.join(WORK, "empty_cwd")
os.makedirs(EMPTY)

# A known-good golden folder and report to corrupt below.
GOOD = write(os.path.join(WORK, "good.json"), case_file([GOOD_CASE]))
GOLDEN = os.path.join(WORK, "golden")
rc, _, err, _ = opgate(["golden", "regen", "--cases", GOOD, "--out", GOLDEN])
check("setup: golden regen of a good case", rc == 0, err)
REPORT = os.path.join(WORK, "report")
rc, _, err, _ = opgate(["run", "--cases", GOOD, "--out", REPORT])
check("setup: run of a good case", rc == 0, err)
GOLDEN_DIR = os.path.join(GOLDEN, "moe_finalize_routing_v2_grad", GOOD_CASE["id"])

# 1. The checked-in corpus of hostile case files.
corpus_count = 0
with open(os.path.join(CORPUS, "cases.tsv")) as f:
    for line in f:
        if line.startswith("#") or not line.strip():
            continue
        name, pattern = line.rstrip("\n").split("\t")
        corpus_count += 1
        case_entry_points(os.path.join(CORPUS, "cases", name), pattern, name)
listed = corpus_count
check("every corpus file is listed in cases.tsv", listed == len(os.listdir(os.path.join(CORPUS, "cases"))),
      f"{listed} listed, {len(os.listdir(os.path.join(CORPUS, 'cases')))} files")

# 2. Large inputs, made here.
BIG = os.path.join(WORK, "big")
os.makedirs(BIG)
deep = write(os.path.join(BIG, "deep_100k.json"),
             '{"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.deep.f32", "params": {"R": '
             + "[" * 100000 + "]" * 100000 + "}}]}\n")
case_entry_points(deep, "nested deeper than 64 levels", "deep nesting 100000 levels")
case_entry_points("/dev/zero", "over the 8 MiB case file size limit", "/dev/zero")
# 200 MB of real cases, with a type error in the last: rejected by its size, never parsed.
big = os.path.join(BIG, "cases_200mb.json")
with open(big, "w") as f:
    f.write('{"op": "moe_finalize_routing_v2_grad", "cases": [\n')
    one = json.dumps(GOOD_CASE)
    chunk = "".join(one.replace("mfrg.robust.f32.001", f"mfrg.robust.f32.{n}") + ",\n" for n in range(8000))
    for block in range((200 << 20) // len(chunk) + 1):  # distinct ids in every block
        f.write(chunk.replace("mfrg.robust.f32.", f"mfrg.robust{block}.f32."))
    f.write(json.dumps(dict(GOOD_CASE, id="mfrg.last.f32", seed="one")) + "]}\n")
case_entry_points(big, "over the 8 MiB case file size limit", "200 MB case file")
os.remove(big)
# Just under the JSON size limit, the most memory per byte nlohmann can be made to spend (an empty
# array per 3 bytes): parsed whole, then rejected for the param's type. The worst accepted parse.
limit = 8 << 20
head = '{"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.wide.f32", "params": {"R": ['
tail = "[]]}}]}\n"
count = (limit - len(head) - len(tail)) // 3
wide = write(os.path.join(BIG, "wide_8mib.json"), head + "[]," * count + tail)
case_entry_points(wide, "mfrg.wide.f32", "8 MiB of empty arrays")
os.remove(wide)

# 3. Golden regen: every case checked before any folder is written; empty selections said.
regen_out = os.path.join(WORK, "regen_out")
second_bad = write(os.path.join(BIG, "second_bad.json"),
                   case_file([GOOD_CASE, dict(GOOD_CASE, id="mfrg.bad.f32", params={"R": 4, "dtype": "int32"})]))
expect("regen: second case invalid", ["golden", "regen", "--cases", second_bad, "--out", regen_out], 2,
       r"cases\[1\]: case 'mfrg.bad.f32'", "second_bad.json")
check("regen: second case invalid: no folder written", not os.path.exists(regen_out))
expect_only = write(os.path.join(BIG, "expect_only.json"),
                    case_file([dict(GOOD_CASE, id="mfrg.reject.f32", params={"R": 4, "dtype": "int32"},
                                    expect=161002)]))
expect("regen: only expect cases", ["golden", "regen", "--cases", expect_only, "--out", regen_out], 2,
       "nothing to regenerate")
expect("regen: empty selection", ["golden", "regen", "--cases", GOOD, "--filter", "^nothing$", "--out", regen_out],
       2, "holds no case")
check("regen: empty selections write nothing", not os.path.exists(regen_out))

# 4. Golden verify on corrupted folders: exit 1, the folder and the cause named on stdout.
def corrupted_golden(label, mutate, pattern):
    root = os.path.join(WORK, "golden_" + label.replace(" ", "_"))
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(GOLDEN, root)
    folder = os.path.join(root, "moe_finalize_routing_v2_grad", GOOD_CASE["id"])
    mutate(folder)
    expect(f"golden verify: {label}", ["golden", "verify", "--cases", GOOD, "--out", root], 1, pattern,
           stream="stdout")
    return root


def replace_file(rel, text, mode="w"):
    return lambda folder: write(os.path.join(folder, rel), text, mode)


corrupted_golden("case.json deep", replace_file("case.json", "[" * 100000 + "]" * 100000),
                 "case.json: .*nested deeper than 64")
corrupted_golden("case.json duplicate key",
                 replace_file("case.json", json.dumps(GOOD_CASE)[:-1] + ', "seed": 2}'), "duplicate key 'seed'")
corrupted_golden("manifest.json BOM", lambda d: write(os.path.join(d, "manifest.json"),
                 "\ufeff" + open(os.path.join(d, "manifest.json")).read()), "manifest.json: .*byte-order mark")
corrupted_golden("manifest.json deep", replace_file("manifest.json", "{\"a\":" * 100000 + "1" + "}" * 100000),
                 "manifest.json: .*nested deeper than 64")
huge_case = dict(GOOD_CASE, op="moe_finalize_routing_v2_grad",
                 params={"dtype": "float32", "R": 1 << 20, "K": 64, "H": 1 << 16, "scales": True,
                         "expertNum": 2})
corrupted_golden("case.json huge params", replace_file("case.json", json.dumps(huge_case)),
                 "over --max-case-bytes")
corrupted_golden("case.json is 200 MB", lambda d: os.truncate(os.path.join(d, "case.json"), 200 << 20),
                 "case.json: .*over the 8 MiB JSON size limit")
corrupted_golden("npy is /dev/zero", lambda d: (os.remove(os.path.join(d, "inputs", "gradY.npy")),
                 os.symlink("/dev/zero", os.path.join(d, "inputs", "gradY.npy"))), "gradY.npy")
corrupted_golden("stray file", replace_file("notes.txt", "hello"), "stray file")
corrupted_golden("temporary file", replace_file("inputs/gradY.npy.tmp.99999999.0", "x"), "temporary file")
root = corrupted_golden("missing folder", lambda d: shutil.rmtree(d), "MISSING .*no golden folder")
root = corrupted_golden("interrupted swap",
                        lambda d: os.rename(d, os.path.join(os.path.dirname(d), "." + GOOD_CASE["id"] + ".old.99999999")),
                        "INTERRUPTED .*old.99999999")
expect("regen recovers an interrupted swap", ["golden", "regen", "--cases", GOOD, "--out", root], 0,
       "recovered .*" + GOOD_CASE["id"], stream="stdout")
expect("verify after the recovery", ["golden", "verify", "--cases", GOOD, "--out", root], 0, stream="stdout")

# 5. Reports: merge, baseline and --resume on corrupt results.jsonl / run.json.
with open(os.path.join(REPORT, "results.jsonl")) as f:
    good_line = f.readline()
bad_documents = {
    "deep": "[" * 100000 + "]" * 100000,
    "duplicate key": good_line.rstrip("\n")[:-1] + ', "id": "x"}',
    "BOM": "\ufeff" + good_line.rstrip("\n"),
    "garbage": "not json at all",
}


def corrupt_report(label, results=None, run_json=None, truncate_results=None):
    d = os.path.join(WORK, "report_" + label.replace(" ", "_").replace(".", "_"))
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(REPORT, d)
    if results is not None:
        write(os.path.join(d, "results.jsonl"), results)
    if run_json is not None:
        write(os.path.join(d, "run.json"), run_json)
    if truncate_results is not None:
        os.truncate(os.path.join(d, "results.jsonl"), truncate_results)
    return d


reports = []
for label, doc in bad_documents.items():
    # A bad line followed by a good one: corruption, not a line cut short by a crash.
    reports.append((f"results.jsonl {label}", corrupt_report("r_" + label, results=doc + "\n" + good_line), "results.jsonl"))
    reports.append((f"run.json {label}", corrupt_report("j_" + label, run_json=doc + "\n"), "run.json"))
reports.append(("results.jsonl 300 MB", corrupt_report("r_huge", truncate_results=300 << 20), "results.jsonl"))
# Under the file's size limit, every line under the document limit, but far more values than the
# file may hold: 12 lines of 8 MB of empty arrays (each line alone is accepted).
spam = '{"id": "x", "verdict": "PASSED", "outputs": [' + "[]," * ((8 << 20) // 3 - 40) + '[]]}\n'
reports.append(("results.jsonl of 96 MB of values", corrupt_report("r_values", results=good_line + spam * 12),
                "results.jsonl limit"))
reports.append(("run.json 200 MB", corrupt_report("j_huge", run_json=""), "run.json"))
os.truncate(os.path.join(reports[-1][1], "run.json"), 200 << 20)
# A case count that is no count would skip the "unfinished" check (issue 23).
with open(os.path.join(REPORT, "run.json")) as f:
    good_run = json.load(f)
for count in ("six", -1):
    reports.append((f"run.json cases {count}", corrupt_report(f"j_cases_{count}", run_json=json.dumps(
        dict(good_run, cases=count)) + "\n"), "run.json: field 'cases'"))
for label, d, names in reports:
    before = tree_digest(d)
    merged = os.path.join(WORK, "merged")
    expect(f"merge: {label}", ["merge", d, "--out", merged], 2, None, names)
    check(f"merge: {label}: nothing written", not os.path.exists(merged))
    accepted = os.path.join(WORK, "accepted")
    expect(f"baseline accept: {label}", ["baseline", "accept", d, "--to", accepted], 2, None, names)
    check(f"baseline accept: {label}: nothing written", not os.path.exists(accepted))
    if label.startswith("results.jsonl"):
        expect(f"baseline diff: {label}", ["baseline", "diff", d, REPORT], 2, None, names)
    expect(f"run --resume: {label}", ["run", "--cases", GOOD, "--resume", "--out", d], 2, None, names)
    check(f"{label}: report folder unchanged", tree_digest(d) == before)
    shutil.rmtree(d)

# 6. Ids read back name files (issue 23): a hostile id in results.jsonl is refused by the case-id
# rule before anything is written; merge and --last-failed read failed/<id>.json only as the plain
# file a run wrote (a link is not followed, a FIFO does not hang them).
ELSEWHERE = os.path.join(WORK, "elsewhere")
os.makedirs(ELSEWHERE)
VICTIM = write(os.path.join(ELSEWHERE, "victim.json"), "keep\n")


def failing_line(case_id):
    return json.dumps(dict(json.loads(good_line), id=case_id, verdict="FAILED")) + "\n"


# As many ".." as <merged>/failed is deep: the old merge's temporary file ".<id>.json.tmp" then
# climbed from failed/ to / and the rename replaced the victim.
ups = "/.." * len(os.path.join(WORK, "merged", "failed").strip("/").split("/"))
hostile_ids = {"escaping": ups + ELSEWHERE + "/victim", "x/y": "x/y", "NUL": "a\u0000b"}
for label, case_id in hostile_ids.items():
    write(VICTIM, "keep\n")
    d = corrupt_report("id_" + label.replace("/", "_"), results=failing_line(case_id))
    before = tree_digest(d)
    for what, args in (("merge", ["merge", d, "--out", os.path.join(WORK, "merged")]),
                       ("run --last-failed", ["run", "--last-failed", d, "--out", os.path.join(WORK, "merged")]),
                       ("run --resume", ["run", "--cases", GOOD, "--resume", "--out", d])):
        expect(f"{what}: id {label}", args, 2, r"results.jsonl: line 1: case id .*ids name files", "results.jsonl")
        check(f"{what}: id {label}: nothing written", not os.path.exists(os.path.join(WORK, "merged")))
        check(f"{what}: id {label}: the report is unchanged", tree_digest(d) == before)
    check(f"id {label}: the file outside is untouched", open(VICTIM).read() == "keep\n")
    shutil.rmtree(d)

OUTSIDE = write(os.path.join(ELSEWHERE, "outside.json"), case_file([GOOD_CASE]))
for label, make in (("a symbolic link", lambda p: os.symlink(OUTSIDE, p)), ("a FIFO", os.mkfifo)):
    d = corrupt_report("failed_" + label.split()[-1], results=failing_line(GOOD_CASE["id"]))
    failed = os.path.join(d, "failed", GOOD_CASE["id"] + ".json")
    make(failed)
    pattern = "symbolic link" if "link" in label else "not a regular file"
    merged = os.path.join(WORK, "merged")
    for what, args in (("merge", ["merge", d, "--out", merged]), ("run --last-failed", ["run", "--last-failed", d, "--out", merged])):
        # The old merge blocked forever on the FIFO: a hang guard, not a time limit on the command.
        try:
            subprocess.run([OPGATE] + args, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        except subprocess.TimeoutExpired:
            check(f"{what}: failed/<id>.json is {label}: returns", False, "still running after 120 s")
            continue
        expect(f"{what}: failed/<id>.json is {label}", args, 2, pattern, "failed/" + GOOD_CASE["id"] + ".json")
        check(f"{what}: failed/<id>.json is {label}: nothing written", not os.path.exists(merged))
        shutil.rmtree(merged, ignore_errors=True)
    os.remove(failed)
    shutil.rmtree(d)

# 7. A reason holding ESC sequences (or NUL) reaches summary.txt without them: people cat it.
d = corrupt_report("esc_reason", results=json.dumps(dict(json.loads(good_line), verdict="FAILED",
                                                         reason="bad\x1b[2J\x1b]0;owned\x07 \x00reason")) + "\n")
merged = os.path.join(WORK, "merged_esc")
expect("merge: a reason with ESC sequences", ["merge", d, "--out", merged], 1)
with open(os.path.join(merged, "summary.txt"), "rb") as f:
    summary = f.read()
check("summary.txt holds no control bytes", not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", summary), repr(summary[:400]))
check("summary.txt keeps the reason's text", b"bad[2J]0;owned reason" in summary, repr(summary[:400]))
shutil.rmtree(d)
shutil.rmtree(merged)

print(f"robustness: {commands} commands, {passes} checks passed, {len(failures)} failed; corpus: {corpus_count} checked-in case files "
      f"plus generated inputs; peak memory {peak[0] // 1024} MB ({peak[1]})")
sys.exit(1 if failures else 0)
