// Shared helpers of the IncreFlashAttentionV3 tests: canonical inputs from hand-written values, the
// device pipeline (pack -> emu on poisoned buffers -> unpack), and the compare plan as a predicate.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cases/incre_flash_attention_v3.h"
#include "core/compare.h"
#include "core/guard.h"
#include "device/emu/incre_flash_attention_v3.h"
#include "device/layout/incre_flash_attention_v3.h"

namespace opgate::incre_flash_attention_v3_testing {

namespace ifa_cases = cases::incre_flash_attention_v3;
namespace ifa_ref = ref::incre_flash_attention_v3;
using ifa_ref::Params;

// Canonical inputs of `p`: tensors named in `values` get those values (row-major, canonical shape),
// every other canonical input is zero.
inline TensorMap make_inputs(const Params& p, const std::map<std::string, std::vector<double>>& values) {
  TensorMap in;
  for (const auto& [name, spec] : ifa_ref::canonical_specs(p)) {
    const auto it = values.find(name);
    in[name] = it == values.end() ? Tensor::zeros(spec.dtype, spec.shape) : Tensor::from_values(spec.dtype, spec.shape, it->second);
  }
  return in;
}

// The problem of a builder plus generated inputs (fill mode and seed as in a case file).
struct Filled {
  Params p;
  ifa_cases::Knobs k;
  TensorMap in;
};

inline Filled filled(const ifa_cases::Builder& b, FillMode mode, uint64_t seed) {
  auto [p, k] = b.build();
  return {p, k, ifa_cases::fill(p, k, ifa_ref::specs(p), mode, seed).value()};
}

// pack -> emu (with `defect`) on a poisoned, guarded attentionOut -> unpack.
inline Tensor run_device(const Params& p, const TensorMap& canonical, const std::string& defect = "") {
  const TensorMap packed = layout::incre_flash_attention_v3::pack(p, canonical);
  const TensorSpec out_spec = ifa_ref::specs(p).at("attentionOut");
  GuardedBuffer buffer = make_guarded(out_spec.dtype, out_spec.shape);
  TensorMap out{{"attentionOut", buffer.tensor}};
  const Status s = emu::incre_flash_attention_v3::run(p, packed, out, defect);
  OPGATE_CHECK(s.is_ok(), s.to_string());
  OPGATE_CHECK(check_guards(buffer).empty(), "emu wrote outside attentionOut");
  return layout::incre_flash_attention_v3::unpack(p, out).at("attentionOut");
}

// The case's compare plan applied to a device output.
inline CompareResult compare(const Params& p, const RefOutputs& ref, const Tensor& got, FillMode mode) {
  const OutputCheck check = ifa_cases::compare_plan(p, ref, mode).outputs.at(0);
  return compare_output(check, ref.expected.at("attentionOut"), got, ref.magnitude.at("attentionOut"), Tensor(),
                        poison_bits(check.device_dtype));
}

inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

}  // namespace opgate::incre_flash_attention_v3_testing
