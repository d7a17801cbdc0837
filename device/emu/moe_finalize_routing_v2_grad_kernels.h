// The MoeFinalizeRoutingV2Grad emulator's vector kernels, one table row per ISA path
// (device/emu/<arch>/moe_finalize_routing_v2_grad_<isa>.cpp; moe_finalize_routing_v2_grad.cpp
// holds the scalar row and dispatches): the fp16 / bf16 stores and the block sums of the gradScales
// reduction. Every row gives the bits of the scalar formulation (detail::f16_bits, bf16_bits and
// the BlockReduceSum tree), checked by the emulator's tests on every path.
#pragma once

#include <cstdint>

namespace opgate::emu::moe_finalize_routing_v2_grad {

// fp32 elements per 32-byte block, the unit of BlockReduceSum.
constexpr int64_t kBlock = 8;

struct Kernels {
  // Stores dst[j] = detail::f16_bits(v[j]) / bf16_bits(v[j]) for a prefix of [0, n) and returns
  // its length (the caller converts the rest with the scalar function); null on a path without
  // vector stores.
  int64_t (*floats_to_f16)(const float* v, int64_t n, uint16_t* dst);
  int64_t (*floats_to_bf16)(const float* v, int64_t n, uint16_t* dst);
  // acc plus the BlockReduceSum of each whole block of v[0, n - n % kBlock), in order: each block's
  // tree ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), then its add to acc. Returns the sum.
  float (*add_full_blocks)(float acc, const float* v, int64_t n);
};

// The vector paths' rows, each defined in its ISA file (only the build architecture's exist).
namespace paths {
extern const Kernels sse2, avx2, neon;
#if OPGATE_ARCH_X86_64
// The SSE2 block sums (x86_64/..._sse2.cpp), which the AVX2 row shares.
float add_full_blocks_sse2(float acc, const float* v, int64_t n);
#endif
}  // namespace paths

}  // namespace opgate::emu::moe_finalize_routing_v2_grad
