#!/usr/bin/env bash
# Scaffolds a new operator: every per-layer file the configure check (cmake/opgate_ops.cmake) and the
# registries need, as compiling stubs. The stubs report "not implemented" and every test of the new
# operator fails with "not implemented" until its maths and tests are written (README: adding an
# operator). Nothing is written if any target file already exists.
#
# Usage: tools/new-op.sh [--root DIR] <stem> <AclnnName> <prefix>
#   stem       snake_case file stem in every layer, e.g. moe_gating_top_k
#   AclnnName  the aclnn name without "aclnn", e.g. MoeGatingTopK (test suites: <AclnnName>Reference ...)
#   prefix     case-id prefix, e.g. mgtk
# The device/ascend marshalling is optional (cmake/opgate_ascend.cmake): without it the ascend backend
# reports the operator's cases SKIPPED, so it is not scaffolded.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--root" ]; then
  root="$(cd "$2" && pwd)"
  shift 2
fi
if [ $# -ne 3 ]; then
  echo "usage: tools/new-op.sh [--root DIR] <stem> <AclnnName> <prefix>" >&2
  exit 2
fi
stem="$1" aclnn="$2" prefix="$3"
[[ "$stem" =~ ^[a-z][a-z0-9_]*$ ]] || { echo "new-op: stem '$stem' is not snake_case ([a-z][a-z0-9_]*)" >&2; exit 2; }
[[ "$aclnn" =~ ^[A-Z][A-Za-z0-9]*$ ]] || { echo "new-op: AclnnName '$aclnn' is not CamelCase without the aclnn prefix" >&2; exit 2; }
[[ "$prefix" =~ ^[a-z][a-z0-9]*$ ]] || { echo "new-op: prefix '$prefix' must be [a-z][a-z0-9]*" >&2; exit 2; }
if grep -Eq "^[[:space:]]+$stem\$" "$root/CMakeLists.txt"; then
  echo "new-op: $stem is already in OPGATE_OPS (CMakeLists.txt)" >&2
  exit 2
fi
if grep -hs -A1 "OpInfo info{" "$root"/cases/*.cpp | grep -q "\"$prefix\""; then
  echo "new-op: case-id prefix '$prefix' is taken (cases/*.cpp op_info)" >&2
  exit 2
fi

files=("reference/$stem.h" "reference/$stem.cpp" "device/layout/$stem.h" "device/layout/$stem.cpp"
       "device/emu/$stem.h" "device/emu/$stem.cpp" "cases/$stem.h" "cases/$stem.cpp"
       "cases/$stem/README.md" "cases/$stem/smoke.json" "cases/$stem/invalid.json"
       "tests/reference/${stem}_test.cpp" "tests/device/${stem}_layout_test.cpp"
       "tests/device/${stem}_emu_test.cpp" "tests/properties/${stem}_props_test.cpp")
existing=()
for f in "${files[@]}"; do
  [ -e "$root/$f" ] && existing+=("$f")
done
if [ ${#existing[@]} -gt 0 ]; then
  echo "new-op: these files exist already, nothing written: ${existing[*]}" >&2
  exit 2
fi

# Writes stdin to $root/$1 with @STEM@, @ACLNN@ and @PREFIX@ replaced.
emit() {
  mkdir -p "$(dirname "$root/$1")"
  sed -e "s/@STEM@/$stem/g" -e "s/@ACLNN@/$aclnn/g" -e "s/@PREFIX@/$prefix/g" > "$root/$1"
}

emit "reference/$stem.h" <<'EOF'
// Double-precision reference of aclnn@ACLNN@ (scaffolded by tools/new-op.sh: Params and specs are a
// one-input skeleton, x -> y; validate and reference report "not implemented").
#pragma once

#include <cstdint>

#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate::ref::@STEM@ {

// Bumped whenever the reference's semantics change on purpose (golden-format.md).
constexpr int kReferenceVersion = 1;

// Problem descriptor: the aclnn attributes in snake_case plus the problem dimensions.
struct Params {
  DType dtype = DType::kF16;  // x and y
  int64_t n = 1;              // elements of x and y
  bool operator==(const Params& o) const { return dtype == o.dtype && n == o.n; }
};

// Descriptors of a well-formed call: input x (n), output y (n).
SpecMap specs(const Params& p);

// The documented checks of the aclnn layer; Ok or kAclnnError with the code a correct kernel returns.
Status validate(const Params& p, const SpecMap& specs);

// Data conditions the kernel does not check but needs; Ok or kInvalidCase.
Status check_data(const Params& p, const TensorMap& inputs);

// Expected outputs in f64 on canonical layout (the formula goes here).
// Precondition: validate(p, specs(p)) and check_data(p, inputs) are ok.
RefOutputs reference(const Params& p, const TensorMap& inputs);

}  // namespace opgate::ref::@STEM@
EOF

emit "reference/$stem.cpp" <<'EOF'
// Reference of aclnn@ACLNN@: stubs from tools/new-op.sh that report "not implemented".
#include "reference/@STEM@.h"

namespace opgate::ref::@STEM@ {

SpecMap specs(const Params& p) {
  return {{"x", {p.dtype, {p.n}, true}}, {"y", {p.dtype, {p.n}, true}}};
}

Status validate(const Params& /*p*/, const SpecMap& /*specs*/) {
  return internal_error("@STEM@: validate not implemented (reference/@STEM@.cpp)");
}

