// halves_to_float: the table of core/dtype.h's exact values (scalar, and SSE2, which has no half
// conversion) and the dispatch table over the vector paths (reference/math/<arch>/
// shared_half_<isa>.cpp).
#include "reference/math/shared_half.h"

#include "reference/math/shared_simd.h"

namespace opgate::math {
namespace {

void halves_to_float_table(const uint16_t* src, int64_t count, bool bf16, float* dst) {
  const double* tab = exact_half_values(bf16);
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<float>(tab[src[i]]);
}

const HalfKernels kHalf_table = {halves_to_float_table};

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles).
const IsaRow<HalfKernels> kRows[] = {
    {Isa::kScalar, &kHalf_table},
#if OPGATE_ARCH_X86_64
    {Isa::kSse2, &kHalf_table},
    {Isa::kAvx2, &half_paths::avx2},
    {Isa::kAvx512, &half_paths::avx2},  // 8 halves widen into one ymm: AVX2's conversion is AVX-512's
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &half_paths::neon},
#endif
};

}  // namespace

void halves_to_float(const uint16_t* src, int64_t count, bool bf16, float* dst) {
  // Called per row of an emulator: the row of the current path is looked up again only when the
  // path changes.
  thread_local Isa path = Isa::kScalar;
  thread_local const HalfKernels* row = nullptr;
  const Isa now = isa();
  if (row == nullptr || now != path) {
    row = &pick(kRows, now);
    path = now;
  }
  row->to_float(src, count, bf16, dst);
}

std::vector<Isa> half_isas() { return table_isas(kRows); }

}  // namespace opgate::math
