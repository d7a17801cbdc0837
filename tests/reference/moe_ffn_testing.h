// Shared helper of the MoeFFN reference and emulator tests: canonical inputs from hand-written values.
#pragma once

#include <cmath>
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

// int8 relu, K1 = N1 = 1: x = W1 = 1, bias1 = 2^24 + 2^13, W2 = 1, scale 6.28125, offset 0,
// deqScale1 2^-20, deqScale2 1. acc1 = 2^24 + 2^13 + 1 is a tie in fp32, and float(acc1) puts the
// dequantised hidden value on an fp16 midpoint (spec §2.7; the arithmetic is at the tests using it).
inline Values acc1_midpoint_values() {
  return {{1}, {1}, {std::ldexp(1.0, 24) + std::ldexp(1.0, 13)}, {1}, {}, {6.28125}, {0},
          {std::ldexp(1.0f, -20)}, {1.0f}};
}

}  // namespace opgate::moe_ffn_testing
