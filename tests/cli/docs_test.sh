#!/usr/bin/env bash
# The READMEs' parts that come from code (issue 24): each cases/<op>/README.md holds its params
# table as `opgate list --params-of <op> --markdown` prints it, and its Tiers section quotes the real
# case counts (tools/readme_docs.py). A copy of cases/ with a stale table row and a stale count must
# be refused, naming both.
# Usage: docs_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"

python3 "$SRC/tools/readme_docs.py" "$OPGATE" "$SRC" >"$WORK/check.txt" 2>&1
rc=$?
check "the READMEs match the code ($(tr '\n' ' ' <"$WORK/check.txt"))" test "$rc" -eq 0

"$OPGATE" list --params-of moe_ffn >"$WORK/mffn.txt"
check "list --params-of prints MoeFFN's keys read outside its reader" grep -qE "^activation +string +fastgelu" "$WORK/mffn.txt"
check "list --params-of names expertTokens" grep -qE "^expertTokens " "$WORK/mffn.txt"
expect_error 2 "--params-of: unknown operator 'nope'" list --params-of nope

mkdir -p "$WORK/root" && cp -r "$SRC/cases" "$WORK/root/cases"
readme="$WORK/root/cases/moe_finalize_routing_v2_grad/README.md"
sed -i 's/^| `skew` | real | 0 |/| `skew` | real | 0.25 |/; s/^smoke 6, ci [0-9]*/smoke 6, ci 999/' "$readme"
python3 "$SRC/tools/readme_docs.py" "$OPGATE" "$WORK/root" >"$WORK/stale.txt" 2>&1
check "a stale README fails the check" test $? -eq 1
check "the stale table is named" grep -q "moe_finalize_routing_v2_grad/README.md: the params table is stale" "$WORK/stale.txt"
check "the stale count is named" grep -q "says ci 999, there are" "$WORK/stale.txt"
python3 "$SRC/tools/readme_docs.py" "$OPGATE" "$WORK/root" --write >/dev/null 2>&1
check "--write regenerates the table (the count stays for a person to fix)" \
  grep -q '^| `skew` | real | 0 |' "$readme"

echo "docs: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