Status check_data(const Params& /*p*/, const TensorMap& /*inputs*/) {
  return internal_error("@STEM@: check_data not implemented (reference/@STEM@.cpp)");
}

RefOutputs reference(const Params& /*p*/, const TensorMap& /*inputs*/) {
  OPGATE_CHECK(false, "@STEM@: reference not implemented (reference/@STEM@.cpp)");
  return {};
}

}  // namespace opgate::ref::@STEM@
EOF

emit "device/layout/$stem.h" <<'EOF'
// Device memory images of aclnn@ACLNN@ (scaffolded by tools/new-op.sh: not implemented).
#pragma once

#include "core/tensor.h"
#include "reference/@STEM@.h"

namespace opgate::layout::@STEM@ {

using Params = ref::@STEM@::Params;

// Canonical inputs -> the images the aclnn call receives (unused regions poisoned).
TensorMap pack(const Params& p, const TensorMap& canonical);
// The output buffers to allocate, by aclnn name.
SpecMap output_images(const Params& p, const SpecMap& specs);
// Output images -> canonical outputs named as in the reference.
TensorMap unpack(const Params& p, const TensorMap& images);

}  // namespace opgate::layout::@STEM@
EOF

emit "device/layout/$stem.cpp" <<'EOF'
// Layouts of aclnn@ACLNN@: stubs from tools/new-op.sh that report "not implemented".
#include "device/layout/@STEM@.h"

namespace opgate::layout::@STEM@ {

TensorMap pack(const Params& /*p*/, const TensorMap& /*canonical*/) {
  OPGATE_CHECK(false, "@STEM@: pack not implemented (device/layout/@STEM@.cpp)");
  return {};
}

SpecMap output_images(const Params& /*p*/, const SpecMap& /*specs*/) {
  OPGATE_CHECK(false, "@STEM@: output_images not implemented (device/layout/@STEM@.cpp)");
  return {};
}

TensorMap unpack(const Params& /*p*/, const TensorMap& /*images*/) {
  OPGATE_CHECK(false, "@STEM@: unpack not implemented (device/layout/@STEM@.cpp)");
  return {};
}

}  // namespace opgate::layout::@STEM@
EOF

emit "device/emu/$stem.h" <<'EOF'
// CPU emulation of the aclnn@ACLNN@ kernel, with its catalogue of injectable defects (scaffolded by
// tools/new-op.sh: not implemented).
#pragma once

#include <string>
#include <vector>

#include "core/defect.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/@STEM@.h"

namespace opgate::emu::@STEM@ {

// Runs the kernel model on the packed inputs and writes the pre-allocated `out` images; `defect`
// is "" (faithful) or a name from defects().
Status run(const ref::@STEM@::Params& p, const TensorMap& in, TensorMap& out, const std::string& defect);

// The injectable defects, each named "@PREFIX@.<what>" with a one-line description.
std::vector<DefectInfo> defects();

}  // namespace opgate::emu::@STEM@
EOF

emit "device/emu/$stem.cpp" <<'EOF'
// Emulation of aclnn@ACLNN@: a stub from tools/new-op.sh that reports "not implemented".
#include "device/emu/@STEM@.h"

namespace opgate::emu::@STEM@ {

Status run(const ref::@STEM@::Params& /*p*/, const TensorMap& /*in*/, TensorMap& /*out*/,
           const std::string& /*defect*/) {
  return internal_error("@STEM@: emu not implemented (device/emu/@STEM@.cpp)");
}

std::vector<DefectInfo> defects() { return {}; }

}  // namespace opgate::emu::@STEM@
EOF

