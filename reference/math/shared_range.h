// Where the kernel's own fp32 precision can overflow on the way to a finite result (issue 22):
// the references declare such elements undefined (RefOutputs::beyond_range) instead of expecting a
// value that no fp16/fp32 kernel is bound to produce.
#pragma once

namespace opgate::math {

// A sum whose exact |terms| add up to less than half of FLT_MAX never overflows in fp32, in any
// order: each of the n < 2^23 roundings on the way (the products, the partial sums) grows a value
// by at most (1 + 2^-24), and (1 + 2^-24)^(2^23) = e^(1/2) < 2. At or above it some order may.
inline constexpr double kF32SafeMagnitude = 0x1.FFFFFEp127 / 2;

// |v| >= 2^128 - 2^103 rounds to Inf in fp32 (RNE): the midpoint above FLT_MAX.
inline constexpr double kF32OverflowAt = 0x1.FFFFFFp127;

}  // namespace opgate::math
