// Exact fp16/bf16 -> float conversion at vector speed (F16C on the AVX2 and AVX-512 paths of
// shared_simd.h's isa(), the table otherwise), for the emulators' fp32 data paths.
#pragma once

#include <cstdint>

namespace opgate::math {

// dst[i] = the exact float value of the fp16 (bf16 = false) or bf16 bit pattern src[i]; Inf/NaN
// patterns give the table's values (so NaN payloads do not depend on the path).
void halves_to_float(const uint16_t* src, int64_t count, bool bf16, float* dst);

}  // namespace opgate::math
