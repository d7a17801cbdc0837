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
#include "reference/moe_ffn.h"

namespace opgate::emu::moe_ffn {

// Runs the kernel model on `in` (device dtypes, names as in ref::specs) and writes into the
// pre-allocated `out` tensor y; rows the (defective) kernel does not reach keep their contents.
// `defect` is "" (faithful) or a name from defects(); an unknown name is an internal error.
Status run(const ref::moe_ffn::Params& p, const TensorMap& in, TensorMap& out, const std::string& defect);

// The int8 path's cube accumulation (exposed for its tests): out[r * n + j] = bias[j] +
// sum_k a[r * kdim + k] * b[k * n + j] for r < rows, j < n (bias null: 0), in int32 sums that wrap
// mod 2^32 like the hardware; on the current ISA path (math::isa()), rows split into the
// emulator's row blocks over the project's threads.
void matmul_i32(const int32_t* a, int64_t rows, int64_t kdim, const int32_t* b, int64_t n, const int32_t* bias,
                int32_t* out);

// The injectable defects, each named "mffn.<what>" with a one-line description.
std::vector<DefectInfo> defects();

}  // namespace opgate::emu::moe_ffn
