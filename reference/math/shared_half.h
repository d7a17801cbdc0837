// Exact fp16/bf16 -> float conversion at vector speed, for the emulators' fp32 data paths, with
// runtime ISA dispatch (the path of shared_simd.h's isa()): F16C on x86-64's AVX2 and AVX-512 paths,
// FCVTL on aarch64's NEON path, the table otherwise (scalar; SSE2 has no half conversion).
#pragma once

#include <cstdint>
#include <vector>

#include "core/isa.h"

namespace opgate::math {

// dst[i] = the exact float value of the fp16 (bf16 = false) or bf16 bit pattern src[i]; Inf/NaN
// patterns give the table's values (so NaN payloads do not depend on the path).
void halves_to_float(const uint16_t* src, int64_t count, bool bf16, float* dst);

// One path's conversion (a row of the dispatch table).
struct HalfKernels {
  void (*to_float)(const uint16_t* src, int64_t count, bool bf16, float* dst);
};

// The paths this build and CPU run the conversion on, scalar first (tests iterate them).
std::vector<Isa> half_isas();

// The vector paths' conversions, each defined in reference/math/<arch>/shared_half_<isa>.cpp (only
// the build architecture's exist).
namespace half_paths {
extern const HalfKernels avx2, neon;
}  // namespace half_paths

}  // namespace opgate::math
