// The dispatch table of moe_ffn_lanes.h (internal to reference/moe_ffn and its tests): one kernel
// pair per ISA path, compiled in reference/moe_ffn/<arch>/moe_ffn_lanes_<isa>.cpp from the lane
// formulation (moe_ffn_lanes_vec.h) at the path's vector width.
#pragma once

#include <cstdint>
#include <vector>

#include "core/isa.h"
#include "reference/moe_ffn/moe_ffn_bound.h"

namespace opgate::ref::moe_ffn {

// round_exact_f16 and activation_bounds of moe_ffn_lanes.h, on one path.
struct LaneKernels {
  int64_t (*round_exact_f16)(const double* h, const double* e_h, int64_t count, double* v, double* e);
  int64_t (*activation_bounds)(Activation act, const double* h, const double* e, int64_t count, Tracked* out);
};

// The paths this build and CPU run the lanes on, narrowest first (tests iterate them). The
// narrowest is a vector one (sse2, neon), which also serves "scalar".
std::vector<Isa> lane_isas();

// The vector paths' tables (only the build architecture's exist).
namespace lane_paths {
extern const LaneKernels sse2, avx2, avx512, neon;
}  // namespace lane_paths

}  // namespace opgate::ref::moe_ffn
