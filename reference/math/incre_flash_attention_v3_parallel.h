// Parallel loops over independent outputs for the IncreFlashAttentionV3 reference, emulator and
// fills (DESIGN.md §8): every index is computed by exactly the same code whichever thread runs it,
// so results never depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace opgate::ifa_math {

// Calls fn(i) once for every i in [0, n), spread over up to hardware_concurrency threads (fewer
// when n is small or `min_per_thread` indices would not fill a thread). fn must only write to
// outputs owned by index i.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int64_t min_per_thread = 1);

}  // namespace opgate::ifa_math
