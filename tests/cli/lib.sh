# Shared by the tests/cli/*_test.sh scripts (sourced, not run): arguments, scratch folder, counters
# and the two assertions. Usage at the top of a script: source "$(dirname "$0")/lib.sh" "$@"
# Arguments: <opgate binary> <source dir> <scratch dir>.
set -uo pipefail
OPGATE="$(realpath "$1")"; SRC="$2"; WORK="$3"  # absolute: some tests run from $WORK
rm -rf "$WORK"; mkdir -p "$WORK"
failures=0; passes=0
check() {  # check <description> <command...>: the command must succeed
  local what="$1"; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $what"; failures=$((failures + 1)); fi
}
# expect_error <exit code> <pattern> <opgate args...>: exact exit code, one stderr line matching.
expect_error() {
  local code="$1" pattern="$2"; shift 2
  "$OPGATE" "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"; local got=$?
  local lines; lines=$(wc -l <"$WORK/err.txt")
  if [ "$got" -ne "$code" ] || [ "$lines" -ne 1 ] || ! grep -qE -- "$pattern" "$WORK/err.txt"; then
    echo "FAIL: opgate $* -> exit $got (want $code), stderr ($lines lines):"; cat "$WORK/err.txt"
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
# numpy_python: sets PY to a python3 that has NumPy (tools/setup.sh installs python3-numpy for the
# test presets; a pyenv python3 first on PATH may lack it), or exits 1 saying so.
numpy_python() {
  PY=""
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c "import numpy" 2>/dev/null; then PY="$p"; return 0; fi
  done
  echo "FAIL: no python3 with numpy (tools/setup.sh release installs python3-numpy)"; exit 1
}
