// moe_ffn_lanes.h on AVX-512F: eight doubles per zmm register (moe_ffn_lanes_vec.h). Measured on
// Zen 5, 2 threads, the benchmark's MoeFFN (2048 x 1024 x 2816, fastgelu): the whole reference
// took 0.79x the time of the sse2 lanes, same bits.
#define OPGATE_LANES_BYTES 64
#define OPGATE_LANES_TARGET __attribute__((target("avx512f,avx2")))
#include "reference/moe_ffn/moe_ffn_lanes_vec.h"

OPGATE_LANES_PATH(avx512)
