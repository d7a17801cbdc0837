// round_fast and ulp_fast (reference/math/shared_round.h) against core's round_to and ulp, which
// encode to bits: every fp16 and bf16 value, the midpoints between neighbours (ties), one double
// ulp either side of both, random doubles over every binade of the three formats, overflow edges,
// zeros, double subnormals, infinities and NaN; for fp16, bf16 and fp32 in all three modes.
#include "reference/math/shared_round.h"
#include "reference/moe_ffn/moe_ffn_bound.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace opgate::math {
namespace {

uint64_t bits(double v) {
  if (std::isnan(v)) return 0x7FF8000000000000ull;
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::vector<double> probes() {
  std::vector<double> v = {0.0, -0.0, 0x1p-1074, -0x1p-1074, 0x1p-1022, 65504.0, 65519.99, 65520.0, 65536.0, -65520.0,
                           0x1.FEp127, 0x1.FFp127, 0x1.FFFFFEp127, 0x1.FFFFFFp127, 1e300, -1e300,
                           std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::nan("")};
  for (uint32_t b = 0; b < 65536; ++b) {
    for (double x : {f16_to_double(static_cast<uint16_t>(b)), bf16_to_double(static_cast<uint16_t>(b))}) {
      if (!std::isfinite(x)) continue;
      const double up = std::nextafter(x, INFINITY);
      v.insert(v.end(), {x, up, std::nextafter(x, -INFINITY)});
      // The midpoint to the next value of the same format (a tie), and a double ulp around it.
      const double next = b % 2 == 0 ? f16_to_double(static_cast<uint16_t>(b + 1)) : x;
      if (std::isfinite(next) && next != x) {
        const double mid = x + (next - x) / 2;
        v.insert(v.end(), {mid, std::nextafter(mid, INFINITY), std::nextafter(mid, -INFINITY)});
      }
    }
  }
  std::mt19937_64 rng(15);
  for (int i = 0; i < 200000; ++i) {
    const double m = std::uniform_real_distribution<double>(1.0, 2.0)(rng);
    const int e = static_cast<int>(rng() % 300) - 160;
    const double x = std::ldexp(m, e) * (rng() % 2 == 0 ? 1 : -1);
    // Snap some to a 12-bit grid so that ties of every format occur off the table values too.
    v.push_back(i % 3 == 0 ? std::ldexp(std::round(std::ldexp(x, 11 - e)), e - 11) : x);
  }
  return v;
}

TEST(SharedRound, RoundFastEqualsRoundTo) {
  const std::vector<double> values = probes();
  for (DType t : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    for (Rounding r : {Rounding::kNearestEven, Rounding::kHalfAway, Rounding::kTowardZero}) {
      int bad = 0;
      for (double v : values) {
        const double want = round_to(t, v, r), got = round_fast(t, v, r);
        if (bits(want) != bits(got) && ++bad <= 5) {
          ADD_FAILURE() << dtype_name(t) << " mode " << static_cast<int>(r) << " v " << std::hexfloat << v << ": "
                        << want << " vs " << got;
        }
      }
      EXPECT_EQ(bad, 0) << dtype_name(t) << " mode " << static_cast<int>(r) << " of " << values.size();
    }
  }
}

TEST(SharedRound, UlpFastEqualsUlp) {
  const std::vector<double> values = probes();
  for (DType t : {DType::kF16, DType::kBF16, DType::kF32, DType::kI32}) {
    int bad = 0;
    for (double v : values) bad += bits(ulp(t, v)) != bits(ulp_fast(t, v));
    EXPECT_EQ(bad, 0) << dtype_name(t);
  }
  EXPECT_EQ(ulp_fast(DType::kF16, 1.0), 0x1p-10);  // by hand: 10 fraction bits
  EXPECT_EQ(ulp_fast(DType::kF16, 0.0), 0x1p-24);  // the smallest subnormal
  EXPECT_EQ(round_fast(DType::kF16, 1.0 + 0x1p-11), 1.0);  // a tie to even
  EXPECT_EQ(round_fast(DType::kF16, 1.0 + 0x1p-11, Rounding::kHalfAway), 1.0 + 0x1p-10);
}

TEST(SharedRound, MoeFfnGridExponentIsTheLowestSetBit) {
  // By hand: 3 * 2^-5 has its lowest bit at 2^-5; 2^-1074 at 2^-1074; 6 = 110b at 2^1.
  EXPECT_EQ(ref::moe_ffn::grid_exponent(std::vector<double>{3 * 0x1p-5}.data(), 1), -5);
  EXPECT_EQ(ref::moe_ffn::grid_exponent(std::vector<double>{0x1p-1074}.data(), 1), -1074);
  EXPECT_EQ(ref::moe_ffn::grid_exponent(std::vector<double>{6.0, -0.0, INFINITY}.data(), 3), 1);
  // The frexp formulation on every probe (the minimum over one element at a time).
  for (double v : probes()) {
    if (v == 0.0 || !std::isfinite(v)) continue;
    int ex = 0;
    const double f = std::frexp(v, &ex);
    const auto mant = static_cast<uint64_t>(std::ldexp(std::fabs(f), 53));
    ASSERT_EQ(ref::moe_ffn::grid_exponent(&v, 1), ex - 53 + __builtin_ctzll(mant)) << std::hexfloat << v;
  }
}

}  // namespace
}  // namespace opgate::math
