// CPU emulation of the A2/A3 aclnnMoeFFN kernel (the FFN operator with expertTokens, spec
// attention-and-ffn.md §2.3 semantics, §2.7 device numerics per path), with a catalogue of named
// kernel defects the fault backend can inject.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/defect.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/math/shared_simd.h"
#include "reference/moe_ffn.h"

namespace opgate::emu::moe_ffn {

// Runs the kernel model on `in` (device dtypes, names as in ref::specs) and writes into the
// pre-allocated `out` tensor y; rows the (defective) kernel does not reach keep their contents.
// `defect` is "" (faithful) or a name from defects(); an unknown name is an internal error.
Status run(const ref::moe_ffn::Params& p, const TensorMap& in, TensorMap& out, const std::string& defect);

// The fp paths' cube accumulation (used by run, public for its tests): out[r * n + j] = bias[j]
// (bias null: 0) plus, for each 16-deep fractal of k in order, the sequential fp32 sum of
// a[r * kdim + k] * b[k * n + j] over the fractal (product rounded, then added), on the current
// ISA path (math::isa()). Every path gives the same bits: only the vector width and tile differ.
void gemm_f32(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n, const float* bias, float* out);

// The int8 path's cube accumulation (used by run, public for its tests): int32 sums that wrap mod
// 2^32 like the hardware. The right-hand matrix, kdim x n with element (k, j) at
// b[k * ld_k + j * ld_j], is packed once for the current ISA path (math::isa()) into column panels
// of the path's register tile width nr: element (k, j) at data[(j / nr * kdim + k) * nr + j % nr],
// columns past n zero.
struct PackedInts {
  math::Isa isa = math::Isa::kScalar;  // the row of the GEMM table it was packed for
  int64_t kdim = 0, n = 0, nr = 0;
  std::vector<uint32_t> data;
};
// Instantiated for T = int8_t (the weights) and int32_t.
template <class T>
PackedInts pack_ints(const T* b, int64_t kdim, int64_t n, int64_t ld_k, int64_t ld_j);

// out[r * b.n + j] = bias[j] + sum_k a[r * lda + k] * b(k, j) mod 2^32 for r < rows, j < b.n (bias
// null: 0), on the path b was packed for.
void gemm_i32(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b, const int32_t* bias, int32_t* out);

// The paths the GEMM table has rows for that this CPU runs (x86-64: sse2, avx2, avx512; aarch64:
// neon), narrowest first; the scalar setting runs the narrowest (tests iterate them).
std::vector<math::Isa> kernel_isas();

// The injectable defects, each named "mffn.<what>" with a one-line description.
std::vector<DefectInfo> defects();

}  // namespace opgate::emu::moe_ffn
