// Shared helpers of the IncreFlashAttentionV4 tests: generated problems, the device pipeline
// (pack -> emu on a guarded attentionOut -> unpack) and the compare plan as a predicate.
#pragma once

#include <string>
#include <utility>

#include "cases/incre_flash_attention_v4.h"
#include "core/compare.h"
#include "core/guard.h"
#include "device/emu/incre_flash_attention_v4.h"
#include "device/layout/incre_flash_attention_v4.h"

namespace opgate::incre_flash_attention_v4_testing {

namespace ifa4_cases = cases::incre_flash_attention_v4;
namespace ifa4_ref = ref::incre_flash_attention_v4;
using ifa4_ref::Params;

struct Filled {
  Params p;
  ifa4_cases::Knobs k;
  TensorMap in;
};

inline Filled filled(const ifa4_cases::Builder& b, FillMode mode, uint64_t seed) {
  auto [p, k] = b.build();
  return {p, k, ifa4_cases::fill(p, k, ifa4_ref::specs(p), mode, seed).value()};
}

// pack -> emu (with `defect`) on a poisoned, guarded attentionOut -> unpack.
inline Tensor run_device(const Params& p, const TensorMap& canonical, const std::string& defect = "") {
  const TensorMap packed = layout::incre_flash_attention_v4::pack(p, canonical);
  const TensorSpec out_spec = ifa4_ref::specs(p).at("attentionOut");
  GuardedBuffer buffer = make_guarded(out_spec.dtype, out_spec.shape);
  TensorMap out{{"attentionOut", buffer.tensor}};
  const Status s = emu::incre_flash_attention_v4::run(p, packed, out, defect);
  OPGATE_CHECK(s.is_ok(), s.to_string());
  OPGATE_CHECK(check_guards(buffer).empty(), "emu wrote outside attentionOut");
  return layout::incre_flash_attention_v4::unpack(p, out).at("attentionOut");
}

inline CompareResult compare(const Params& p, const RefOutputs& ref, const Tensor& got, FillMode mode) {
  const OutputCheck check = ifa4_cases::compare_plan(p, ref, mode).outputs.at(0);
  return compare_output(check, ref.expected.at("attentionOut"), got, ref.magnitude.at("attentionOut"), Tensor(),
                        poison_bits(check.device_dtype));
}

}  // namespace opgate::incre_flash_attention_v4_testing
