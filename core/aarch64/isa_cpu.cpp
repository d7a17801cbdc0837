// aarch64's paths: Advanced SIMD (NEON), with its fp16 <-> fp32 conversions, is part of the
// ARMv8-A baseline, so every aarch64 CPU runs it. (SVE would be a further path: a row here and
// kernel files of its own, checked at run time through getauxval(AT_HWCAP) & HWCAP_SVE.)
#include "core/isa.h"

namespace opgate::isa_detail {

const char* arch() { return "aarch64"; }

const std::vector<Isa>& paths() {
  static const std::vector<Isa> all = {Isa::kScalar, Isa::kNeon};
  return all;
}

bool cpu_runs(Isa isa) { return isa == Isa::kScalar || isa == Isa::kNeon; }

}  // namespace opgate::isa_detail