emit "cases/$stem.h" <<'EOF'
// Cases of aclnn@ACLNN@: the JSON binding of its params, the generator, the fills and the compare
// plan (scaffolded by tools/new-op.sh: fill and compare_plan are not implemented).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/chooser.h"
#include "core/compare.h"
#include "core/op_registry.h"
#include "core/problem.h"
#include "reference/@STEM@.h"

namespace opgate::cases::@STEM@ {

using Params = ref::@STEM@::Params;

// How the data is generated; does not change the call.
struct Knobs {
  bool operator==(const Knobs& /*o*/) const { return true; }
};

const OpInfo& op_info();

// {"dtype", "n"}; strict: unknown keys and out-of-range values are errors naming the key.
Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j);
nlohmann::json to_json(const Params& p, const Knobs& k);

// A valid, small problem drawn through the Chooser.
nlohmann::json generate(Chooser& c);

// Canonical inputs in device dtypes from the fill mode and seed.
Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed);

// How each output is checked, every non-default tolerance with its reason.
ComparePlan compare_plan(const Params& p, const RefOutputs& ref, FillMode mode);

// An output element's position in domain terms, for reports ("" when there is nothing to add).
std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs);

// Fluent construction for tests: Builder().dtype(DType::kF16).n(8).build().
class Builder {
 public:
  Builder& dtype(DType d) { p_.dtype = d; return *this; }
  Builder& n(int64_t n) { p_.n = n; return *this; }
  std::pair<Params, Knobs> build() const { return {p_, k_}; }
  nlohmann::json json() const { auto [p, k] = build(); return to_json(p, k); }

 private:
  Params p_;
  Knobs k_;
};

}  // namespace opgate::cases::@STEM@
EOF

emit "cases/$stem.cpp" <<'EOF'
// Cases of aclnn@ACLNN@ (cases/@STEM@/README.md explains each choice). Scaffolded by tools/new-op.sh:
// the JSON binding and the generator cover the skeleton's params; fill and compare_plan report
// "not implemented".
#include "cases/@STEM@.h"

#include <cstdint>

#include "cases/param_reader.h"
#include "cases/problem_binding.h"
#include "device/layout/@STEM@.h"

namespace opgate::cases::@STEM@ {
namespace ref = ::opgate::ref::@STEM@;
namespace layout = ::opgate::layout::@STEM@;

// The accepted params: the one table the reader checks against, that `opgate list --params-of`
// prints and cases/@STEM@/README.md holds (tools/readme_docs.py --write), and that the unknown-key
// error lists.
const std::vector<ParamDoc>& param_docs() {
  static const std::vector<ParamDoc> docs = {
      {"dtype", "dtype", "float16", "x and y"},
      {"n", "integer", "1", "elements of x"},
  };
  return docs;
}

Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j) {
  ParamReader r(j, &param_docs());
  Params p;
  p.dtype = r.dtype("dtype", DType::kF16);
  p.n = r.integer("n", 1, 0, int64_t{1} << 24);
  OPGATE_TRY(r.finish());
  return std::make_pair(p, Knobs{});
}

nlohmann::json to_json(const Params& p, const Knobs& /*k*/) {
  return {{"dtype", dtype_name(p.dtype)}, {"n", p.n}};
}

nlohmann::json generate(Chooser& c) { return Builder().n(c.integer(1, 64, "n")).json(); }

Expected<TensorMap> fill(const Params& /*p*/, const Knobs& /*k*/, const SpecMap& /*specs*/, FillMode /*mode*/,
                         uint64_t /*seed*/) {
  return internal_error("@STEM@: fill not implemented (cases/@STEM@.cpp)");
}

ComparePlan compare_plan(const Params& /*p*/, const RefOutputs& /*ref*/, FillMode /*mode*/) {
  OPGATE_CHECK(false, "@STEM@: compare_plan not implemented (cases/@STEM@.cpp)");
  return {};
}

std::string describe(const Params& /*p*/, const std::string& /*output*/, const std::vector<int64_t>& /*index*/,
                     const TensorMap& /*inputs*/) {
  return "";
}

OPGATE_BIND_PROBLEM(@STEM@, (std::vector<std::string>{"y"}))

const OpInfo& op_info() {
  static const OpInfo info{"@STEM@", "@ACLNN@", "@PREFIX@", ref::kReferenceVersion, parse, generate};
  return info;
}

}  // namespace opgate::cases::@STEM@
EOF

emit "cases/$stem/README.md" <<'EOF'
# aclnn@ACLNN@ — essence of testing

Scaffolded by `tools/new-op.sh`; each section below is still to be written, as in the other
operators' READMEs.

