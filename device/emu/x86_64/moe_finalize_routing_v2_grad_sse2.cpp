// The block sums of moe_finalize_routing_v2_grad_kernels.h in SSE2, x86-64's baseline (no target
// attribute); SSE2 has no fp16 conversion, so this row has no vector stores.
#include <immintrin.h>

#include "device/emu/moe_finalize_routing_v2_grad_kernels.h"

namespace opgate::emu::moe_finalize_routing_v2_grad {

// Each block's tree in two shuffled adds and one scalar add: the same operands in the same order
// as the scalar tree, so the same bits.
float paths::add_full_blocks_sse2(float acc, const float* v, int64_t n) {
  for (int64_t o = 0; o + kBlock <= n; o += kBlock) {
    const __m128 lo = _mm_loadu_ps(v + o);
    const __m128 hi = _mm_loadu_ps(v + o + 4);
    // (l0 + l1, l2 + l3, l4 + l5, l6 + l7), then (s01 + s23, s45 + s67), then their sum.
    const __m128 pairs = _mm_add_ps(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m128 quads = _mm_add_ps(_mm_shuffle_ps(pairs, pairs, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm_shuffle_ps(pairs, pairs, _MM_SHUFFLE(3, 1, 3, 1)));
    acc += _mm_cvtss_f32(_mm_add_ss(quads, _mm_shuffle_ps(quads, quads, _MM_SHUFFLE(1, 1, 1, 1))));
  }
  return acc;
}

const Kernels paths::sse2 = {nullptr, nullptr, paths::add_full_blocks_sse2};

}  // namespace opgate::emu::moe_finalize_routing_v2_grad
