// shared_half.h's conversion on AVX2 with F16C (also the AVX-512 path's row): halves_f16c.h.
#include "reference/math/shared_half.h"
#include "reference/math/x86_64/halves_f16c.h"

namespace opgate::math {

const HalfKernels half_paths::avx2 = {halves_to_float_f16c};

}  // namespace opgate::math
