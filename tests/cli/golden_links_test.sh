#!/usr/bin/env bash
# golden regen never writes or deletes through a symbolic link (issue 23). Before: with a case
# folder OUT/<stem>/<id> that is a link to a folder, regen renamed the link and removed the tree
# through it (exit 0); a link named like a retired case was "removed" the same way; a leftover
# .<id>.old.<pid> link of an interrupted regen had its target's files deleted. Now the first two
# are refused before any write (exit 2, one line naming the link), and leftovers are unlinked
# themselves. Every target's file survives.
# Usage: golden_links_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
OP=ffn_worker_batching
OUT="$WORK/golden"
victim() {  # victim <name>: a folder of someone else's with one file in it
  mkdir -p "$WORK/$1" && echo precious >"$WORK/$1/keep"
}
"$OPGATE" golden regen --op "$OP" --out "$OUT" >"$WORK/regen0.txt" 2>&1
check "a first regen exits 0" test $? -eq 0
ID=$(ls "$OUT/$OP" | head -1)

# A case folder that is a link.
victim v1
rm -rf "$OUT/$OP/$ID" && ln -s "$WORK/v1" "$OUT/$OP/$ID"
expect_error 2 "$OUT/$OP/$ID: a symbolic link; golden regen writes and removes real case folders only" \
  golden regen --op "$OP" --out "$OUT"
check "a linked case folder: its target's file survives" test -f "$WORK/v1/keep"
check "a linked case folder: the link is left as it was" test -L "$OUT/$OP/$ID"
rm "$OUT/$OP/$ID"
"$OPGATE" golden regen --op "$OP" --out "$OUT" >/dev/null 2>&1
check "regen after the link is gone exits 0" test $? -eq 0

# A link named like a retired case (no case holds the id).
victim v2
ln -s "$WORK/v2" "$OUT/$OP/fwb.retired.f16.001"
expect_error 2 "$OUT/$OP/fwb.retired.f16.001: a symbolic link" golden regen --op "$OP" --out "$OUT"
check "a retired-looking link: its target's file survives" test -f "$WORK/v2/keep"
rm "$OUT/$OP/fwb.retired.f16.001"

# A leftover of an interrupted regen that is a link: the link goes, its target stays.
victim v3
ln -s "$WORK/v3" "$OUT/$OP/.$ID.old.999999"
"$OPGATE" golden regen --op "$OP" --out "$OUT" >"$WORK/regen3.txt" 2>&1
check "regen with a linked leftover exits 0: $(tail -1 "$WORK/regen3.txt")" test $? -eq 0
check "a linked leftover: its target's file survives" test -f "$WORK/v3/keep"
check "a linked leftover: the link is removed" test ! -L "$OUT/$OP/.$ID.old.999999"

echo "golden links: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
