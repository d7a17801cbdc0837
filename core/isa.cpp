// Names and ranks of the ISA paths; what the CPU runs is the architecture file's answer
// (core/x86_64/isa_cpu.cpp, core/aarch64/isa_cpu.cpp).
#include "core/isa.h"

#include <algorithm>

namespace opgate {
namespace isa_detail {
// Defined once per architecture.
const std::vector<Isa>& paths();
bool cpu_runs(Isa isa);
const char* arch();

int rank(Isa isa) {
  const std::vector<Isa>& all = paths();
  const auto it = std::find(all.begin(), all.end(), isa);
  return it == all.end() ? -1 : static_cast<int>(it - all.begin());
}
}  // namespace isa_detail

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kSse2: return "sse2";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
  }
  return "?";
}

std::optional<Isa> isa_from_name(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kSse2, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (name == isa_name(isa)) return isa;
  }
  return std::nullopt;
}

const char* arch_name() { return isa_detail::arch(); }

const std::vector<Isa>& arch_isas() { return isa_detail::paths(); }

bool isa_supported(Isa isa) {
  // Asked per kernel call, so the CPU's answer is kept.
  static const std::vector<Isa> supported = [] {
    std::vector<Isa> out;
    for (Isa i : isa_detail::paths()) {
      if (i == Isa::kScalar || isa_detail::cpu_runs(i)) out.push_back(i);
    }
    return out;
  }();
  return std::find(supported.begin(), supported.end(), isa) != supported.end();
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa i : arch_isas()) {
    if (isa_supported(i)) out.push_back(i);
  }
  return out;
}

Isa widest_isa() { return supported_isas().back(); }

}  // namespace opgate
