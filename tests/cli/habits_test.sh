#!/usr/bin/env bash
# What users of other test tools reach for: `opgate` alone prints the help; tools/gate.sh --help and
# tools/test.sh --help print their usage without building; `list --json` holds what the text
# listing holds; `cmake --install` gives an opgate that works from any directory; a mistyped
# command gets "did you mean" (git's habit), also below a command and past its options.
# Usage: habits_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
BUILD="$(dirname "$OPGATE")"

# --- opgate alone: the help on stdout (every sub-command), exit 2 (no command ran) ---
"$OPGATE" >"$WORK/alone.txt" 2>"$WORK/alone.err"
check "opgate alone exits 2" test $? -eq 2
check "opgate alone prints nothing on stderr" test ! -s "$WORK/alone.err"
check "opgate alone prints the usage line" grep -q '^Usage: opgate \[OPTIONS\] SUBCOMMAND' "$WORK/alone.txt"
for sub in list run repro golden merge baseline gen shrink fuzz fuzz-seeds; do
  check "opgate alone lists '$sub'" grep -qE "^  $sub +[A-Z]" "$WORK/alone.txt"
done
"$OPGATE" --help >"$WORK/help.txt" 2>&1
check "opgate --help exits 0" test $? -eq 0
check "opgate alone prints the same help as --help" cmp -s "$WORK/alone.txt" "$WORK/help.txt"

# --- the scripts' help builds nothing: a copy of tools/ with a set-up that records any call ---
mkdir -p "$WORK/tree/tools"
cp "$SRC/tools/gate.sh" "$SRC/tools/test.sh" "$WORK/tree/tools/"
printf '#!/bin/sh\ntouch "$(dirname "$0")/../setup-was-called"; mkdir -p "$(dirname "$0")/../build"\n' >"$WORK/tree/tools/setup.sh"
chmod +x "$WORK/tree/tools/"*.sh
for script in gate.sh test.sh; do
  for flag in --help -h; do
    (cd "$WORK/tree" && bash "tools/$script" $flag) >"$WORK/usage.txt" 2>&1
    check "$script $flag exits 0" test $? -eq 0
    check "$script $flag prints its usage" grep -q "^Usage: tools/$script" "$WORK/usage.txt"
  done
done
check "no set-up ran for the help" test ! -e "$WORK/tree/setup-was-called"
check "no build folder appeared" test ! -e "$WORK/tree/build"
# The stub is honest: without --help the scripts do call it.
(cd "$WORK/tree" && bash tools/test.sh -L none) >/dev/null 2>&1
check "test.sh without --help runs the set-up (the stub sees calls)" test -e "$WORK/tree/setup-was-called"

# --- list --json: the text listing's ops, defects and cases, with every field ---
"$OPGATE" list --ops >"$WORK/ops.txt"
"$OPGATE" list --defects >"$WORK/defects.txt"
"$OPGATE" list >"$WORK/cases.txt"
"$OPGATE" list --json >"$WORK/all.json"
check "list --json exits 0" test $? -eq 0
"$OPGATE" list --json --op mfrg --tier ci --tier invalid >"$WORK/mfrg.json"
"$OPGATE" list --op mfrg --tier ci --tier invalid >"$WORK/mfrg.txt"
"$OPGATE" list --json --ops >"$WORK/ops.json"
"$OPGATE" list --json --defects >"$WORK/defects.json"
python3 - "$WORK" "$SRC" <<'PY' >"$WORK/json_check.txt" 2>&1
import json, os, sys
work, src = sys.argv[1], sys.argv[2]
def lines(name):
    return [l for l in open(os.path.join(work, name)).read().splitlines() if l.strip()]
bad = []
def expect(what, ok):
    if not ok:
        bad.append(what)
every = json.load(open(os.path.join(work, "all.json")))
text_cases = lines("cases.txt")
expect("case count equals the text listing's 'N case(s)'", f"{len(every['cases'])} case(s)" == text_cases[-1])
expect("case ids in the text order", [c["id"] for c in every["cases"]] == [l.split()[0] for l in text_cases[:-1]])
expect("ops equal --ops", [o["stem"] for o in every["ops"]] == [l.split()[0] for l in lines("ops.txt")])
expect("aclnn names and short names equal --ops",
       [(o["aclnn_name"], o["short_name"], "reference v%d" % o["reference_version"]) for o in every["ops"]] ==
       [(l.split()[1], l.split()[2], " ".join(l.split()[3:5])) for l in lines("ops.txt")])
expect("defects equal --defects", [d["backend"] for d in every["defects"]] == [l.split()[0] for l in lines("defects.txt")])
expect("every defect names its operator", all(d["op"] in [o["stem"] for o in every["ops"]] for d in every["defects"]))
expect("--json --ops is the ops alone", json.load(open(os.path.join(work, "ops.json"))) == {"ops": every["ops"]})
expect("--json --defects is the defects alone",
       json.load(open(os.path.join(work, "defects.json"))) == {"defects": every["defects"]})
