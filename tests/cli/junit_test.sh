#!/usr/bin/env bash
# junit.xml as CI tools read it: valid against tests/cli/junit.xsd (the constraints of Jenkins'
# JUnit schema) with xmllint; counts that match results.jsonl; <failure> for a wrong kernel,
# <error> for an infrastructure verdict; the run settings as <properties> with plain values;
# classnames opgate.<stem>.<tier>; a failure body with the worst elements and the repro; MISTRUSTED
# red in junit.xml and summary.txt exactly when --strict makes it fail the gate.
# Usage: junit_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
XSD="$SRC/tests/cli/junit.xsd"
command -v xmllint >/dev/null || { echo "FAIL: xmllint missing (tools/setup.sh installs libxml2-utils)"; exit 1; }
valid() { xmllint --noout --schema "$XSD" "$1" 2>"$WORK/xmllint.txt"; }
attr() {  # attr <file> <element> <attribute>: the attribute of the first such element
  python3 -c "
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
el = root if root.tag == sys.argv[2] else root.find('.//' + sys.argv[2])
print(el.get(sys.argv[3]))" "$1" "$2" "$3"
}
verdicts() { grep -c "\"verdict\":\"$2\"" "$1/results.jsonl"; }

# A wrong kernel: FAILED cases are <failure>s.
"$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci --backend fault:mfrg.scale_not_applied \
  -q --out "$WORK/fault" >/dev/null 2>&1
check "fault run: exit 1" test $? -eq 1
check "fault run: junit.xml is valid against the JUnit schema" valid "$WORK/fault/junit.xml"
failed=$(verdicts "$WORK/fault" FAILED)
check "fault run: failures = FAILED cases ($failed)" test "$(attr "$WORK/fault/junit.xml" testsuite failures)" = "$failed"
check "fault run: no errors" test "$(attr "$WORK/fault/junit.xml" testsuite errors)" = 0
check "fault run: totals on <testsuites>" test "$(attr "$WORK/fault/junit.xml" testsuites failures)" = "$failed"
check "fault run: a timestamp" grep -qE 'timestamp="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}"' "$WORK/fault/junit.xml"
check "fault run: the host" grep -q "hostname=\"$(hostname)\"" "$WORK/fault/junit.xml"
check "fault run: the backend as a plain property" \
  grep -q '<property name="backend.backend" value="fault:mfrg.scale_not_applied"/>' "$WORK/fault/junit.xml"
check "fault run: the tiers as a plain property" grep -q '<property name="selection.tiers" value="ci"/>' "$WORK/fault/junit.xml"
check "fault run: no property value is JSON" python3 -c "
import sys, xml.etree.ElementTree as ET
values = [p.get('value') for p in ET.parse(sys.argv[1]).getroot().iter('property')]
sys.exit(0 if values and not any(v.startswith(('{', '[', '\"')) for v in values) else 1)" "$WORK/fault/junit.xml"
check "fault run: classname opgate.<stem>.<tier> (Jenkins: package opgate.<stem>, class <tier>)" \
  test "$(grep -o 'classname="[^"]*"' "$WORK/fault/junit.xml" | sort -u)" = 'classname="opgate.moe_finalize_routing_v2_grad.ci"'
check "fault run: a failure's body holds the worst elements and the repro" \
  python3 -c "
import sys, xml.etree.ElementTree as ET
f = ET.parse(sys.argv[1]).getroot().find('.//failure')
sys.exit(0 if f is not None and 'expected' in f.text and 'got' in f.text and 'repro: ' in f.text else 1)" \
  "$WORK/fault/junit.xml"

# An infrastructure verdict: INVALID_CASE is an <error>, not a <failure>.
python3 - "$SRC/cases/moe_finalize_routing_v2_grad/smoke.json" "$WORK/invalid.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"] = [dict(d["cases"][0], tensors={"expandedRowIdx": {"fill": {"values": [-5]}}})]
json.dump(d, open(sys.argv[2], "w"))
P
"$OPGATE" run --root "$SRC" --cases "$WORK/invalid.json" -q --out "$WORK/invalid" >/dev/null 2>&1
check "invalid case: exit 1" test $? -eq 1
check "invalid case: junit.xml is valid" valid "$WORK/invalid/junit.xml"
check "invalid case: <error type=\"INVALID_CASE\">" grep -q '<error type="INVALID_CASE"' "$WORK/invalid/junit.xml"
check "invalid case: errors=1 failures=0" \
  test "$(attr "$WORK/invalid/junit.xml" testsuite errors)/$(attr "$WORK/invalid/junit.xml" testsuite failures)" = 1/0

