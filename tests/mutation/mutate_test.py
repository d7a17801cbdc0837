#!/usr/bin/env python3
"""tools/mutate.py on tiny fixtures (ctest label `mutation`): which lines are mutated, that ids are
stable, that a killable mutant is killed and an unobservable one survives, that a mutant which
does not compile is stillborn, that a hang is killed by the limit and that the check stops at its
first failing case. Runs in seconds: g++ on a 20-line file, never the project build."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from mutation import driver, mutants  # noqa: E402

# The rules of what must never be mutated, in the shapes the emulators use.
RULES_FIXTURE = """\
// x < y in a comment
#include <cmath>
enum class Defect { kNone, kOff };
constexpr DefectEntry kDefects[] = {{Defect::kOff, "fx.off", "a + b < c"}};
float f(Defect defect, float x) {
  const float y = defect == Defect::kOff ? x - 1.0f : x + 2.0f;
  if (defect == Defect::kOff) {
    x = x * 3.0f;
  }
  const bool flag = defect == Defect::kOff;
  if (flag) x = x / 5.0f;
  OPGATE_TRY(check(x < 7));
  if (x > 8) {
    return invalid_case("x > 8");
  }
  return y < x ? y : x;
}
"""

RUN_KERNEL = """\
int add(int a, int b) { return a + b; }
int clamp_hi(int x, int hi) { return x < hi ? x : hi; }
float scale(float x, float s) { return x / s; }
unsigned sum_down(unsigned n) {
  unsigned s = 0;
  for (unsigned i = n; i > 0; --i) s += i;
  return s;
}
"""

RUN_CHECK = """\
int add(int, int);
int clamp_hi(int, int);
float scale(float, float);
unsigned sum_down(unsigned);
int main() {
  return add(2, 3) == 5 && clamp_hi(3, 5) == 3 && clamp_hi(7, 5) == 5 && scale(6.0f, 2.0f) == 3.0f &&
         sum_down(4) == 10 ? 0 : 1;
}
"""


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def find(ms, line, operator, mutated_part):
    hits = [m for m in ms if m.line == line and m.operator == operator and mutated_part in m.mutated]
    return hits[0] if hits else None


class Generation(unittest.TestCase):
    def setUp(self):
        self.ms = mutants.generate(RULES_FIXTURE, "device/emu/fx.cpp")

    def test_comments_includes_catalogue_defect_branches_and_guards_are_not_mutated(self):
        lines = {m.line for m in self.ms}
        # 1 comment, 2 include, 3-4 defect enum and catalogue, 7-9 defect-only if, 10-11 flag and its if,
        # 12 OPGATE_TRY, 13-15 a guard returning an error.
        for untouchable in (1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15):
            self.assertNotIn(untouchable, lines, [m.mutated for m in self.ms if m.line == untouchable])

    def test_ternary_false_arm_is_mutated_but_not_the_defect_arm(self):
        line6 = [m for m in self.ms if m.line == 6]
        self.assertTrue(any("x - 2.0f" in m.mutated for m in line6))       # + -> - in the normal arm
        self.assertFalse(any("x + 1.0f" in m.mutated for m in line6))      # the defect arm untouched
        self.assertFalse(any("!=" in m.mutated for m in line6))

    def test_operators_on_the_last_line(self):
        self.assertEqual(sorted(m.mutated.strip() for m in self.ms if m.line == 16),
                         ["return y <= x ? y : x;"])

    def test_precision_drop_rounds_through_fp16(self):
        ms = mutants.generate("float c() { return 1.702f * 0.1; }\n", "x.cpp")
        texts = {m.mutated for m in ms if m.operator == "precision"}
        # fp16 holds 1.702 as 1.7021484375 (10-bit mantissa: 1 + 719/1024); 0.1 as float is
        # 0.100000001490116119384765625.
        self.assertIn("float c() { return 1.7021484375f * 0.1; }", texts)
        self.assertIn("float c() { return 1.702f * 0.10000000149011612; }", texts)

    def test_rounding_modes_and_functions_are_swapped(self):
        ms = mutants.generate("double r(double v) { return std::round(round_to(DType::kF16, v)); }\n", "x.cpp")
        texts = {m.mutated for m in ms if m.operator == "rounding"}
        self.assertIn("double r(double v) { return std::nearbyint(round_to(DType::kF16, v)); }", texts)
        self.assertIn("double r(double v) { return std::round(round_to(DType::kF16, v, Rounding::kTowardZero)); }",
                      texts)

    def test_id_is_the_documented_hash_and_survives_an_edit_above(self):
        m = find(self.ms, 16, "ror", "y <= x ?")
        key = "\0".join(["device/emu/fx.cpp", "ror", "return y < x ? y : x;", "return y <= x ? y : x;", "0"])
        self.assertEqual(m.id, hashlib.sha1(key.encode()).hexdigest()[:12])
        shifted = mutants.generate("// a new first line\n" + RULES_FIXTURE, "device/emu/fx.cpp")
        moved = [s for s in shifted if s.id == m.id]
        self.assertEqual(len(moved), 1)
        self.assertEqual(moved[0].line, 17)
        self.assertEqual(len({x.id for x in self.ms}), len(self.ms))  # ids unique within a file


class Running(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mutate_test_")
        for name, text in (("kernel.cpp", RUN_KERNEL), ("check.cpp", RUN_CHECK)):
            with open(os.path.join(cls.dir, name), "w") as fh:
                fh.write(text)
        cls.target = driver.Target("fixture", ["g++", "-O0", "-o", "check", "kernel.cpp", "check.cpp"], ["./check"],
                                   cwd=cls.dir)
        cls.ms = mutants.generate(RUN_KERNEL, "kernel.cpp")
        # The unmutated fixture passes, or nothing below means anything.
        st, _, _, tail = driver.run_limited(cls.target.build_argv, 60, cwd=cls.dir)
        assert st == "ok", tail
        assert driver.run_limited(cls.target.check_argv, 10, cwd=cls.dir)[0] == "ok"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def run_one(self, m, limit=30):
        before = read(os.path.join(self.dir, "kernel.cpp"))
        r = driver.run_mutant(m, self.dir, self.target, limit)
        self.assertEqual(read(os.path.join(self.dir, "kernel.cpp")), before, "source not restored")
        return r

    def test_observable_mutant_is_killed(self):
        r = self.run_one(find(self.ms, 1, "arith", "a - b"))
        self.assertEqual(r["outcome"], "killed")

    def test_tie_only_mutant_survives(self):
        # x < hi vs x <= hi differ only at x == hi, where both return the same value: equivalent.
        r = self.run_one(find(self.ms, 2, "ror", "x <= hi"))
        self.assertEqual(r["outcome"], "survived")

    def test_uncompilable_mutant_is_stillborn(self):
        r = self.run_one(find(self.ms, 3, "index_swap", "x % s"))
        self.assertEqual(r["outcome"], "stillborn")

    def test_hang_is_killed_by_the_limit(self):
        # unsigned i >= 0 never ends.
        t0 = time.monotonic()
        r = self.run_one(find(self.ms, 6, "ror", "i >= 0"), limit=1)
        self.assertEqual(r["outcome"], "killed")
        self.assertTrue(r["how"].startswith("timeout"), r)
        self.assertLess(time.monotonic() - t0, 30)

    def test_a_check_that_cannot_run_is_an_error_not_a_kill(self):
        # opgate's exit 2 (usage or harness error, e.g. a refused --out) says nothing of the mutant.
        target = driver.Target("fixture", self.target.build_argv,
                               ["sh", "-c", "echo 'opgate: error: holds a previous report'; exit 2"],
                               cwd=self.dir, error_exit=2)
        r = driver.run_mutant(find(self.ms, 1, "arith", "a - b"), self.dir, target, 30)
        self.assertEqual(r["outcome"], "error", r)
        self.assertIn("holds a previous report", r["how"])

    def test_opgate_checks_may_reuse_their_report_folder(self):
        argv = driver.opgate_target("x", "/tree", "/build", "/report", 5).check_argv
        self.assertIn("--overwrite", argv)

    def test_check_stops_at_the_first_failing_case(self):
        argv = ["sh", "-c", "echo '[   1/3] PASSED          a.ok.001   1.0 ms'; "
                            "echo '[   2/3] FAILED          a.bad.002   1.0 ms  y: 1 of 4 outside'; sleep 30"]
        t0 = time.monotonic()
        st, detail, _, _ = driver.run_limited(argv, 60, fail_line=driver._FAIL_LINE)
        self.assertEqual((st, detail), ("failed", "FAILED a.bad.002"))
        self.assertLess(time.monotonic() - t0, 10)


class Sync(unittest.TestCase):
    def test_scratch_tree_keeps_layer_sources_and_drops_outputs(self):
        # reports/ holds the reports layer's sources beside run folders (issue 24): the sources
        # are copied, the run folders, build/, .git/ and golden/ are not, and stale files go.
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "src"), os.path.join(tmp, "dst")
            for rel in ("reports/report.cpp", "reports/README.md", "reports/run_1/summary.txt",
                        "build/x.o", ".git/HEAD", "golden/a/expected.npy", "core/a.cpp"):
                os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
                with open(os.path.join(src, rel), "w") as fh:
                    fh.write(rel)
            os.makedirs(os.path.join(dst, "core"))
            with open(os.path.join(dst, "core", "stale.cpp"), "w") as fh:
                fh.write("old")
            driver.sync_tree(src, dst)
            copied = sorted(os.path.relpath(os.path.join(r, f), dst) for r, _, fs in os.walk(dst) for f in fs)
            self.assertEqual(copied, ["core/a.cpp", "reports/README.md", "reports/report.cpp"])


class Cli(unittest.TestCase):
    def mutate(self, *args, eq=None):
        return subprocess.run([sys.executable, "-B", os.path.join(ROOT, "tools", "mutate.py"), *args],
                              capture_output=True, text=True, timeout=60)

    def test_unknown_operator_is_one_clear_error(self):
        p = self.mutate("--op", "no_such_op", "--list")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown operator 'no_such_op'", p.stderr)

    def test_sampling_is_deterministic_and_nested(self):
        def ids(n, seed="1"):
            out = self.mutate("--op", "moe_finalize_routing_v2_grad", "--list", "--max", str(n), "--seed", seed).stdout
            return [ln.split()[0] for ln in out.splitlines() if not ln.startswith("#")]
        small, large = ids(4), ids(9)
        self.assertEqual(len(small), 4)
        self.assertEqual(len(large), 9)
        self.assertEqual(small, ids(4))
        self.assertTrue(set(small) <= set(large))
        self.assertNotEqual(small, ids(4, seed="2"))

    def test_equivalents_file_rows_need_a_reason(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
            fh.write("abcdef012345 device/emu/x.cpp:3\n")
        try:
            p = self.mutate("--op", "moe_finalize_routing_v2_grad", "--max", "1", "--equivalents", fh.name,
                            "--scratch", os.path.join(tempfile.gettempdir(), "mutate_test_unused"))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("expected '<id> <file>:<line> <reason>'", p.stderr)
        finally:
            os.remove(fh.name)


class Scoring(unittest.TestCase):
    def test_equivalents_leave_the_denominator(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location("mutate_cli", os.path.join(ROOT, "tools", "mutate.py"))
        cli = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cli)
        results = [{"id": "a", "outcome": "killed", "how": "FAILED x"},
                   {"id": "b", "outcome": "killed", "how": "timeout after 20 s"},
                   {"id": "c", "outcome": "survived", "how": "check passed"},
                   {"id": "d", "outcome": "survived", "how": "check passed"},
                   {"id": "e", "outcome": "stillborn", "how": "does not compile"}]
        counts = cli.summarise("x", results, {"d": "x.cpp:1 tie only"})
        # 2 killed, 1 survived (d is equivalent, e stillborn): 2 / 3.
        self.assertEqual((counts["killed"], counts["survived"], counts["equivalent"], counts["stillborn"]),
                         (2, 1, 1, 1))
        self.assertEqual(counts["score"], 66.67)
        self.assertEqual(counts["killed_by_timeout"], 1)


if __name__ == "__main__":
    unittest.main(verbosity=1)