# Every case field of the text listing, and the case as its file holds it.
for c, line in zip(every["cases"], text_cases[:-1]):
    f = line.split()
    want = [c["id"], c["tier"], c["fill"], "seed", str(c["seed"]), "expect", str(c["expect"])]
    if f != want:
        bad.append(f"text and json differ for {c['id']}: {f} vs {want}")
        break
stems = {o["stem"] for o in every["ops"]}
tiers = ("smoke", "ci", "nightly", "regression", "invalid")
n_files = 0
for stem in stems:
    for tier in tiers:
        path = os.path.join(src, "cases", stem, tier + ".json")
        if os.path.exists(path):
            n_files += len(json.load(open(path))["cases"])
expect("the case count equals the case files' (%d)" % n_files, len(every["cases"]) == n_files)
one = every["cases"][0]
expect("a case has every field", {"id", "op", "tier", "fill", "seed", "expect", "params", "effective_params",
                                   "source", "index"} <= set(one))
expect("a case's source is its case file (relative to where opgate ran)",
       os.path.samefile(one["source"], os.path.join(src, "cases", one["op"], one["tier"] + ".json")))
mfrg = json.load(open(os.path.join(work, "mfrg.json")))
expect("a selection's JSON count equals its text count", f"{len(mfrg['cases'])} case(s)" == lines("mfrg.txt")[-1])
expect("a selection's JSON holds only its op and tiers",
       {(c["op"], c["tier"]) for c in mfrg["cases"]} == {("moe_finalize_routing_v2_grad", "ci"),
                                                         ("moe_finalize_routing_v2_grad", "invalid")})
expect("invalid cases carry their aclnn code", all(isinstance(c["expect"], int) for c in mfrg["cases"]
                                                   if c["tier"] == "invalid"))
for b in bad:
    print("FAIL: list --json: " + b)
print(f"json checks: {len(bad)} failed")
PY
cat "$WORK/json_check.txt"
check "list --json matches the text listing" grep -q "^json checks: 0 failed" "$WORK/json_check.txt"
expect_error 2 "--op 'nope': unknown operator" list --json --op nope

# --- cmake --install: opgate in <prefix>/bin, working from another directory ---
PREFIX="$WORK/prefix"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.txt" 2>&1
check "cmake --install succeeds" test $? -eq 0
check "opgate is installed into <prefix>/bin" test -x "$PREFIX/bin/opgate"
mkdir -p "$WORK/elsewhere"
cd "$WORK/elsewhere" || exit 1
PATH="$PREFIX/bin:$PATH" opgate list --json --op mfrg --tier smoke >"$WORK/installed.json" 2>&1
check "the installed opgate reads the installed cases" python3 -c "
import json, sys
d = json.load(open('$WORK/installed.json'))
sys.exit(not (d['root'] == '$PREFIX/share/opgate' and d['cases'] and
              all(c['source'].startswith('$PREFIX/share/opgate/cases/') for c in d['cases'])))"
PATH="$PREFIX/bin:$PATH" opgate run --op mfrg --tier smoke --against golden --out "$WORK/elsewhere/r" -q >"$WORK/inst_run.txt" 2>&1
check "the installed opgate runs the smoke tier against the installed golden files" test $? -eq 0
n_smoke=$(python3 -c "import json; print(len(json.load(open('$SRC/cases/moe_finalize_routing_v2_grad/smoke.json'))['cases']))")
check "... every smoke case" grep -q "^cases:$n_smoke passed:$n_smoke " "$WORK/elsewhere/r/summary.txt"
PATH="$PREFIX/bin:$PATH" opgate golden verify --op mfrg >"$WORK/inst_verify.txt" 2>&1
check "the installed golden files verify" test $? -eq 0
check "nothing but the report was written where it ran" test "$(ls "$WORK/elsewhere")" = "r"
cd - >/dev/null || exit 1

# --- a mistyped command: one line naming it and the command it is one or two edits from ---
expect_error 2 "^opgate: error: unknown command 'hsitory' for 'opgate'; did you mean 'history'\?$" hsitory
expect_error 2 "unknown command 'rn' for 'opgate'; did you mean 'run'\?$" rn --op mfrg
expect_error 2 "unknown command 'flakey' for 'opgate history'; did you mean 'flaky'\?$" history --db "$WORK/h.db" flakey
expect_error 2 "unknown command 'regenn' for 'opgate golden'; did you mean 'regen'\?$" --max-case-bytes 2G golden regenn
expect_error 2 "unknown command 'zzzzzz' for 'opgate' \(commands: list, run, .*history\)$" zzzzzz
expect_error 2 "^opgate: error: --op 'mfgr': unknown operator" run --op mfgr  # a value, not a command
check "no history database was created by the typo" test ! -e "$WORK/h.db"

echo "habits tests: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
