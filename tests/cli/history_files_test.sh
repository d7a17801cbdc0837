#!/usr/bin/env bash
# The history database as a file on disk (issue 23): a query leaves nothing beside it (no -wal or
# -shm); queries work on a read-only mount; a damaged history (a dropped table, overwritten pages)
# stops a run before its report folder exists; a full disk is named as such. The read-only mount
# and the full disk are small tmpfs mounts (root here); where mounting is not allowed, the
# read-only case uses an immutable folder (chattr +i) and the full-disk case is skipped, said so.
# Usage: history_files_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
SMOKE="$SRC/cases/ffn_worker_batching/smoke.json"
ONE=(--cases "$SMOKE" --filter "$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$SMOKE" | head -1)" -q)
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  chattr -R -i "$WORK" 2>/dev/null
}
trap cleanup EXIT
tmpfs_at() {  # tmpfs_at <folder> <size>: mounts a tmpfs there; fails where mounting is not allowed
  mkdir -p "$1" && mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null && mounts+=("$1")
}

DB="$WORK/h.db"
"$OPGATE" run "${ONE[@]}" --history "$DB" --out "$WORK/r1" >"$WORK/r1.log" 2>&1
check "a recorded run" test $? -eq 0

# --- a query leaves the folder as it found it ---
rm -f "$DB-wal" "$DB-shm"
"$OPGATE" history --db "$DB" cases >"$WORK/q.txt" 2>&1
check "history cases exits 0" test $? -eq 0
check "a query leaves no -wal or -shm beside the database" test ! -e "$DB-wal" -a ! -e "$DB-shm"

# --- a read-only mount (or an immutable folder) ---
RO="$WORK/ro"
if tmpfs_at "$RO" 1m; then
  cp "$DB" "$RO/h.db" && mount -o remount,ro "$RO"
  how="read-only mount"
else
  mkdir -p "$RO" && cp "$DB" "$RO/h.db" && chattr +i "$RO/h.db" "$RO"
  how="immutable folder"
fi
"$OPGATE" history --db "$RO/h.db" trend --case "${ONE[3]}" >"$WORK/ro.txt" 2>&1
check "history trend on a $how exits 0: $(head -1 "$WORK/ro.txt")" test $? -eq 0
check "history trend on a $how shows run 1 of the case" grep -qE '^ +1  .* emu +PASSED' "$WORK/ro.txt"

# --- a damaged history stops the run before the report folder exists ---
damaged() {  # damaged <name> <python statement on the connection c>: a copy of the history, damaged
  cp "$DB" "$WORK/$1.db"
  python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); $2; c.commit(); c.close()" "$WORK/$1.db"
}
damaged dropped "c.execute('DROP TABLE outputs')"
expect_error 2 "dropped.db: damaged run history: its table 'outputs' is missing" \
  run "${ONE[@]}" --history "$WORK/dropped.db" --out "$WORK/r_dropped"
check "a dropped table: no report folder" test ! -e "$WORK/r_dropped"
expect_error 2 "dropped.db: damaged run history" history --db "$WORK/dropped.db" cases
cp "$DB" "$WORK/pages.db"
# Page 2 on (the schema's tables and indexes) overwritten; page 1 (header, sqlite_master) intact.
python3 -c "import sys; f = open(sys.argv[1], 'r+b'); n = len(f.read()); f.seek(4096); f.write(b'\xa5' * (n - 4096))" "$WORK/pages.db"
expect_error 2 "pages.db: corrupt history database" run "${ONE[@]}" --history "$WORK/pages.db" --out "$WORK/r_pages"
check "overwritten pages: no report folder" test ! -e "$WORK/r_pages"

# --- a full disk ---
FULL="$WORK/full"
if tmpfs_at "$FULL" 256k; then
  cp "$DB" "$FULL/h.db"
  dd if=/dev/zero of="$FULL/filler" bs=4k 2>/dev/null  # until the disk is full
  "$OPGATE" run --cases "$SMOKE" -q --history "$FULL/h.db" --out "$WORK/r_full" >"$WORK/full.txt" 2>&1
  check "a full disk: exit 2" test $? -eq 2
  check "a full disk is named: $(cat "$WORK/full.txt")" grep -q "no space left on the device holding the history" "$WORK/full.txt"
else
  echo "SKIPPED: the full-disk check (mounting a tmpfs is not allowed here)"
fi

echo "history files: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
