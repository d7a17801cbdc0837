#include "cases/bytes_case.h"

#include <fmt/format.h>

#include "cases/chooser.h"
#include "core/fill_override.h"

namespace opgate {
namespace {

constexpr size_t kHeaderBytes = 11;

uint8_t byte_at(const std::vector<uint8_t>& bytes, size_t i) { return i < bytes.size() ? bytes[i] : 0; }

}  // namespace

std::optional<Case> case_from_bytes(const OpInfo& op, const std::vector<uint8_t>& bytes, SizeClass size, int64_t n) {
  static const FillMode kFills[] = {FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial};
  static const ExtremeClass kClasses[] = {ExtremeClass::kSubnormal, ExtremeClass::kNearMax, ExtremeClass::kSignedZero};
  Case c;
  c.op = op.stem;
  for (size_t i = 0; i < 8; ++i) c.seed |= static_cast<uint64_t>(byte_at(bytes, i)) << (8 * i);
  c.fill = kFills[byte_at(bytes, 8) % 3];
  const size_t rest = bytes.size() > kHeaderBytes ? bytes.size() - kHeaderBytes : 0;
  BytesChooser chooser(rest > 0 ? bytes.data() + kHeaderBytes : nullptr, rest);
  c.params = op.generate(chooser);
  c.id = fmt::format("{}.hunt.{}.{:03d}", op.short_name, case_dtype_name(c.params), n);
  c.tags = {"hunt"};
  auto problem = make_problem(c);
  if (!problem || !(*problem)->validate().is_ok() || input_elements(**problem) > element_budget(size)) {
    return std::nullopt;
  }
  const uint8_t extreme = byte_at(bytes, 9) % 8;
  if (extreme < 3 && !apply_extreme_fill(c, kClasses[extreme], byte_at(bytes, 10)).is_ok()) return std::nullopt;
  return c;
}

}  // namespace opgate
