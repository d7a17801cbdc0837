#!/usr/bin/env bash
# The declared compiler floor (cmake/opgate_toolchain.cmake; label unit):
# - the check itself in script mode: GCC 7.3 and 8.5 and Clang 9 are refused with the floor, the
#   compiler found and what to do; GCC 9.1, GCC 11 and Clang 10, 13 pass;
# - the project's configure step with this build's compiler made to identify as one below the floor
#   (a wrapper that redefines its version macros, which is all CMake reads): it stops with that error
#   before looking for any package. Also: the same wrapper at the real version configures past it.
# Usage: compiler_floor_test.sh <cmake> <source dir> <scratch dir> <C++ compiler> <compiler id>
set -euo pipefail
cmake="$1" src="$2" scratch="$3" cxx="$4" id="$5"
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
mkdir -p "$scratch"

check() {  # check <id> <version> -> rc, out
  rc=0
  out=$("$cmake" -DOPGATE_FLOOR_ID="$1" -DOPGATE_FLOOR_VERSION="$2" -P "$src/cmake/opgate_toolchain.cmake" 2>&1) || rc=$?
  out=$(tr -s '[:space:]' ' ' <<<"$out")  # CMake wraps its messages
}
for below in GNU:7.3.0 GNU:8.5.0 Clang:9.0.1; do
  check "${below%%:*}" "${below#*:}"
  [ "$rc" != 0 ] || fail "the floor check accepted ${below}"
  name=${below%%:*}; [ "$name" = GNU ] && name=GCC
  for want in "GCC >= 9 or Clang >= 10" "found $name ${below#*:}" "gcc-toolset" "-DCMAKE_CXX_COMPILER="; do
    grep -qF -- "$want" <<<"$out" || fail "the floor error for $below lacks '$want': $out"
  done
done
for ok in GNU:9.1.0 GNU:11.4.0 Clang:10.0.0 Clang:13.0.1; do
  check "${ok%%:*}" "${ok#*:}"
  [ "$rc" = 0 ] || fail "the floor check refused $ok: $out"
done

# The configure step, with the compiler identifying as one below the floor.
case "$id" in
  GNU) low="-U__GNUC__ -D__GNUC__=7 -U__GNUC_MINOR__ -D__GNUC_MINOR__=3 -U__GNUC_PATCHLEVEL__ -D__GNUC_PATCHLEVEL__=0"
       low_text="found GCC 7.3.0" ;;
  Clang) low="-U__clang_major__ -D__clang_major__=9 -U__clang_minor__ -D__clang_minor__=0"
         low_text="found Clang 9.0" ;;
  *) fail "compiler id '$id' is neither GNU nor Clang" ;;
esac
printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$cxx" "$low" >"$scratch/old-c++"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$cxx" >"$scratch/same-c++"
chmod +x "$scratch/old-c++" "$scratch/same-c++"
rc=0
out=$("$cmake" -S "$src" -B "$scratch/old" -DCMAKE_CXX_COMPILER="$scratch/old-c++" 2>&1) || rc=$?
out=$(tr -s '[:space:]' ' ' <<<"$out")
[ "$rc" != 0 ] || fail "the configure step accepted a compiler below the floor: $out"
grep -qF "$low_text" <<<"$out" || fail "the configure error does not name the compiler ('$low_text'): $out"
grep -qF "$scratch/old-c++" <<<"$out" || fail "the configure error does not name the compiler's path: $out"
! grep -q "Could NOT find\|Found fmt\|Performing Test" <<<"$out" || fail "the floor was checked after the packages: $out"

# The same compiler at its own version passes the check (and configures the project: the test
# stack is there, since this runs in the test suite; tests and fuzzers off to keep it short).
rc=0
out=$("$cmake" -S "$src" -B "$scratch/same" -DCMAKE_CXX_COMPILER="$scratch/same-c++" -DOPGATE_BUILD_TESTS=OFF \
        -DOPGATE_BUILD_BENCH=OFF 2>&1) || rc=$?
[ "$rc" = 0 ] || fail "configuring with the unchanged compiler failed: $out"
echo "compiler floor: GCC 7.3/8.5 and Clang 9 refused at configure with what to do; GCC >= 9, Clang >= 10 pass"
