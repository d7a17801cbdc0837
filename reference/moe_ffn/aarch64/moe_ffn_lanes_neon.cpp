// moe_ffn_lanes.h on NEON, aarch64's baseline (no target attribute): pairs of doubles in q
// registers (moe_ffn_lanes_vec.h).
#define OPGATE_LANES_BYTES 16
#define OPGATE_LANES_TARGET
#include "reference/moe_ffn/moe_ffn_lanes_vec.h"

OPGATE_LANES_PATH(neon)
