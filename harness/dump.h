// The tensors of one case written as NumPy .npy files for a person to load (`repro --dump DIR`,
// `run --dump-failed`): inputs, expected, got, the per-element allowance and the care mask, with a
// README.txt saying how to load them. The folder appears whole or not at all.
#pragma once

#include <string>

#include "core/compare.h"
#include "core/reference_outputs.h"
#include "core/result.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate {

// What a case computed before it ended; later stages' maps stay empty (a case that ended before the
// device ran has no `got`).
struct CaseTensors {
  const TensorMap* inputs = nullptr;  // canonical inputs
  const RefOutputs* ref = nullptr;    // expected values, magnitudes, care masks
  const ComparePlan* plan = nullptr;  // how each output is compared (for the allowance); may be empty
  const TensorMap* got = nullptr;     // device outputs, unpacked to canonical layout
};

// Refuses, before anything runs or is written, a dump folder that could not be written: one whose
// nearest existing ancestor is not a writable folder, or one that exists and is neither empty nor a
// previous dump (which a new dump replaces).
Status check_dump_folder(const std::string& dir);
// Writes the case's tensors into `dir` (parents created): first into a sibling staging folder,
// renamed into place when complete, so an error leaves `dir` as it was.
Status dump_case_tensors(const std::string& dir, const CaseResult& r, const CaseTensors& t);

}  // namespace opgate
