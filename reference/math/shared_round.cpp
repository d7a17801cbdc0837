// round_fast and ulp_fast are inline (shared_round.h): r = round(v / q) * q with
// q = 2^(max(e, emin) - mantissa bits), e = floor(log2 |v|): v / q and the product are exact
// (powers of two, far from double's range limits), the integer rounding is the mode's (ties to
// even, ties away, toward zero), and a result beyond the largest finite value is the overflow of
// the mode (inf to nearest, the largest finite toward zero).
#include "reference/math/shared_round.h"
