// moe_ffn_lanes.h on AVX2: four doubles per ymm register (moe_ffn_lanes_vec.h).
#define OPGATE_LANES_BYTES 32
#define OPGATE_LANES_TARGET __attribute__((target("avx2")))
#include "reference/moe_ffn/moe_ffn_lanes_vec.h"

OPGATE_LANES_PATH(avx2)
