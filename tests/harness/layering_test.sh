#!/usr/bin/env bash
# The layering check (cmake/opgate_layering.cmake) passes on core/ as it is and fails, naming
# the file and the line, on a copy of core/ with one planted include of each layer above it; the
# link check fails on a planted link to each library above core and passes on core's own links.
# Usage: tests/harness/layering_test.sh <cmake> <source dir> <scratch dir>
set -uo pipefail
cmake="$1" src="$2" scratch="$3"
check="$src/cmake/opgate_layering.cmake"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

rm -rf "$scratch" && mkdir -p "$scratch"
"$cmake" -DOPGATE_CHECK_CORE_DIR="$src/core" -P "$check" >"$scratch/clean.log" 2>&1 ||
  fail "the check rejects core/ as it is: $(cat "$scratch/clean.log")"

for layer in cases/registry.h device/emu/emu_backend.h reference/moe_ffn.h harness/runner.h tools/commands.h \
             history/history_db.h reports/report.h; do
  planted="$scratch/core_${layer%%/*}"
  mkdir -p "$planted"
  cp "$src"/core/*.h "$src"/core/*.cpp "$planted"/
  # Planted after the first line of a real file, indented, as a refactoring might leave it.
  sed -i "1a\\  #  include \"$layer\"" "$planted/tensor.cpp"
  if "$cmake" -DOPGATE_CHECK_CORE_DIR="$planted" -P "$check" >"$scratch/planted.log" 2>&1; then
    fail "an include of $layer in core/tensor.cpp passes the check"
  elif ! grep -q "tensor.cpp: #  include \"$layer\"" "$scratch/planted.log"; then
    fail "the check does not name tensor.cpp and its include of $layer: $(cat "$scratch/planted.log")"
  fi
done

# The layers above core: each passes as it is, and refuses a planted include of a layer above it
# (a reports/ header in harness/ or history/, tools/ in reports/), naming the file and the line.
plant() {  # <layer> <its file to plant in> <the include>
  local layer="$1" file="$2" include="$3" planted="$scratch/$1_planted"
  rm -rf "$planted" && mkdir -p "$planted"
  cp "$src/$layer"/*.h "$src/$layer"/*.cpp "$planted"/
  sed -i "1a\\#include \"$include\"" "$planted/$file"
  if "$cmake" -DOPGATE_CHECK_LAYER="$layer" -DOPGATE_CHECK_LAYER_DIR="$planted" -P "$check" >"$scratch/planted.log" 2>&1; then
    fail "an include of $include in $layer/$file passes the check"
  elif ! grep -q "$file: #include \"$include\"" "$scratch/planted.log"; then
    fail "the check does not name $layer/$file and its include of $include: $(cat "$scratch/planted.log")"
  fi
}
for layer in harness history reports; do
  "$cmake" -DOPGATE_CHECK_LAYER=$layer -DOPGATE_CHECK_LAYER_DIR="$src/$layer" -P "$check" >"$scratch/clean.log" 2>&1 ||
    fail "the check rejects $layer/ as it is: $(cat "$scratch/clean.log")"
done
plant harness runner.cpp reports/report.h
plant harness runner.cpp history/history_db.h
plant history history_db.cpp reports/report_html.h
plant history history_db.cpp harness/runner.h
plant reports report.cpp tools/cli_common.h
# ... while reports/ may include the layers below it.
rm -rf "$scratch/reports_below" && mkdir -p "$scratch/reports_below"
cp "$src"/reports/*.h "$src"/reports/*.cpp "$scratch/reports_below"/
sed -i '1a\#include "harness/runner.h"\n#include "history/history_db.h"' "$scratch/reports_below/report.cpp"
"$cmake" -DOPGATE_CHECK_LAYER=reports -DOPGATE_CHECK_LAYER_DIR="$scratch/reports_below" -P "$check" \
  >"$scratch/below.log" 2>&1 || fail "reports/ may not include harness/ or history/: $(cat "$scratch/below.log")"
# An unknown layer is one clear error.
"$cmake" -DOPGATE_CHECK_LAYER=nowhere -DOPGATE_CHECK_LAYER_DIR="$src/core" -P "$check" >"$scratch/unknown.log" 2>&1
grep -q "unknown layer 'nowhere'" "$scratch/unknown.log" || fail "an unknown layer is not named: $(cat "$scratch/unknown.log")"

for lib in opgate_reference opgate_device opgate_cases opgate_harness; do
  if "$cmake" -DOPGATE_CHECK_CORE_LINKS="fmt::fmt;$lib;Threads::Threads" -P "$check" >"$scratch/link.log" 2>&1; then
    fail "a link of opgate_core to $lib passes the check"
  elif ! grep -q "opgate_core links a library above it: $lib" "$scratch/link.log"; then
    fail "the link check does not name $lib: $(cat "$scratch/link.log")"
  fi
done
"$cmake" -DOPGATE_CHECK_CORE_LINKS="fmt::fmt;nlohmann_json::nlohmann_json;OpenSSL::Crypto;Threads::Threads" \
  -P "$check" >"$scratch/link.log" 2>&1 || fail "core's own links fail the check: $(cat "$scratch/link.log")"

echo "layering: $failures failure(s)"
[ "$failures" -eq 0 ]
