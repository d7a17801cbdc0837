#!/usr/bin/env bash
# tools/new-op.sh end to end (label `scaffold`): on a scratch copy of the tree (the files git knows,
# working-tree contents) it scaffolds an operator, configures with -DOPGATE_EXTRA_OPS=<it>, builds
# opgate and the operator's test binary (not the rest of the project), and checks that
# `opgate list --ops` shows it and that its tests of every role fail with "not implemented". Also: a
# stem without files fails the configure step naming them, and the script refuses a stem or prefix
# in use and writes nothing.
# The copy is configured like the build that runs the test (its compiler, build type and flags:
# <settings>, written by tests/CMakeLists.txt) with its build folder at the same place in the copy
# (e.g. <tree>/build/release), so ccache (base_dir: the source tree, CMakeLists.txt) serves every
# unchanged object from that build; only the operator's own files, the three registries that list
# the operators and tools/cli_common.cpp (it names its tree) compile.
# Usage: scaffold_test.sh <source dir> <scratch dir> <binary dir> <generator> <settings .cmake>
set -euo pipefail
src="$1"
scratch="$2"
binary="$3"
generator="$4"
settings="$5"
tree="$scratch/tree"
# The copy's build folder: where <binary dir> is in the source tree.
case "$binary/" in
  "$src"/*) build="$tree/${binary#"$src"/}" ;;
  *) build="$tree/build/scaffold" ;;
esac
t0=$SECONDS
phase() { echo "scaffold: $1 at $((SECONDS - t0)) s"; }
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
phase "copied and refused"
if out=$(cmake -S "$tree" -B "$scratch/missing" -G "$generator" -DOPGATE_EXTRA_OPS=$stem -DOPGATE_BUILD_TESTS=OFF \
           -DOPGATE_BUILD_BENCH=OFF 2>&1); then
  fail "configure passed with $stem listed and no files"
fi
for f in reference/$stem.h device/layout/$stem.cpp device/emu/$stem.cpp cases/$stem.cpp cases/$stem/smoke.json \
         tests/properties/${stem}_props_test.cpp; do
  grep -q "  $f" <<<"$out" || fail "the configure error does not list $f: $out"
done

"$tree/tools/new-op.sh" $stem $aclnn $prefix >/dev/null
[ "$(cd "$tree" && find . -type f | wc -l)" -gt "$before" ] || fail "new-op wrote nothing"

phase "missing files refused at configure"
# This build's settings, plus the operator; only the targets this test needs.
cmake -S "$tree" -B "$build" -G "$generator" -C "$settings" -DOPGATE_EXTRA_OPS=$stem -DOPGATE_BUILD_TESTS=ON \
  -DOPGATE_BUILD_BENCH=OFF -DOPGATE_BUILD_FUZZERS=OFF >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log" >&2; fail "configure with the scaffolded $stem failed"; }
grep -q "$stem" "$build/generated/opgate/op_list.inc" || fail "the configure step did not list $stem in op_list.inc"
phase "configured"
cmake --build "$build" -j2 --target opgate ${stem}_tests >"$scratch/build.log" 2>&1 ||
  { tail -50 "$scratch/build.log" >&2; fail "building opgate and ${stem}_tests failed"; }
phase "built opgate and ${stem}_tests"

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
phase "checked"
echo "scaffold: $stem configured, built and failed its tests with \"not implemented\""
