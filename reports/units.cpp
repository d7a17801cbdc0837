#include "reports/units.h"

#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace opgate {
namespace {

// The value's place on the dtype's number line: the sign-magnitude bit pattern as a signed integer,
// so neighbours differ by 1 and both zeros are 0.
int64_t ordinal(DType t, double v) {
  int64_t mag = 0;
  bool neg = std::signbit(v);
  switch (t) {
    case DType::kF16: mag = f16_from_double(v) & 0x7fff; break;
    case DType::kBF16: mag = bf16_from_double(v) & 0x7fff; break;
    case DType::kF32: {
      const float f = f32_from_double(v);
      uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      mag = bits & 0x7fffffffu;
      break;
    }
    default: mag = static_cast<int64_t>(double_bits(v) & 0x7fffffffffffffffull); break;
  }
  return neg ? -mag : mag;
}

// The most significant digits a value of `t` can need to read back (max_digits10).
int max_digits(DType t) {
  switch (t) {
    case DType::kF16: return 5;
    case DType::kBF16: return 4;
    case DType::kF32: return 9;
    default: return 17;
  }
}

std::string nonfinite_text(double v) { return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"); }

}  // namespace

double ulp_distance(DType t, double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  if (!is_floating(t)) return std::fabs(a - b);
  return std::fabs(static_cast<double>(ordinal(t, a) - ordinal(t, b)));
}

std::string ulp_text(DType t, double distance) {
  if (std::isnan(distance)) return is_floating(t) ? "n/a ulp" : "off by n/a";
  const std::string n = distance < 1e5 ? fmt::format("{:.0f}", distance) : fmt::format("{:.2g}", distance);
  return is_floating(t) ? n + " ulp" : "off by " + n;
}

std::string value_text(DType t, double v) {
  if (!std::isfinite(v)) return nonfinite_text(v);
  if (!is_floating(t)) return fmt::format("{:.0f}", v);
  const double mine = round_to(t, v);
  // Whole numbers in full (65504, not 6.55e+04) while they stay short.
  if (mine == std::floor(mine) && std::fabs(mine) < 1e9) return fmt::format("{:.0f}", mine);
  for (int p = 1; p < max_digits(t); ++p) {
    const std::string s = fmt::format("{:.{}g}", mine, p);
    if (round_to(t, std::strtod(s.c_str(), nullptr)) == mine) return s;
  }
  return fmt::format("{:.{}g}", mine, max_digits(t));
}

std::string reference_text(DType t, double v) {
  if (!std::isfinite(v)) return nonfinite_text(v);
  if (!is_floating(t)) return fmt::format("{:.6g}", v);
  return fmt::format("{:.{}g}", v, std::min(17, max_digits(t) + 2));
}

std::string short_text(double v) { return std::isfinite(v) ? fmt::format("{:.3g}", v) : nonfinite_text(v); }

std::string budget_text(double b) {
  if (std::isnan(b)) return "n/a";
  if (b <= 0) return "0";
  if (b <= 0.01) return "<=0.01";
  if (b <= 1) return fmt::format("{:.2f}", b);
  if (b < 10) return fmt::format("{:.1f}x over", b);
  if (b < 1000) return fmt::format("{:.0f}x over", b);
  return ">1000x over";
}

}  // namespace opgate
