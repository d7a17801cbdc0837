// Table-driven exact conversions of fp16/bf16 bit patterns; other dtypes by plain casts.
#include "reference/incre_flash_attention_v3/incre_flash_attention_v3_convert.h"

#include <cstring>

#include "reference/math/shared_simd.h"

namespace opgate::ref::incre_flash_attention_v3 {
namespace {

// The exact double of every fp16/bf16 bit pattern (the table the vector kernels use too).
const double* table(DType t) { return math::exact_half_values(t == DType::kBF16); }

template <class Out>
void convert(DType t, const uint8_t* data, int64_t first, int64_t count, Out* dst) {
  switch (t) {
    case DType::kF16:
    case DType::kBF16: {
      const double* tab = table(t);
      const uint8_t* src = data + first * 2;
      for (int64_t i = 0; i < count; ++i) {
        uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        dst[i] = static_cast<Out>(tab[b]);
      }
      return;
    }
    case DType::kI8: {
      const auto* src = reinterpret_cast<const int8_t*>(data) + first;
      for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(src[i]);
      return;
    }
    case DType::kU8:
    case DType::kBool: {
      const uint8_t* src = data + first;
      for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(src[i]);
      return;
    }
    default:
      for (int64_t i = 0; i < count; ++i) {
        dst[i] = static_cast<Out>(load_element(t, data + (first + i) * static_cast<int64_t>(dtype_size(t))));
      }
      return;
  }
}

}  // namespace

void to_double(DType t, const uint8_t* data, int64_t first, int64_t count, double* dst) {
  if (t == DType::kF16 || t == DType::kBF16) {  // exact either way; the vector path is faster
    math::kernels().halves_to_double(reinterpret_cast<const uint16_t*>(data) + first, count, t == DType::kBF16, dst);
    return;
  }
  convert(t, data, first, count, dst);
}

void to_float(DType t, const uint8_t* data, int64_t first, int64_t count, float* dst) {
  convert(t, data, first, count, dst);
}

double half_value(uint16_t bits) { return table(DType::kF16)[bits]; }
double bfloat_value(uint16_t bits) { return table(DType::kBF16)[bits]; }

}  // namespace opgate::ref::incre_flash_attention_v3
