// CPU emulation of the A2/A3 aclnnMoeFinalizeRoutingV2Grad kernel (routing-ops.md §3.2, numerics
// §3.3), with a catalogue of named kernel defects the fault backend can inject.
#pragma once

#include <string>
#include <vector>

#include "core/defect.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/math/shared_simd.h"
#include "reference/moe_finalize_routing_v2_grad.h"

namespace opgate::emu::moe_finalize_routing_v2_grad {

// Runs the kernel model on `in` (device dtypes, names as in ref::specs) and writes into the
// pre-allocated `out` tensors gradExpandedXOut and gradScalesOut; elements the kernel does not
// write keep their contents. `defect` is "" (faithful) or a name from defects(); an unknown name is
// an internal error. Expert ids the kernel would read out of bounds give kInvalidCase.
Status run(const ref::moe_finalize_routing_v2_grad::Params& p, const TensorMap& in, TensorMap& out,
           const std::string& defect);

// The injectable defects, each named "mfrg.<what>" with a one-line description.
std::vector<DefectInfo> defects();

// The emulator's fp32 -> fp16/bf16 stores (CAST_RINT), declared for their tests. Each equals
// core/dtype.h's f16_from_double / bf16_from_double of the float for every float (NaN: sign and top
// payload bits, quiet).
namespace detail {
uint16_t f16_bits(float v);
uint16_t bf16_bits(float v);
// dst[j] = f16_bits(v[j]) / bf16_bits(v[j]) for j < n: vector stores on the paths of math::isa()
// that have them (F16C / AVX2 on avx2 and avx512, NEON on neon), else the scalar function.
void floats_to_f16(const float* v, int64_t n, uint16_t* dst);
void floats_to_bf16(const float* v, int64_t n, uint16_t* dst);
// Whether the current path (math::isa()) has vector stores.
bool vector_stores();
// The paths the emulator's kernel table has rows for that this CPU runs, scalar first.
std::vector<math::Isa> kernel_isas();
}  // namespace detail

}  // namespace opgate::emu::moe_finalize_routing_v2_grad
