// A case decoded from raw bytes: the candidates of `opgate hunt` (harness/hunt.h), which mutates
// byte strings the way a coverage-guided fuzzer does. Every byte string decodes to some choice
// sequence (cases/chooser.h BytesChooser), so every mutation is a candidate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cases/generate.h"
#include "cases/registry.h"
#include "core/case.h"

namespace opgate {

// Layout: bytes 0-7 the fill seed (little-endian), byte 8 the fill mode (mod 3: exact, realistic,
// adversarial), byte 9 an extreme per-tensor fill (mod 8: 0 subnormal, 1 near_max, 2 signed_zero,
// else none; NaN and Inf are left to case files, where the spec says what they give), byte 10
// which float input gets it; the rest drives the operator's generator. Missing bytes read as 0.
// nullopt when the bytes give params the operator rejects, an invalid call, or more input
// elements than `size` allows. The id is "<short>.hunt.<dtype>.<n>", tagged "hunt".
std::optional<Case> case_from_bytes(const OpInfo& op, const std::vector<uint8_t>& bytes, SizeClass size, int64_t n);

}  // namespace opgate
