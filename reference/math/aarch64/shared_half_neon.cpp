// shared_half.h's conversion on NEON (aarch64's baseline, no target attribute): FCVTL for fp16, a
// shift for bf16 (halves_neon.h).
#include "reference/math/aarch64/halves_neon.h"
#include "reference/math/shared_half.h"

namespace opgate::math {

const HalfKernels half_paths::neon = {halves_to_float_fcvtl};

}  // namespace opgate::math
