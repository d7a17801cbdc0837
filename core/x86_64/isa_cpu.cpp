// x86-64's paths and what this CPU runs: SSE2 is the baseline; AVX2 also needs F16C (the half
// conversions of the avx2 kernels); AVX-512 means AVX-512F with AVX2 and F16C.
#include <cpuid.h>

#include "core/isa.h"

namespace opgate::isa_detail {
namespace {

// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

}  // namespace

const char* arch() { return "x86_64"; }

const std::vector<Isa>& paths() {
  static const std::vector<Isa> all = {Isa::kScalar, Isa::kSse2, Isa::kAvx2, Isa::kAvx512};
  return all;
}

bool cpu_runs(Isa isa) {
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && has_f16c();
  switch (isa) {
    case Isa::kScalar:
    case Isa::kSse2: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvx512: return avx2 && __builtin_cpu_supports("avx512f");
    case Isa::kNeon: return false;
  }
  return false;
}

}  // namespace opgate::isa_detail