# MISTRUSTED follows --strict. Scores near -1e12 (q k = 65504 * -29824 * 512) have fp32 errors far
# beyond 1, so the softmax may weight the rows in any proportion, and V rows spanning +-65504 make
# every element's tolerance wider than fp16's range: nothing a defect does could fail.
cat >"$WORK/mistrusted.json" <<'J'
{"op": "incre_flash_attention_v3", "cases": [
{"id": "ifa.scores_near_mask_value.f16.001", "params": {"dtype": "float16", "B": 1, "numHeads": 2, "numKeyValueHeads": 1, "D": 512, "S": 3, "inputLayout": "BNSD", "scaleValue": 1.0, "attenMask": true, "maskPattern": "suffix", "maskPrefix": 2}, "seed": 209, "fill": "realistic", "tensors": {"query": {"fill": {"values": [65504.0, 65504.0, 65504.0, 65504.0, 32752.0, 32752.0, 32752.0, 32752.0]}}, "key": {"fill": {"values": [-29824.0]}}, "value": {"fill": {"values": [65504.0, -65504.0, 0.0]}}}}
]}
J
"$OPGATE" run --root "$SRC" --cases "$WORK/mistrusted.json" -q --out "$WORK/lenient" >/dev/null 2>&1
check "MISTRUSTED without --strict: exit 0" test $? -eq 0
check "MISTRUSTED without --strict: the case is MISTRUSTED" test "$(verdicts "$WORK/lenient" MISTRUSTED)" = 1
check "MISTRUSTED without --strict: junit.xml is valid" valid "$WORK/lenient/junit.xml"
check "MISTRUSTED without --strict: no failure in junit.xml" test "$(attr "$WORK/lenient/junit.xml" testsuite failures)" = 0
check "MISTRUSTED without --strict: not listed as a failure in summary.txt" \
  test "$(grep -c '^MISTRUSTED ' "$WORK/lenient/summary.txt")" = 0
"$OPGATE" run --root "$SRC" --cases "$WORK/mistrusted.json" --strict -q --out "$WORK/strict" >/dev/null 2>&1
check "MISTRUSTED with --strict: exit 1" test $? -eq 1
check "MISTRUSTED with --strict: junit.xml is valid" valid "$WORK/strict/junit.xml"
check "MISTRUSTED with --strict: red in junit.xml" grep -q '<failure type="MISTRUSTED"' "$WORK/strict/junit.xml"
check "MISTRUSTED with --strict: failures=1" test "$(attr "$WORK/strict/junit.xml" testsuite failures)" = 1
check "MISTRUSTED with --strict: listed in summary.txt" grep -q '^MISTRUSTED ifa.scores_near_mask_value' "$WORK/strict/summary.txt"
check "MISTRUSTED with --strict: run.json records strict" grep -q '"strict": true' "$WORK/strict/run.json"

# The schema check can fail: a suite without its required name is rejected.
sed 's/<testsuite name="[^"]*"/<testsuite/' "$WORK/fault/junit.xml" >"$WORK/broken.xml"
check "the schema rejects a testsuite without a name" test "$(valid "$WORK/broken.xml"; echo $?)" -ne 0

echo "junit: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
