// IncreFlashAttentionV3's name for the project's one parallel loop (math::parallel_for in
// shared_parallel.h), kept for its callers in the reference, emulator and fills.
#pragma once

#include <cstdint>
#include <functional>

#include "reference/math/shared_parallel.h"

namespace opgate::ifa_math {

inline void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int64_t min_per_thread = 1) {
  math::parallel_for(n, fn, min_per_thread);
}

}  // namespace opgate::ifa_math
