// Bulk double -> dtype conversion. Each dtype has a branch-free fast formula that is exact for the
// values fills produce (normal-range floats, in-range integers), applied to the whole run so the
// compiler vectorises it; the elements outside its domain (subnormal results, overflow, NaN, inf,
// non-integers and saturation for integer types, other rounding modes) are then rewritten by
// store_element itself. So the result is store_element's by construction on the slow elements and
// by the exactness argument beside each formula on the fast ones (tests/core/dtype_convert_test.cpp
// compares all of them with Tensor::set).

#include "core/dtype_convert.h"

#include <cfenv>
#include <cstring>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

namespace opgate {
namespace {

// Round-to-nearest-even of a double to a binary format with `mant` stored bits and exponent bias
// `bias`, when the result is normal or overflows by rounding: the double's bit pattern, re-biased,
// is an integer whose top bits are the target pattern and whose low 52 - mant bits are the
// remainder; adding half - 1 plus the kept lsb rounds half to even, and a carry out of the mantissa
// moves into the exponent, which is also IEEE's behaviour (the largest binade rounds up to inf).
// `fast` tells whether the double's biased exponent e is in [1023 - (bias - 1), 1023 + bias], the
// range where that holds. Both 16-bit formats keep the sign in bit 15.
template <int mant, int exp_bits>
struct NarrowFloat {
  static constexpr int bias = (1 << (exp_bits - 1)) - 1;
  static constexpr int kDrop = 52 - mant;
  static constexpr uint64_t kRebias = static_cast<uint64_t>(1023 - bias) << 52;
  static constexpr uint64_t kLowExp = static_cast<uint64_t>(1023 - (bias - 1)) << 52;
  static constexpr uint64_t kHighExp = (static_cast<uint64_t>(1023 + bias) << 52) | ((uint64_t{1} << 52) - 1);

  static bool fast(uint64_t b) {
    const uint64_t a = b & ~(uint64_t{1} << 63);
    return a >= kLowExp && a <= kHighExp;
  }
  static uint64_t encode(uint64_t b) {
    const uint64_t sign = (b >> 63) << (mant + exp_bits);
    const uint64_t a = (b & ~(uint64_t{1} << 63)) - kRebias;
    const uint64_t rounded = (a + ((uint64_t{1} << (kDrop - 1)) - 1) + ((a >> kDrop) & 1)) >> kDrop;
    return sign | rounded;
  }
};
using Bf16 = NarrowFloat<7, 8>;
using F16 = NarrowFloat<10, 5>;

template <class Format>
void store_narrow(const double* src, int64_t n, uint16_t* dst) {
  bool any_slow = false;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t b = double_bits(src[i]);
    dst[i] = static_cast<uint16_t>(Format::encode(b));
    any_slow |= !Format::fast(b);
  }
  if (!any_slow) return;
  for (int64_t i = 0; i < n; ++i) {
    if (!Format::fast(double_bits(src[i]))) {
      store_element(std::is_same_v<Format, Bf16> ? DType::kBF16 : DType::kF16, dst + i, src[i]);
    }
  }
}

// Hardware double -> float conversion rounds to nearest even (checked: the FPU mode is to-nearest)
// and is exact IEEE rounding when the result is a normal float; flush-to-zero and
// denormals-are-zero cannot act there. Zero, subnormal results, overflow, inf and NaN go to
// store_element.
void store_f32(const double* src, int64_t n, float* dst) {
  constexpr double kMinNormal = 1.1754943508222875e-38;     // 2^-126
  constexpr double kBelowOverflow = 3.4028235677973366e+38;  // (2 - 2^-24) * 2^127: rounds to inf
  bool any_slow = false;
  for (int64_t i = 0; i < n; ++i) {
    const double a = src[i] < 0 ? -src[i] : src[i];
    dst[i] = static_cast<float>(src[i]);
    any_slow |= !(a >= kMinNormal && a < kBelowOverflow);
  }
  if (!any_slow) return;
  for (int64_t i = 0; i < n; ++i) {
    const double a = src[i] < 0 ? -src[i] : src[i];
    if (!(a >= kMinNormal && a < kBelowOverflow)) store_element(DType::kF32, dst + i, src[i]);
  }
}

// An integer-valued double in the range of T converts exactly (every rounding mode agrees);
// anything else (fractions, out of range, NaN) goes to store_element.
template <class T>
void store_integer(DType t, const double* src, int64_t n, T* dst) {
  constexpr double kLo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double kHi = static_cast<double>(std::numeric_limits<T>::max());
  for (int64_t i = 0; i < n; ++i) {
    const double v = src[i];
    if (v >= kLo && v <= kHi && static_cast<double>(static_cast<T>(v)) == v) {
      dst[i] = static_cast<T>(v);
    } else {
      store_element(t, dst + i, v);
    }
  }
}

}  // namespace

void store_elements(DType t, const double* src, int64_t n, void* dst, Rounding r) {
  if (n <= 0) return;
  const bool nearest = r == Rounding::kNearestEven;
  if (t == DType::kF64) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(double));
  } else if (nearest && t == DType::kBF16) {
    store_narrow<Bf16>(src, n, static_cast<uint16_t*>(dst));
  } else if (nearest && t == DType::kF16) {
    store_narrow<F16>(src, n, static_cast<uint16_t*>(dst));
  } else if (nearest && t == DType::kF32 && std::fegetround() == FE_TONEAREST) {
    store_f32(src, n, static_cast<float*>(dst));
  } else if (nearest && t == DType::kI8) {
    store_integer<int8_t>(t, src, n, static_cast<int8_t*>(dst));
  } else if (nearest && t == DType::kU8) {
    store_integer<uint8_t>(t, src, n, static_cast<uint8_t*>(dst));
  } else if (nearest && t == DType::kI32) {
    store_integer<int32_t>(t, src, n, static_cast<int32_t*>(dst));
  } else {
    const size_t size = dtype_size(t);
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n; ++i) store_element(t, out + static_cast<size_t>(i) * size, src[i], r);
  }
}

void store_elements(Tensor& t, int64_t first, const double* src, int64_t n) {
  OPGATE_CHECK(first >= 0 && n >= 0 && first <= t.numel() - n,
               fmt::format("elements [{}, {}) of a tensor of {}", first, first + n, t.numel()));
  store_elements(t.dtype(), src, n, t.data() + static_cast<size_t>(first) * dtype_size(t.dtype()));
}

}  // namespace opgate
