// Shared helper of the MoeFFN reference and emulator tests: canonical inputs from hand-written values.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "reference/moe_ffn.h"

namespace opgate::moe_ffn_testing {

// One call's input values in canonical order; tensors absent in specs(p) are skipped. deqScale
// values are fp32 and stored as their bit patterns in UINT64 words.
struct Values {
  std::vector<double> x, w1, b1, w2, b2, scale, offset;
  std::vector<float> deq1, deq2;
};

inline TensorMap make_inputs(const ref::moe_ffn::Params& p, const Values& v) {
  const SpecMap s = ref::moe_ffn::specs(p);
  const std::pair<const char*, const std::vector<double>*> plain[] = {
      {"x", &v.x}, {"weight1", &v.w1}, {"bias1", &v.b1}, {"weight2", &v.w2},
      {"bias2", &v.b2}, {"scale", &v.scale}, {"offset", &v.offset}};
  TensorMap m;
  for (const auto& [name, vals] : plain) {
    if (s.at(name).present) m[name] = Tensor::from_values(s.at(name).dtype, s.at(name).shape, *vals);
  }
  for (const auto& [name, vals] : {std::pair{"deqScale1", &v.deq1}, std::pair{"deqScale2", &v.deq2}}) {
    if (!s.at(name).present) continue;
    Tensor t = Tensor::zeros(s.at(name).dtype, s.at(name).shape);
    for (size_t i = 0; i < vals->size(); ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &(*vals)[i], sizeof bits);
      t.set_bits(static_cast<int64_t>(i), bits);
    }
    m[name] = t;
  }
  return m;
}

}  // namespace opgate::moe_ffn_testing