## Case parameters

<!-- params: generated by `opgate list --params-of @STEM@ --markdown` (tools/readme_docs.py --write); edit the table in cases/@STEM@.cpp -->
<!-- end params -->

## Fill modes
## Checks
## Fault catalogue (`opgate list --defects`)
## Spec questions settled
EOF

emit "cases/$stem/smoke.json" <<'EOF'
{"op": "@STEM@",
 "defaults": {"dtype": "float16"},
 "cases": [
   {"id": "@PREFIX@.skeleton.f16.001", "params": {"n": 8}, "seed": 1, "fill": "exact"}
 ]}
EOF

emit "cases/$stem/invalid.json" <<'EOF'
{"op": "@STEM@",
 "defaults": {"dtype": "float16"},
 "cases": [
   {"id": "@PREFIX@.reject_x_int32.f16", "params": {"n": 8}, "tensors": {"x": {"dtype": "int32"}}, "expect": 161002}
 ]}
EOF

emit "tests/reference/${stem}_test.cpp" <<'EOF'
// Tests of the aclnn@ACLNN@ reference: hand-computed examples (each with its arithmetic in a
// comment) and one call per documented validate code. Scaffolded by tools/new-op.sh.
#include "reference/@STEM@.h"

#include <gtest/gtest.h>

namespace opgate::ref::@STEM@ {
namespace {

TEST(@ACLNN@Reference, not_implemented) {
  const Params p;
  EXPECT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).to_string();
  FAIL() << "not implemented: hand-computed examples of reference() and validate codes (tests/reference/@STEM@_test.cpp)";
}

}  // namespace
}  // namespace opgate::ref::@STEM@
EOF

emit "tests/device/${stem}_layout_test.cpp" <<'EOF'
// Tests of the aclnn@ACLNN@ memory images: the documented layout by hand and pack/unpack round trips.
// Scaffolded by tools/new-op.sh.
#include "device/layout/@STEM@.h"

#include <gtest/gtest.h>

namespace opgate::layout::@STEM@ {
namespace {

TEST(@ACLNN@Layout, not_implemented) {
  FAIL() << "not implemented: the documented memory images and pack/unpack (tests/device/@STEM@_layout_test.cpp)";
}

}  // namespace
}  // namespace opgate::layout::@STEM@
EOF

emit "tests/device/${stem}_emu_test.cpp" <<'EOF'
// Tests of the aclnn@ACLNN@ kernel emulation: hand-worked roundings, emu against the reference, and
// one exposing input per catalogued defect. Scaffolded by tools/new-op.sh.
#include "device/emu/@STEM@.h"

#include <gtest/gtest.h>

namespace opgate::emu::@STEM@ {
namespace {

TEST(@ACLNN@Emu, not_implemented) {
  const ref::@STEM@::Params p;
  TensorMap out;
  const Status s = run(p, {}, out, "");
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  FAIL() << "not implemented: emu tests (tests/device/@STEM@_emu_test.cpp)";
}

}  // namespace
}  // namespace opgate::emu::@STEM@
EOF

emit "tests/properties/${stem}_props_test.cpp" <<'EOF'
// Properties of aclnn@ACLNN@ (suite @ACLNN@Props, RapidCheck) over the operator's generator through
// the RapidCheck Chooser (tests/cases/rc_chooser.h), so failures shrink. Scaffolded by tools/new-op.sh.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "cases/@STEM@.h"

namespace opgate::ref::@STEM@ {
namespace {

RC_GTEST_PROP(@ACLNN@Props, not_implemented, ()) {
  RC_FAIL("not implemented: at least three properties of the reference (tests/properties/@STEM@_props_test.cpp)");
}

}  // namespace
}  // namespace opgate::ref::@STEM@
EOF

echo "new-op: wrote ${#files[@]} files for $stem (aclnn$aclnn, case ids $prefix.*):"
printf '  %s\n' "${files[@]}"
cat <<EOF
Next: configure with the operator while it is under construction (main's build stays without it):
  cmake --preset release -DOPGATE_EXTRA_OPS=$stem && cmake --build build/release -j2
  ctest --test-dir build/release -R '${aclnn}|$stem'      # fails with "not implemented" until written
Then write the maths (reference/$stem.cpp, helpers in reference/$stem/), the layout, the emulator, the
fills and compare plan, the tests of each role, and the README; when its tests pass, move $stem into
OPGATE_OPS in CMakeLists.txt and reconfigure with -DOPGATE_EXTRA_OPS= (README: adding an operator).
EOF
