// moe_ffn_lanes.h: the dispatch table over the ISA paths of the lanes (moe_ffn_lanes_vec.h,
// compiled per path in reference/moe_ffn/<arch>/moe_ffn_lanes_<isa>.cpp).
#include "reference/moe_ffn/moe_ffn_lanes.h"

#include "reference/math/shared_simd.h"
#include "reference/moe_ffn/moe_ffn_lanes_paths.h"

namespace opgate::ref::moe_ffn {
namespace {

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles).
const IsaRow<LaneKernels> kRows[] = {
#if OPGATE_ARCH_X86_64
    {Isa::kSse2, &lane_paths::sse2},
    {Isa::kAvx2, &lane_paths::avx2},
    {Isa::kAvx512, &lane_paths::avx512},
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &lane_paths::neon},
#endif
};

const LaneKernels& lanes() { return pick(kRows, math::isa()); }

}  // namespace

bool lanes_handle(Activation act) { return act == Activation::kFastGelu || act == Activation::kSilu; }

int64_t round_exact_f16(const double* h, const double* e_h, int64_t count, double* v, double* e) {
  return lanes().round_exact_f16(h, e_h, count, v, e);
}

int64_t activation_bounds(Activation act, const double* h, const double* e, int64_t count, Tracked* out) {
  return lanes().activation_bounds(act, h, e, count, out);
}

std::vector<Isa> lane_isas() { return table_isas(kRows); }

}  // namespace opgate::ref::moe_ffn
