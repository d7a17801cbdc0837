#!/usr/bin/env bash
# tools/new-op.sh end to end (label `scaffold`): on a scratch copy of the tree (the files git knows,
# working-tree contents) it scaffolds an operator, configures with -DOPGATE_EXTRA_OPS=<it>, builds
# opgate and the operator's test binary, and checks that `opgate list --ops` shows it and that its
# tests of every role fail with "not implemented". Also: a stem without files fails the configure
# step naming them, and the script refuses a stem or prefix in use and writes nothing.
# The scratch tree mirrors the real layout (<tree>/build/release), so ccache (base_dir) serves the
# unchanged objects from the main build.
# Usage: scaffold_test.sh <source dir> <scratch dir>
set -euo pipefail
src="$1"
scratch="$2"
tree="$scratch/tree"
stem=scaffold_probe aclnn=ScaffoldProbe prefix=sprb

fail() { echo "FAIL: $*" >&2; exit 1; }

git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || fail "$src is not a git checkout (the copy is made from git ls-files)"
rm -rf "$scratch"
mkdir -p "$tree"
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
   while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
   xargs -0 cp -P --parents -t "$tree")

# Refusals: a stem already in OPGATE_OPS, a prefix in use; nothing written.
before=$(cd "$tree" && find . -type f | wc -l)
if out=$("$tree/tools/new-op.sh" moe_ffn MoeFFN xyz 2>&1); then fail "new-op accepted an existing stem"; fi
grep -q "already in OPGATE_OPS" <<<"$out" || fail "no 'already in OPGATE_OPS' for an existing stem: $out"
if out=$("$tree/tools/new-op.sh" other_op OtherOp mfrg 2>&1); then fail "new-op accepted a prefix in use"; fi
grep -q "prefix 'mfrg' is taken" <<<"$out" || fail "no 'prefix is taken' message: $out"
[ "$(cd "$tree" && find . -type f | wc -l)" = "$before" ] || fail "a refused new-op wrote files"

# A stem in the list without its files fails the configure step with the list of what is missing.
if out=$(cmake -S "$tree" -B "$scratch/missing" -G Ninja -DOPGATE_EXTRA_OPS=$stem -DOPGATE_BUILD_TESTS=OFF \
           -DOPGATE_BUILD_BENCH=OFF 2>&1); then
  fail "configure passed with $stem listed and no files"
fi
for f in reference/$stem.h device/layout/$stem.cpp device/emu/$stem.cpp cases/$stem.cpp cases/$stem/smoke.json \
         tests/properties/${stem}_props_test.cpp; do
  grep -q "  $f" <<<"$out" || fail "the configure error does not list $f: $out"
done

"$tree/tools/new-op.sh" $stem $aclnn $prefix >/dev/null
[ "$(cd "$tree" && find . -type f | wc -l)" -gt "$before" ] || fail "new-op wrote nothing"

# The release preset's build folder and flags, plus the operator; only the targets this test needs.
(cd "$tree" && cmake --preset release -DOPGATE_EXTRA_OPS=$stem -DOPGATE_BUILD_BENCH=OFF -DOPGATE_BUILD_FUZZERS=OFF \
   >"$scratch/configure.log" 2>&1) || { cat "$scratch/configure.log" >&2; fail "configure with the scaffolded $stem failed"; }
build="$tree/build/release"
cmake --build "$build" -j2 --target opgate ${stem}_tests >"$scratch/build.log" 2>&1 ||
  { tail -50 "$scratch/build.log" >&2; fail "building opgate and ${stem}_tests failed"; }

"$build/opgate" list --ops >"$scratch/list.txt"
grep -Eq "^$stem +aclnn$aclnn +$prefix +reference v1$" "$scratch/list.txt" ||
  fail "opgate list --ops does not show $stem: $(cat "$scratch/list.txt")"

# Every role's test fails, and says "not implemented".
if "$build/tests/${stem}_tests" >"$scratch/tests.txt" 2>&1; then fail "the scaffolded tests passed"; fi
for suite in Reference Layout Emu Props; do
  grep -q "^\[  FAILED  \] $aclnn$suite\.not_implemented" "$scratch/tests.txt" ||
    fail "$aclnn$suite.not_implemented did not fail: $(tail -20 "$scratch/tests.txt")"
done
[ "$(grep -c "not implemented" "$scratch/tests.txt")" -ge 4 ] || fail "the failures do not say 'not implemented'"

# A case of the new operator runs and fails with the stub's reason, not a crash.
rc=0
"$build/opgate" run --cases "$tree/cases/$stem/smoke.json" --root "$tree" --out "$scratch/report" --quiet \
  >"$scratch/run.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "opgate run on the scaffolded smoke case exited $rc, not 1: $(cat "$scratch/run.txt")"
grep -rq "validate not implemented" "$scratch/report" "$scratch/run.txt" ||
  fail "the smoke case's failure does not name the stub: $(cat "$scratch/run.txt")"
echo "scaffold: $stem configured, built and failed its tests with \"not implemented\""
