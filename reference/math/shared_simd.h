// Vectorised double kernels of the references with runtime ISA dispatch (core/isa.h).
// Bit-reproducibility: every kernel vectorises across independent sums (output columns, lanes of a
// fixed-lane dot product, slots), never inside one sum, and every library is compiled with
// -ffp-contract=off (no FMA). So every output element is the same sequence of rounded double
// operations on the scalar path and on every vector path (x86-64: SSE2, AVX2, AVX-512; aarch64:
// NEON); tests/reference/shared_simd_test.cpp compares the paths bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/isa.h"

namespace opgate::math {

using opgate::Isa;
using opgate::isa_name;
// Whether this CPU runs the path (scalar always; x86-64: SSE2 always, AVX2 also needs F16C;
// aarch64: NEON always).
using opgate::isa_supported;
// The path the kernels use: the last set_isa, else OPGATE_ISA (scalar, sse2, avx2, avx512, neon)
// when set to a supported path, else the widest supported one.
Isa isa();
// Selects the path (tests, benchmarks); an unsupported path falls back to the widest supported.
void set_isa(Isa isa);

struct Kernels {
  // dot[h] = sum_i x_h[i] * y[i] and mag[h] = sum_i |x_h[i] * y[i]| for `heads` rows x_h = x + h*n,
  // each in a fixed order: 8 interleaved lanes (element i goes to lane i % 8, in order of i), then
  // the tree ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
  void (*dot8_abs)(const double* x, int64_t heads, const double* y, int64_t n, double* dot, double* mag);
  // acc[i] = acc[i] + a * x[i] (the product rounded, then the sum) for i in [0, n).
  void (*scaled_add)(double* acc, double a, const double* x, int64_t n);
  // For i in [0, n), with m_i = abs_x ? abs_x[i] : |x[i]|:
  //   dev[i] += wd * |x[i] - c[i]|;  wsum[i] += w * m_i;  tail[i] += f * m_i.
  void (*deviation_add)(double* dev, double* wsum, double* tail, const double* x, const double* c,
                        const double* abs_x, double wd, double w, double f, int64_t n);
  // For 8 slots s, with columns stored interleaved (element j of slot s at [j * 8 + s]):
  //   t = (x[j,s] + b[j,s]) * g[j];  sum[s] += t;  mag[s] += |t|   for j = 0 .. n-1 in order.
  void (*slot8_dot)(const double* x, const double* b, const double* g, int64_t n, double* sum, double* mag);
  // out[r * ldo + j] = s + sum_k a[r * lda + k] * panel[k * 8 + j] for r < rows, j < 8, with s = 0,
  // or s = out[r * ldo + j] when `accumulate` (a product split over blocks of k continues the same
  // sum): each element one sum in increasing k (product rounded, then added). `panel` holds 8
  // columns of the right-hand matrix packed row by row (pad unused columns with zeros).
  void (*gemm_panel8)(const double* a, int64_t rows, int64_t lda, int64_t kdim, const double* panel, double* out,
                      int64_t ldo, bool accumulate);
  // dst[i] = the exact double value of the fp16 (bf16 = false) or bf16 bit pattern src[i].
  void (*halves_to_double)(const uint16_t* src, int64_t count, bool bf16, double* dst);
};

// The kernels of a path (an unsupported path gives the widest supported one's).
const Kernels& kernels(Isa isa);
inline const Kernels& kernels() { return kernels(isa()); }
// The paths this build and CPU run these kernels on, scalar first (tests iterate them).
std::vector<Isa> kernel_isas();

// The vector paths' tables, each defined in reference/math/<arch>/shared_simd_<isa>.cpp (only the
// build architecture's exist).
namespace simd_paths {
extern const Kernels sse2, avx2, avx512, neon;
}  // namespace simd_paths

// The exact double value of each of the 65536 fp16 (bf16 = false) or bf16 bit patterns: a table
// built once, indexed by the bits.
const double* exact_half_values(bool bf16);

}  // namespace opgate::math
